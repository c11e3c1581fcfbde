--- flemma.ui.window: the options of a window while it shows a chat — 'conceallevel' and
--- 'concealcursor' from `editing.conceal`, and the turn gutter's 'statuscolumn' (`turns.enabled`,
--- flemma.ui.turns).
---
--- They are set like `:setlocal`: the window's own (global) values stay as they were, so another
--- buffer shown in the same window, or a window split off to edit another file, has the user's
--- settings; and Neovim itself brings the chat's values back when the chat is shown again, with
--- any change the user made meanwhile (`:setlocal conceallevel=0`). Each window gets them once per
--- chat buffer; `setup()` sets them again in every chat window.
local turns = require("flemma.ui.turns")

local M = {}

local H = {
  conceal = { level = 2, cursor = "nv" }, ---@type { level: integer, cursor: string }|nil
  gutter = true,
  applied = {}, ---@type table<integer, table<integer, { conceal: boolean, gutter: boolean }>> window → buffer → what was set
}

--- `"2nv"` → level 2, cursor "nv"; false (or anything else) → nil: leave both alone.
local function parse_conceal(spec)
  if type(spec) ~= "string" then
    return nil
  end
  local level, cursor = spec:match("^(%d)(.*)$")
  if not level then
    return nil
  end
  return { level = tonumber(level), cursor = cursor }
end

--- Take the configuration (`editing.conceal`, `turns.enabled`).
function M.configure(cfg)
  local editing = cfg.editing or {}
  local spec = editing.conceal
  if spec == nil then
    spec = "2nv"
  end
  H.conceal = parse_conceal(spec)
  H.gutter = (cfg.turns or {}).enabled ~= false
end

local function set_local(win, name, value)
  vim.api.nvim_set_option_value(name, value, { scope = "local", win = win })
end

--- Back to the window's own value (`:setlocal {option}<`).
local function unset_local(win, names)
  vim.api.nvim_win_call(win, function()
    vim.cmd("setlocal " .. table.concat(names, "< ") .. "<")
  end)
end

--- Set the chat options of `win`, which shows chat buffer `bufnr`. Once per window and buffer,
--- unless `again` (after `setup()`): then what the configuration no longer asks for is undone.
function M.apply(win, bufnr, again)
  local per_win = H.applied[win]
  if per_win == nil then
    per_win = {}
    H.applied[win] = per_win
  end
  local before = per_win[bufnr]
  if before and not again then
    return
  end
  local now = { conceal = false, gutter = false }
  if H.conceal then
    set_local(win, "conceallevel", H.conceal.level)
    set_local(win, "concealcursor", H.conceal.cursor)
    now.conceal = true
  elseif before and before.conceal then
    unset_local(win, { "conceallevel", "concealcursor" })
  end
  if H.gutter then
    set_local(win, "statuscolumn", turns.EXPR)
    now.gutter = true
  elseif before and before.gutter and vim.wo[win].statuscolumn == turns.EXPR then
    unset_local(win, { "statuscolumn" })
  end
  per_win[bufnr] = now
end

--- `keymaps.normal.conceal_toggle`: the current window's 'conceallevel' between 0 and the level
--- `editing.conceal` sets (2 when it sets none), window-locally like the rest. Returns the new level.
function M.toggle_conceal(win)
  local level = vim.wo[win].conceallevel > 0 and 0 or (H.conceal and H.conceal.level or 2)
  set_local(win, "conceallevel", level)
  return level
end

--- Every window showing `bufnr`.
function M.apply_all(bufnr, again)
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    M.apply(win, bufnr, again)
  end
end

--- A window was closed.
function M.forget_window(win)
  H.applied[win] = nil
end

--- A buffer was wiped.
function M.forget_buffer(bufnr)
  for _, per_win in pairs(H.applied) do
    per_win[bufnr] = nil
  end
end

return M
