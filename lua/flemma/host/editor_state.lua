--- flemma.host.editor_state: what the host keeps of each chat buffer's editor side, pushed rather than
--- asked for (docs/architecture.md, "The message budget"). The host holds a buffer's settings
--- (configuration with the frontmatter applied, trust, the editor's facts, the provider
--- environment) from Lua's last `editor.context` answer; this module tells it when they went
--- stale, and brings the environment and the facts as they are with each action of the user.
local lazy = require("flemma.util.lazy")
local host = lazy.require("flemma.host")
local sandbox = lazy.require("flemma.sandbox")
local M = {}

local H = {
  --- The environment variables the host reads (from its last `editor.context` question).
  names = {},
  autocmds = false,
}

--- The host is running: tell it (a notification; nothing is started for it).
local function push(params)
  if host.channel() then
    host.notify("editor:state", params)
  end
end

--- Something the host's settings of `bufnr` hold changed (every buffer's, without `bufnr`): the
--- configuration's generation, a trust decision, the working directory, the buffer's name.
function M.stale(bufnr)
  push({ bufnr = bufnr, stale = true })
end

--- The non-blank values of the variables the host reads (`:let $X = …` cannot be observed, so
--- every action of the user brings them along).
function M.env()
  local env = {}
  for _, name in ipairs(H.names) do
    local value = vim.env[name]
    if type(value) == "string" and vim.trim(value) ~= "" then
      env[name] = value
    end
  end
  return env
end

--- What a user's action (`chat:cycle`, `chat:send`) carries: `{env, facts}` as they are now.
function M.snapshot(bufnr)
  return { env = M.env(), facts = M.facts({ bufnr = bufnr }) }
end

--- The host asked `editor.context`: remember the names it reads, and follow what it cannot see.
function M.asked(names)
  if type(names) == "table" then
    H.names = names
  end
  if H.autocmds then
    return
  end
  H.autocmds = true
  local group = vim.api.nvim_create_augroup("flemma.host.editor_state", { clear = true })
  vim.api.nvim_create_autocmd("DirChanged", {
    group = group,
    callback = function()
      M.stale()
    end,
  })
  vim.api.nvim_create_autocmd("BufFilePost", {
    group = group,
    callback = function(ev)
      if vim.bo[ev.buf].filetype == "chat" then
        M.stale(ev.buf)
      end
    end,
  })
end

--- Host → Lua: facts of the editor a tool call needs.
function M.facts(params)
  local bufnr = params.bufnr
  local name = vim.api.nvim_buf_is_valid(bufnr) and vim.api.nvim_buf_get_name(bufnr) or ""
  local override = sandbox.override()
  return {
    cwd = vim.fn.getcwd(),
    filename = name ~= "" and vim.fn.fnamemodify(name, ":p") or vim.NIL,
    sandbox_override = override == nil and vim.NIL or override,
    -- Sensitive places: what runs when Neovim starts, and its servers (docs/approval.md).
    editor_dirs = {
      config = vim.fn.stdpath("config"),
      data = vim.fn.stdpath("data"),
      state = vim.fn.stdpath("state"),
      cache = vim.fn.stdpath("cache"),
    },
    servers = vim.fn.serverlist(),
  }
end

return M
