--- flemma: an AI workspace for Neovim. `setup(opts)` validates and applies the configuration;
--- the filetype, the `:Flemma` command and the lazy host start exist even without it.
local locks = require("flemma.chat.locks")
local lazy = require("flemma.util.lazy")
local chat = lazy.require("flemma.chat")
local buffer = lazy.require("flemma.chat.buffer")
local guard = lazy.require("flemma.chat.guard")
local editing = lazy.require("flemma.chat.editing")
local lsp = lazy.require("flemma.chat.lsp")
local recovery = lazy.require("flemma.chat.recovery")
local commands = lazy.require("flemma.commands")
local complete = lazy.require("flemma.complete")
local completion_plugins = lazy.require("flemma.complete.plugins")
local config = lazy.require("flemma.config")
local trust = lazy.require("flemma.config.trust")
local frontmatter = lazy.require("flemma.frontmatter")
local hooks = lazy.require("flemma.hooks")
local host = lazy.require("flemma.host")
local log = lazy.require("flemma.host.log")
local editor_state = lazy.require("flemma.host.editor_state")
local rebuild = lazy.require("flemma.host.rebuild")
local integrations = lazy.require("flemma.integrations")
local personalities = lazy.require("flemma.personalities")
local secrets = lazy.require("flemma.secrets")
local statusline = lazy.require("flemma.statusline")
local tools = lazy.require("flemma.tools")
local approval = lazy.require("flemma.tools.approval")
local mcp = lazy.require("flemma.tools.mcp")
local preview = lazy.require("flemma.tools.preview")
local ui = lazy.require("flemma.ui")
local attention = lazy.require("flemma.ui.attention")
local start = lazy.require("flemma.chat.start")
local M = {}

local H = { bootstrapped = false }

--- Configure the plugin. Raises an error naming the offending key when an option is invalid.
---@param opts table|nil
function M.setup(opts)
  config.setup(opts)
  log.configure()
  M.bootstrap()
  tools.setup()
  preview.setup_highlights(config.get().highlights or {})
  statusline.define_highlight()
  ui.configure(config.get())
  editing.configure()
  integrations.apply()
end

--- The buffers set up as chats (FileType chat): only they have anything to forget when they go.
--- Any other buffer's wipe (a send's sink, a scratch view) is none of this module's business.
H.chats = {}

--- Whether `bufnr` is (still) a loaded chat buffer.
function H.still_chat(bufnr)
  return vim.api.nvim_buf_is_valid(bufnr) and vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].filetype == "chat"
end

--- Forget what is kept of a buffer that is gone (or no longer a chat), and tell the host.
function H.forget(bufnr)
  H.chats[bufnr] = nil
  buffer.forget(bufnr)
  chat.forget(bufnr)
  ui.detach(bufnr)
  frontmatter.forget(bufnr)
  trust.forget(bufnr)
  personalities.forget(bufnr)
  config.forget_chat(bufnr)
  if host.channel() then
    host.notify("buffer:detach", { bufnr = bufnr })
  end
end

--- Ask the host to follow a chat buffer (starting the host if needed).
function H.attach(bufnr)
  if vim.api.nvim_buf_is_valid(bufnr) and vim.bo[bufnr].filetype == "chat" then
    host.notify("buffer:attach", { bufnr = bufnr })
  end
end

--- Whether stat `a` is older than stat `b` (by modification time).
local function older(a, b)
  return a.mtime.sec < b.mtime.sec or (a.mtime.sec == b.mtime.sec and a.mtime.nsec < b.mtime.nsec)
end

--- `:help flemma` needs doc/tags, which a plain clone lacks: the build writes it, lazy.nvim and
--- other plugin managers run `:helptags`, Neovim's own packages do not. Made here when it is
--- missing or older than a help file and the directory is writable (otherwise :checkhealth says
--- what to run). Written in a directory of its own and renamed into place, so that two Neovims
--- starting at once never leave half a file.
function H.ensure_helptags()
  local source = debug.getinfo(1, "S").source:sub(2)
  local doc = vim.fs.joinpath(vim.fn.fnamemodify(source, ":p:h:h:h"), "doc")
  local tags = vim.uv.fs_stat(vim.fs.joinpath(doc, "tags"))
  local files, stale = {}, tags == nil
  for name, kind in vim.fs.dir(doc) do
    if kind == "file" and name:match("%.txt$") then
      files[#files + 1] = name
      local stat = vim.uv.fs_stat(vim.fs.joinpath(doc, name))
      stale = stale or (stat ~= nil and older(tags, stat))
    end
  end
  if #files == 0 or not stale then
    return
  end
  local dir = vim.uv.fs_mkdtemp(vim.fs.joinpath(doc, ".tags-XXXXXX"))
  if not dir then
    return
  end
  local copied = true
  for _, name in ipairs(files) do
    copied = copied and vim.uv.fs_copyfile(vim.fs.joinpath(doc, name), vim.fs.joinpath(dir, name)) == true
  end
  if copied and pcall(vim.cmd.helptags, vim.fn.fnameescape(dir)) then
    vim.uv.fs_rename(vim.fs.joinpath(dir, "tags"), vim.fs.joinpath(doc, "tags"))
  end
  for name in vim.fs.dir(dir) do
    vim.uv.fs_unlink(vim.fs.joinpath(dir, name))
  end
  vim.uv.fs_rmdir(dir)
end

--- Filetype, commands and autocmds; run once from plugin/flemma.lua (and by setup).
function M.bootstrap()
  if H.bootstrapped then
    return
  end
  H.bootstrapped = true
  -- The plugin put together: what one module says happened, others act on.
  config.on_updated(function()
    hooks.emit("config:updated", {})
  end)
  -- The host holds each buffer's settings until told they went stale.
  config.on_changed(function()
    editor_state.stale()
  end)
  config.on_chat_changed(function(bufnr)
    editor_state.stale(bufnr)
  end)
  locks.subscribe({
    locked = function(bufnr)
      guard.arm(bufnr)
    end,
    released = function(bufnr)
      guard.disarm(bufnr)
    end,
  })
  pcall(H.ensure_helptags)
  vim.filetype.add({ extension = { chat = "chat" } })
  commands.setup()
  tools.bootstrap()
  mcp.bootstrap()
  approval.bootstrap()
  statusline.bootstrap()
  integrations.bootstrap()
  secrets.bootstrap()
  trust.bootstrap()
  rebuild.bootstrap()
  editing.bootstrap()
  attention.bootstrap()
  recovery.bootstrap()
  local group = vim.api.nvim_create_augroup("flemma", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = "chat",
    desc = "Flemma: set up a chat buffer and let the host follow it",
    callback = function(ev)
      H.chats[ev.buf] = true
      -- The prompt of an empty chat first, so that the buffer is drawn with it.
      editing.setup_buffer(ev.buf)
      trust.setup_buffer(ev.buf)
      chat.setup_buffer(ev.buf)
      lsp.setup_buffer(ev.buf)
      complete.setup_buffer(ev.buf)
      completion_plugins.register()
      -- Deferred: starting a process is not something to do inside the FileType event itself.
      vim.schedule(function()
        H.attach(ev.buf)
      end)
    end,
  })
  vim.api.nvim_create_autocmd("BufEnter", {
    group = group,
    desc = "Flemma: the chat focused last is the one :Flemma add and :Flemma toggle use",
    callback = function(ev)
      if vim.bo[ev.buf].filetype == "chat" then
        start.focused(ev.buf)
      end
    end,
  })
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    desc = "Flemma: forget per-buffer state",
    callback = function(ev)
      if not H.chats[ev.buf] then
        return
      end
      -- `:w name` in a buffer without a name sends BufWipeout for that buffer, which stays (now
      -- named, still a chat): look once the command is over, and forget only a buffer that is
      -- gone or is no longer a chat (an empty one `:enew` took over).
      vim.schedule(function()
        if not H.still_chat(ev.buf) then
          H.forget(ev.buf)
        end
      end)
    end,
  })
  vim.api.nvim_create_autocmd("BufDelete", {
    group = group,
    desc = "Flemma: a chat's own :Flemma switch goes with its buffer (kept across :e)",
    callback = function(ev)
      config.forget_chat(ev.buf)
    end,
  })
  vim.api.nvim_create_autocmd("BufWritePost", {
    group = group,
    desc = "Flemma: a chat written here keeps (or gets) its trust",
    callback = function(ev)
      if vim.bo[ev.buf].filetype == "chat" then
        trust.on_write(ev.buf, ev.match)
      end
      trust.on_any_write(ev.buf)
    end,
  })
  vim.api.nvim_create_autocmd({ "BufReadPost", "FileChangedShellPost" }, {
    group = group,
    desc = "Flemma: a chat read from disk has its trust judged again",
    callback = function(ev)
      trust.on_read(ev.buf)
    end,
  })
  -- A restarted host knows no buffer: hand it every chat buffer again.
  hooks.on("host:started", function()
    vim.schedule(function()
      for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
        if vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].filetype == "chat" then
          H.attach(bufnr)
        end
      end
    end)
  end)
  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = group,
    desc = "Flemma: stop the host quietly",
    callback = function()
      host.stop()
    end,
  })
end

return M
