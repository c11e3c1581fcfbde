--- flemma.editing: how a chat buffer edits (`editing.*`, read from `setup()`): the first
--- `@You:` of an empty chat (`auto_prompt`), no hard wrapping (`disable_textwidth`), a short
--- 'updatetime' while a chat has focus (`manage_updatetime`), and the write the host asks for
--- after a reply or a batch of tools (`auto_write`, decided by the host from the buffer's own
--- configuration). The window options (`editing.conceal`) are flemma.ui.window's. See docs/ui.md.
local lazy = require("flemma.util.lazy")
local buffer = lazy.require("flemma.chat.buffer")
local config = lazy.require("flemma.config")
local log = lazy.require("flemma.host.log")
local notify = lazy.require("flemma.notify")
local M = {}

--- The 'updatetime' while a chat has focus (ms): CursorHold and the swap file come quickly.
local FAST_UPDATETIME = 100

local H = {
  --- The user's 'updatetime' while Flemma's is in effect, else nil.
  saved_updatetime = nil,
  --- Chat buffers that have focus (at most one; a set so that leaving and entering in either
  --- order keeps the count right).
  focused = {}, ---@type table<integer, true>
  --- Buffers whose last automatic write failed (the message is shown once until one succeeds).
  write_failed = {}, ---@type table<integer, true>
  --- Chat buffers whose 'textwidth' Flemma set to 0.
  textwidth = {}, ---@type table<integer, true>
  --- Buffers being written (with autocmds): their changedtick at BufWritePre.
  writing = {}, ---@type table<integer, integer>
}

local function editing()
  local ok, cfg = pcall(function()
    return config.get().editing
  end)
  return ok and type(cfg) == "table" and cfg or {}
end

--- An empty (or blank) chat starts with `@You:` and an empty line, the cursor on it. The prompt is
--- not a change of the user's: no undo step, and the buffer stays as modified as it was (so a new
--- chat opened by mistake quits without a question).
local function auto_prompt(bufnr)
  if vim.bo[bufnr].buftype ~= "" or not vim.bo[bufnr].modifiable then
    return
  end
  -- A few lines at a time: a long chat is not read whole to find its first word.
  local count = vim.api.nvim_buf_line_count(bufnr)
  for from = 0, count - 1, 64 do
    for _, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, from, math.min(from + 64, count), false)) do
      if line:find("%S") then
        return
      end
    end
  end
  local modified = vim.bo[bufnr].modified
  local undolevels = vim.bo[bufnr].undolevels
  vim.bo[bufnr].undolevels = -1
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, { "@You:", "" })
  vim.bo[bufnr].undolevels = undolevels
  vim.bo[bufnr].modified = modified
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    vim.api.nvim_win_set_cursor(win, { 2, 0 })
  end
end

--- Put the user's 'updatetime' back once no chat has focus (unless they changed it meanwhile).
local function settle_updatetime()
  if next(H.focused) ~= nil or H.saved_updatetime == nil then
    return
  end
  if vim.o.updatetime == FAST_UPDATETIME then
    vim.o.updatetime = H.saved_updatetime
  end
  H.saved_updatetime = nil
end

local function focus(bufnr)
  if editing().manage_updatetime == false then
    return
  end
  H.focused[bufnr] = true
  if H.saved_updatetime == nil then
    H.saved_updatetime = vim.o.updatetime
  end
  vim.o.updatetime = FAST_UPDATETIME
end

local function unfocus(bufnr)
  if H.focused[bufnr] then
    H.focused[bufnr] = nil
    -- Later: when the next buffer is a chat too, it has taken focus by then.
    vim.schedule(settle_updatetime)
  end
end

--- A buffer became a chat (FileType): its prompt, its 'textwidth', and 'updatetime' when it is
--- the current buffer.
function M.setup_buffer(bufnr)
  local cfg = editing()
  if cfg.auto_prompt ~= false then
    auto_prompt(bufnr)
  end
  if cfg.disable_textwidth ~= false then
    vim.bo[bufnr].textwidth = 0
    H.textwidth[bufnr] = true
  end
  if bufnr == vim.api.nvim_get_current_buf() then
    focus(bufnr)
  end
end

--- After `setup()`: open chats follow `disable_textwidth`, and 'updatetime' `manage_updatetime`.
function M.configure()
  local disable = editing().disable_textwidth ~= false
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].filetype == "chat" then
      if disable then
        vim.bo[bufnr].textwidth = 0
        H.textwidth[bufnr] = true
      elseif H.textwidth[bufnr] then
        -- Back to the user's global value.
        vim.bo[bufnr].textwidth = vim.go.textwidth
        H.textwidth[bufnr] = nil
      end
    end
  end
  if editing().manage_updatetime == false then
    H.focused = {}
    settle_updatetime()
  elseif vim.bo.filetype == "chat" then
    focus(vim.api.nvim_get_current_buf())
  end
end

--- The autocmds that follow focus (run once, from `bootstrap()`).
function M.bootstrap()
  local group = vim.api.nvim_create_augroup("flemma.editing", { clear = true })
  vim.api.nvim_create_autocmd("BufEnter", {
    group = group,
    desc = "Flemma: a short 'updatetime' while a chat has focus",
    callback = function(ev)
      if vim.bo[ev.buf].filetype == "chat" then
        focus(ev.buf)
      end
    end,
  })
  vim.api.nvim_create_autocmd({ "BufLeave", "BufUnload" }, {
    group = group,
    desc = "Flemma: the user's 'updatetime' back when no chat has focus",
    callback = function(ev)
      unfocus(ev.buf)
    end,
  })
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    desc = "Flemma: forget a wiped chat's automatic writes",
    callback = function(ev)
      unfocus(ev.buf)
      H.write_failed[ev.buf] = nil
      H.textwidth[ev.buf] = nil
      H.writing[ev.buf] = nil
    end,
  })
  -- A write counts in b:changedtick; flemma.buffer must know it was one (a reply that streams
  -- stays one undo step through `auto_write` and `:w`).
  vim.api.nvim_create_autocmd("BufWritePre", {
    group = group,
    desc = "Flemma: a write while a reply streams keeps the reply one undo step",
    callback = function(ev)
      H.writing[ev.buf] = vim.api.nvim_buf_get_changedtick(ev.buf)
    end,
  })
  vim.api.nvim_create_autocmd("BufWritePost", {
    group = group,
    desc = "Flemma: a write while a reply streams keeps the reply one undo step",
    callback = function(ev)
      local before = H.writing[ev.buf]
      H.writing[ev.buf] = nil
      if before then
        buffer.wrote(ev.buf, before)
      end
    end,
  })
end

local RETRY_LATER = { "E565", "E523", "textlock" }

--- Host → Lua (`buffer.write`): `editing.auto_write` is on for this buffer and a reply or a batch
--- of tool results is in it. Written (`:write!`, the buffer is what counts) when it has a file
--- name, is a normal buffer and is modified; answers `{ written }`.
function M.write(params)
  local bufnr = params.bufnr
  if not vim.api.nvim_buf_is_loaded(bufnr) then
    return { written = false }
  end
  if vim.bo[bufnr].buftype ~= "" or not vim.bo[bufnr].modified or vim.api.nvim_buf_get_name(bufnr) == "" then
    return { written = false }
  end
  if params.streaming then
    -- A reply still streams (`context.recovery`): no autocmds (a format-on-save would edit the
    -- reply under the stream) and no 'fsync' (the host's synced recovery record covers a crash of
    -- the machine); a refusal waits for the next second's write.
    -- Without BufWritePost, flemma.buffer hears of the write here (the reply stays one undo
    -- step).
    local fsync = vim.o.fsync
    vim.o.fsync = false
    local tick = vim.api.nvim_buf_get_changedtick(bufnr)
    local ok = pcall(vim.api.nvim_buf_call, bufnr, function()
      vim.cmd("silent noautocmd write!")
    end)
    vim.o.fsync = fsync
    buffer.wrote(bufnr, tick)
    return { written = ok }
  end
  local ok, err = pcall(vim.api.nvim_buf_call, bufnr, function()
    vim.cmd("silent write!")
  end)
  if ok then
    H.write_failed[bufnr] = nil
    return { written = true }
  end
  local message = tostring(err)
  for _, pattern in ipairs(RETRY_LATER) do
    if message:find(pattern, 1, true) and not params.retried then
      -- Not now (an expression mapping or a completion menu is running): on the next tick.
      vim.schedule(function()
        M.write({ bufnr = bufnr, retried = true })
      end)
      return { written = false, later = true }
    end
  end
  message = message:gsub("^Vim:", "")
  log.write("warn", string.format("auto_write of buffer %d failed: %s", bufnr, message))
  if not H.write_failed[bufnr] then
    H.write_failed[bufnr] = true
    local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ":~:.")
    notify.warn(string.format("auto_write: %s not written: %s", name, message))
  end
  return { written = false, error = message }
end

return M
