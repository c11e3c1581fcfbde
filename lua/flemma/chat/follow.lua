--- flemma.follow: windows that follow what the host writes at the end of a locked chat buffer (a
--- reply streaming in, tool results), like `tail -f`, and a hint in the windows that do not.
---
--- Before each batch of the host's edits, flemma.buffer asks every window showing the buffer how
--- it stands towards the end: its cursor on the last line ("cursor"), or the last line on screen
--- with the cursor elsewhere ("view"), or neither. After the batch a "cursor" window has its
--- cursor on the new last line, a "view" window is scrolled so that the last line stays on
--- screen while its cursor stays where it is (and stops following when the cursor would leave the
--- screen), and any other window whose view ends above the buffer's end shows a hint at its
--- bottom right ("↓ reply streaming below · G") until it shows the end again; once the writing
--- ends the hint says what is there ("↓ reply below · G").
--- Nothing here is remembered between batches: a window follows when it is at the end, so moving
--- away stops it and `G` starts it again. Costs one look per window per batch (one per frame at
--- most), and no RPC. See docs/ui.md, "Following the reply".
local M = {}

local H = {
  hints = {}, ---@type table<integer, { float: integer, scratch: integer, bufnr: integer, text: string, kind: string }>
  group = nil, ---@type integer|nil  autocmds that keep the hints current, while there are any
}

--- What the hint says: while the host writes, and once it is done.
local TEXT = {
  request = { " ↓ reply streaming below · G ", " ↓ reply below · G " },
  tools = { " ↓ tool results below · G ", " ↓ tool results below · G " },
  other = { " ↓ new text below · G ", " ↓ new text below · G " },
}

--- The hint's colours, linked so that colourschemes can restyle them.
local function define_highlights()
  vim.api.nvim_set_hl(0, "FlemmaFollowHint", { link = "PmenuSel", default = true })
end

--- How a window stands towards the end of its buffer, before the host writes: "cursor" (on the
--- last line), "view" (the last line on screen) or nil; and the last line it shows.
---@param win integer
---@param row integer the cursor's line (1-based)
---@param line_count integer
---@return string|nil stance, integer bottom
function M.stance(win, row, line_count)
  local bottom = vim.fn.line("w$", win)
  if row >= line_count then
    return "cursor", bottom
  end
  if bottom >= line_count then
    return "view", bottom
  end
  return nil, bottom
end

local function normal_mode()
  return vim.api.nvim_get_mode().mode == "n"
end

--- Put the last line at the bottom of the window when the window shows empty rows below the end
--- although the buffer is longer than the window (Neovim centres the cursor after a long jump).
local function bottom(win)
  local top = vim.fn.line("w0", win)
  if top <= 1 or not normal_mode() then
    return
  end
  local shown = vim.api.nvim_win_text_height(win, { start_row = top - 1 }).all
  if shown < vim.api.nvim_win_get_height(win) then
    vim.api.nvim_win_call(win, function()
      vim.cmd("normal! zb")
    end)
  end
end

--- A "cursor" window: its cursor onto the last line (at its end), unless it is there already.
local function to_end(win, bufnr, line_count)
  if vim.api.nvim_win_get_cursor(win)[1] == line_count then
    return
  end
  local text = vim.api.nvim_buf_get_lines(bufnr, line_count - 1, line_count, true)[1]
  vim.api.nvim_win_set_cursor(win, { line_count, #text })
  bottom(win)
end

local function scrolloff(win)
  local value = vim.wo[win].scrolloff
  if value < 0 then
    value = vim.go.scrolloff
  end
  return value
end

--- A "view" window: scrolled so that the last line is at its bottom, its cursor left where it
--- is. Returns false when that would take the cursor off the screen (the window stops following).
local function keep_end_in_view(win, line_count)
  if vim.fn.line("w$", win) >= line_count then
    return true
  end
  if not normal_mode() then
    return false
  end
  local followed = false
  vim.api.nvim_win_call(win, function()
    local view = vim.fn.winsaveview()
    vim.api.nvim_win_set_cursor(0, { line_count, 0 })
    vim.cmd("normal! zb")
    local top = vim.fn.line("w0")
    if view.lnum >= top + scrolloff(0) then
      view.topline = top
      followed = true
    end
    vim.fn.winrestview(view)
  end)
  return followed
end

local function close_hint(win)
  local hint = H.hints[win]
  if not hint then
    return
  end
  H.hints[win] = nil
  pcall(vim.api.nvim_win_close, hint.float, true)
  pcall(vim.api.nvim_buf_delete, hint.scratch, { force = true })
  if next(H.hints) == nil and H.group then
    vim.api.nvim_del_augroup_by_id(H.group)
    H.group = nil
  end
end

--- Where the hint of `win` goes: its bottom right corner, as wide as its text (or the window).
local function placement(win, text)
  local width = math.min(vim.fn.strdisplaywidth(text), vim.api.nvim_win_get_width(win))
  return {
    relative = "win",
    win = win,
    anchor = "SE",
    row = vim.api.nvim_win_get_height(win),
    col = vim.api.nvim_win_get_width(win),
    width = width,
    height = 1,
    focusable = false,
    zindex = 40,
  }
end

--- The hints of windows that show the end again (or show another buffer, or are gone) go; with
--- `resized`, the others move to their window's new corner.
local function refresh(resized)
  for win, hint in pairs(H.hints) do
    if
      not vim.api.nvim_win_is_valid(win)
      or not vim.api.nvim_buf_is_valid(hint.bufnr)
      or vim.api.nvim_win_get_buf(win) ~= hint.bufnr
      or vim.fn.line("w$", win) >= vim.api.nvim_buf_line_count(hint.bufnr)
    then
      close_hint(win)
    elseif resized and vim.api.nvim_win_is_valid(hint.float) then
      pcall(vim.api.nvim_win_set_config, hint.float, placement(win, hint.text))
    end
  end
end

local function watch()
  if H.group then
    return
  end
  H.group = vim.api.nvim_create_augroup("flemma.follow", { clear = true })
  vim.api.nvim_create_autocmd({ "WinScrolled", "CursorMoved", "CursorMovedI", "BufWinEnter" }, {
    group = H.group,
    desc = "Flemma: drop the hint of a window that shows the end of its chat again",
    callback = function()
      refresh(false)
    end,
  })
  vim.api.nvim_create_autocmd("WinResized", {
    group = H.group,
    desc = "Flemma: keep a hint in the bottom right corner of its window",
    callback = function()
      refresh(true)
    end,
  })
  vim.api.nvim_create_autocmd("WinClosed", {
    group = H.group,
    desc = "Flemma: drop the hint of a closed window",
    callback = function(ev)
      local win = tonumber(ev.match)
      if win then
        -- Not now: closing a window from WinClosed is not allowed.
        vim.schedule(function()
          close_hint(win)
        end)
      end
    end,
  })
end

local function show_hint(win, bufnr, kind, writing)
  local text = TEXT[kind][writing and 1 or 2]
  local hint = H.hints[win]
  if hint and hint.bufnr == bufnr and vim.api.nvim_win_is_valid(hint.float) then
    if hint.text ~= text then
      hint.text, hint.kind = text, kind
      vim.api.nvim_buf_set_lines(hint.scratch, 0, -1, false, { text })
      pcall(vim.api.nvim_win_set_config, hint.float, placement(win, text))
    end
    return
  end
  close_hint(win)
  if vim.api.nvim_win_get_width(win) < 8 or vim.api.nvim_win_get_height(win) < 2 then
    return
  end
  define_highlights()
  local scratch = vim.api.nvim_create_buf(false, true)
  vim.bo[scratch].bufhidden = "wipe"
  vim.api.nvim_buf_set_lines(scratch, 0, -1, false, { text })
  local config = placement(win, text)
  config.style = "minimal"
  config.noautocmd = true
  local ok, float = pcall(vim.api.nvim_open_win, scratch, false, config)
  if not ok then
    pcall(vim.api.nvim_buf_delete, scratch, { force = true })
    return
  end
  vim.wo[float].winhighlight = "NormalFloat:FlemmaFollowHint"
  H.hints[win] = { float = float, scratch = scratch, bufnr = bufnr, text = text, kind = kind }
  watch()
end

--- After a batch: each window follows the end as its stance says, or gets the hint.
---@param bufnr integer
---@param pins { win: integer, stance: string|nil, bottom: integer }[]
---@param owners table<string, true> who holds the buffer's lock
---@param deepest integer the lowest row (0-based) a change of the batch started at
function M.after(bufnr, pins, owners, deepest)
  local line_count = vim.api.nvim_buf_line_count(bufnr)
  local kind = owners.request and "request" or owners.tools and "tools" or "other"
  -- In the current window, a selection, a pending operator, the command line or a completion
  -- menu is the user at work: their cursor is not moved then.
  local mode = vim.api.nvim_get_mode().mode
  local current = (mode ~= "n" and mode ~= "i") and vim.api.nvim_get_current_win() or nil
  for _, pin in ipairs(pins) do
    local win = pin.win
    if vim.api.nvim_win_is_valid(win) and vim.api.nvim_win_get_buf(win) == bufnr then
      local following = false
      if win == current then
        following = false
      elseif pin.stance == "cursor" then
        to_end(win, bufnr, line_count)
        following = true
      elseif pin.stance == "view" then
        following = keep_end_in_view(win, line_count)
      end
      if following or vim.fn.line("w$", win) >= line_count then
        close_hint(win)
      elseif pin.stance ~= nil or deepest >= pin.bottom - 1 then
        -- Written below what the window showed (a change from its last line on can push text
        -- below it), not only where the user is looking.
        show_hint(win, bufnr, kind, true)
      end
    end
  end
end

--- The writing into `bufnr` ended (its lock is released): its hints say what is below now.
function M.settle(bufnr)
  for win, hint in pairs(H.hints) do
    if hint.bufnr == bufnr and vim.api.nvim_win_is_valid(win) then
      show_hint(win, bufnr, hint.kind, false)
    end
  end
end

--- The buffer is gone: its hints too.
function M.forget(bufnr)
  for win, hint in pairs(H.hints) do
    if hint.bufnr == bufnr then
      close_hint(win)
    end
  end
end

--- The hint a window shows now (for a statusline), or nil.
---@param win integer|nil the current window by default
function M.hint(win)
  if win == nil or win == 0 then
    win = vim.api.nvim_get_current_win()
  end
  local hint = H.hints[win]
  return hint and vim.trim(hint.text) or nil
end

return M
