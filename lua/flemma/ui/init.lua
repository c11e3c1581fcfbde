--- flemma.ui: how a chat buffer looks — highlighting, folds, rulers and line backgrounds.
---
--- Each chat buffer's shape comes from a line scan in Lua (flemma.ui.scan), done when the buffer
--- is set up and again after each change, from the message the change starts in. Highlights
--- are drawn by a decoration provider for the rows on screen; folds are manual folds made once
--- a block is complete (flemma.ui.fold); the turn gutter is a 'statuscolumn' read from the same
--- scan (flemma.ui.turns), set with the conceal options on each window showing a chat
--- (flemma.ui.window). None of it talks to the host. See docs/ui.md.
local scan = require("flemma.ui.scan")
local highlight = require("flemma.ui.highlight")
local fold = require("flemma.ui.fold")
local turns = require("flemma.ui.turns")
local window = require("flemma.ui.window")
local lazy = require("flemma.util.lazy")
local flemma_config = lazy.require("flemma.config")
local log = lazy.require("flemma.host.log")
local slash = lazy.require("flemma.slash")
local locks = require("flemma.chat.locks")

local M = {}

local H = {
  buffers = {}, ---@type table<integer, { structure: table, dirty: integer|nil, scheduled: boolean }>
  cfg = nil,
  provider = false,
  ruler = { enabled = true, char = "─" },
  line_hl = true,
}

local function config()
  if H.cfg == nil then
    local ok, cfg = pcall(function()
      return flemma_config.get()
    end)
    M.configure(ok and cfg or {})
  end
  return H.cfg
end

--- Take (new) configuration: highlight groups, fold defaults, rulers, line backgrounds, the turn
--- gutter and the chat windows' options (set again in every chat window).
function M.configure(cfg)
  H.cfg = cfg or {}
  highlight.setup(H.cfg)
  fold.setup(H.cfg)
  turns.configure(H.cfg)
  window.configure(H.cfg)
  local ruler = H.cfg.ruler or {}
  H.ruler = { enabled = ruler.enabled ~= false, char = type(ruler.char) == "string" and ruler.char or "─" }
  H.line_hl = (H.cfg.line_highlights or {}).enabled ~= false
  for bufnr in pairs(H.buffers) do
    if vim.api.nvim_buf_is_valid(bufnr) then
      window.apply_all(bufnr, true)
    end
  end
end

local function all_lines(bufnr, from)
  return vim.api.nvim_buf_get_lines(bufnr, from, -1, false)
end

--- Scan again if the buffer changed since the last scan.
local function refresh(bufnr, state)
  if state.dirty == nil then
    return state.structure
  end
  local first = state.dirty
  state.dirty = nil
  local line_count = vim.api.nvim_buf_line_count(bufnr)
  local first_line = vim.api.nvim_buf_get_lines(bufnr, 0, 1, false)[1] or ""
  state.structure = scan.rescan(state.structure, first, line_count, function(from)
    return all_lines(bufnr, from)
  end, first_line)
  return state.structure
end

--- The buffer's current structure (scanned again first when it changed), or nil.
function M.structure(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local state = H.buffers[bufnr]
  return state and refresh(bufnr, state) or nil
end

--- The structure of any buffer: the one kept for a drawn chat, else a scan of its lines now.
function M.read(bufnr)
  return M.structure(bufnr) or scan.scan(all_lines(bufnr, 0))
end

--- Bring the folds of every window showing the buffer in line with its structure.
local function sync_folds(bufnr)
  local state = H.buffers[bufnr]
  if not state or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local st = refresh(bufnr, state)
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    fold.sync(win, bufnr, st)
  end
end

local function schedule_sync(bufnr, state)
  if state.scheduled then
    return
  end
  state.scheduled = true
  vim.schedule(function()
    state.scheduled = false
    -- The rows one edit changed are drawn again by Neovim anyway (with several, who knows).
    local edited = state.edits == 1 and state.edited or nil
    state.edits, state.edited = 0, nil
    if H.buffers[bufnr] == state then
      sync_folds(bufnr)
      turns.refresh(bufnr, edited)
      slash.diagnose(bufnr, state.structure)
    end
  end)
end

local function on_win(_, win, bufnr, toprow, botrow)
  local state = H.buffers[bufnr]
  if not state then
    return false
  end
  local st = refresh(bufnr, state)
  local ctx = { structure = st, line_hl = H.line_hl }
  if H.ruler.enabled then
    local info = vim.fn.getwininfo(win)[1]
    ctx.ruler_width = vim.api.nvim_win_get_width(win) - (info and info.textoff or 0)
    ctx.ruler_char = H.ruler.char
  end
  -- One read for the rows on screen (folded rows are skipped by on_line).
  ctx.first = toprow
  ctx.lines = vim.api.nvim_buf_get_lines(bufnr, toprow, botrow + 1, false)
  state.ctx = ctx
  return true
end

local function on_line(_, _, bufnr, row)
  local state = H.buffers[bufnr]
  local ctx = state and state.ctx
  if not ctx then
    return
  end
  local line = ctx.lines[row - ctx.first + 1]
  if line == nil then
    line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1]
    if line == nil then
      return
    end
  end
  local ok, err = pcall(highlight.draw, bufnr, row, line, ctx)
  if not ok and not state.reported then
    state.reported = true
    vim.schedule(function()
      log.write("error", "drawing chat buffer " .. bufnr .. " failed: " .. tostring(err))
    end)
  end
end

local function ensure_provider()
  if H.provider then
    return
  end
  H.provider = true
  vim.api.nvim_set_decoration_provider(highlight.ns, { on_win = on_win, on_line = on_line })
  local group = vim.api.nvim_create_augroup("flemma.ui", { clear = true })
  vim.api.nvim_create_autocmd("ColorScheme", {
    group = group,
    desc = "Flemma: define the chat highlight groups again",
    callback = function()
      highlight.define()
    end,
  })
  vim.api.nvim_create_autocmd("BufWinEnter", {
    group = group,
    desc = "Flemma: folds, conceal and the turn gutter for a chat buffer shown in a window",
    callback = function(ev)
      if H.buffers[ev.buf] then
        window.apply_all(ev.buf)
        sync_folds(ev.buf)
      end
    end,
  })
  vim.api.nvim_create_autocmd("WinClosed", {
    group = group,
    desc = "Flemma: forget a closed window's folds and options",
    callback = function(ev)
      local win = tonumber(ev.match)
      fold.forget_window(win)
      window.forget_window(win)
    end,
  })
end

--- Start drawing a chat buffer: scan it, follow its changes, fold it in its windows.
function M.attach(bufnr)
  config()
  ensure_provider()
  local existing = H.buffers[bufnr]
  if existing then
    -- Set up again (`:e!` runs FileType again): a reload drops the window's folds.
    existing.dirty = 0
    fold.forget_buffer(bufnr)
    window.apply_all(bufnr)
    sync_folds(bufnr)
    return
  end
  -- Folds remembered from an earlier life of the buffer (before a reload) are gone.
  fold.forget_buffer(bufnr)
  local state = {
    structure = scan.scan(all_lines(bufnr, 0)),
    dirty = nil,
    scheduled = false,
  }
  H.buffers[bufnr] = state
  vim.api.nvim_buf_attach(bufnr, false, {
    on_lines = function(_, _, _, first, _, last_new)
      if H.buffers[bufnr] ~= state then
        return true
      end
      state.dirty = state.dirty and math.min(state.dirty, first) or first
      state.edits = (state.edits or 0) + 1
      state.edited = { first, last_new }
      schedule_sync(bufnr, state)
    end,
    on_reload = function()
      if H.buffers[bufnr] == state then
        -- A reload drops the folds of every window: make them again.
        state.dirty = 0
        fold.forget_buffer(bufnr)
        schedule_sync(bufnr, state)
      end
    end,
    on_detach = function()
      if H.buffers[bufnr] == state then
        H.buffers[bufnr] = nil
        turns.forget(bufnr)
      end
    end,
  })
  window.apply_all(bufnr)
  sync_folds(bufnr)
  slash.diagnose(bufnr, state.structure)
end

--- Stop drawing a buffer (wiped, or no longer a chat).
function M.detach(bufnr)
  H.buffers[bufnr] = nil
  fold.forget_buffer(bufnr)
  turns.forget(bufnr)
  window.forget_buffer(bufnr)
end

--- A request started or ended in a buffer (its lock changed; nil: every buffer): the turn
--- gutter shows a streaming turn differently.
function M.lock_changed(bufnr)
  vim.schedule(function()
    for buf in pairs(H.buffers) do
      if (bufnr == nil or buf == bufnr) and vim.api.nvim_buf_is_valid(buf) then
        turns.refresh(buf)
      end
    end
  end)
end

--- Toggle the fold of the message under the cursor.
--- Conceal on or off in the current window (`keymaps.normal.conceal_toggle`); the new level.
function M.toggle_conceal()
  return window.toggle_conceal(vim.api.nvim_get_current_win())
end

function M.toggle_fold()
  local bufnr = vim.api.nvim_get_current_buf()
  local st = M.structure(bufnr)
  if st then
    sync_folds(bufnr)
    fold.toggle_message(st)
  end
end

turns.read_structures(M.structure)
-- The turn gutter marks a turn whose reply streams: a lock taken or released redraws it.
locks.subscribe({ changed = M.lock_changed })

return M
