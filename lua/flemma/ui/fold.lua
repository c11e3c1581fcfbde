--- flemma.ui.fold: folds of a chat buffer, as manual folds that flemma.ui keeps in step with
--- the buffer's structure.
---
--- Which folds: each message (level 1; the last message only once another follows it, or when
--- toggled, since a reply may still be streaming into it), the frontmatter (level 1), and inside
--- messages every complete thinking block, tool use and tool result of more than one line
--- (level 2); a placeholder (a result with a status) is not complete and stays unfolded. A new fold starts closed or open by `editing.foldlevel` and `editing.auto_close`.
---
--- Why manual folds: Neovim keeps them in place through edits by itself, so an edit costs
--- nothing unless the structure changed, and a streamed reply adds a fold when a block is
--- complete instead of recomputing every fold per chunk (an expression fold would). The folds
--- already made are remembered per window with an extmark at each end; when the wanted folds
--- are a superset of them only the new ones are made, otherwise the window's folds are made
--- again, keeping each fold's open/closed state.
local scan = require("flemma.ui.scan")

local M = {}

M.ns = vim.api.nvim_create_namespace("flemma.ui.fold")

local H = {
  cfg = { foldlevel = 1, auto_close = { thinking = true, tool_use = true, tool_result = true, frontmatter = false } },
  wins = {}, ---@type table<integer, { bufnr: integer, folds: table[] }>
}

function M.setup(cfg)
  local editing = cfg.editing or {}
  H.cfg = {
    foldlevel = editing.foldlevel or 1,
    auto_close = editing.auto_close or H.cfg.auto_close,
  }
end

local KIND_CODE = { frontmatter = 1, message = 2, thinking = 3, tool_use = 4, tool_result = 5 }

--- A number for a fold's kind and first row (no string to build: this runs on every change).
local function key(kind, row)
  return row * 8 + (KIND_CODE[kind] or 0)
end

--- The folds a structure calls for, sorted by start row (a message before the blocks in it).
---@param st table a flemma.ui.scan structure
---@param with_last boolean|nil include the last message's fold
function M.wanted(st, with_last)
  local out = {}
  local fm = st.frontmatter
  if fm and fm.end_row > fm.row then
    out[#out + 1] = { kind = "frontmatter", row = fm.row, end_row = fm.end_row, level = 1 }
  end
  local blocks = st.blocks
  local b = 1
  local count = #st.messages
  for index, message in ipairs(st.messages) do
    if (index < count or with_last) and message.last_row > message.row then
      out[#out + 1] = { kind = "message", row = message.row, end_row = message.last_row, level = 1 }
    end
    while blocks[b] and blocks[b].msg == index do
      local block = blocks[b]
      local kind = block.kind
      if
        (kind == "thinking" or kind == "tool_use" or (kind == "tool_result" and block.status == nil))
        and not block.open
        and block.end_row > block.row
      then
        out[#out + 1] = { kind = kind, row = block.row, end_row = block.end_row, level = 2 }
      end
      b = b + 1
    end
  end
  return out
end

--- Whether a new fold starts closed: a message by `editing.foldlevel` (messages are level 1),
--- a block or the frontmatter by `editing.auto_close`.
local function starts_closed(fold)
  local auto = H.cfg.auto_close[fold.kind]
  if fold.kind ~= "message" and auto ~= nil then
    return auto == true
  end
  return fold.level > H.cfg.foldlevel
end

--- Make one fold in the current window (manual folds are made closed) and remember it.
local function make(bufnr, record, fold)
  local ok = pcall(vim.cmd, string.format("%d,%dfold", fold.row + 1, fold.end_row + 1))
  if not ok then
    return false
  end
  record.folds[#record.folds + 1] = {
    kind = fold.kind,
    level = fold.level,
    start_mark = vim.api.nvim_buf_set_extmark(bufnr, M.ns, fold.row, 0, {}),
    end_mark = vim.api.nvim_buf_set_extmark(bufnr, M.ns, fold.end_row, 0, {}),
  }
  return true
end

--- Add one fold to the folds of the current window and give it its first state. Closed folds
--- around it are opened for the while (see the note in M.sync) and closed again.
local function add(bufnr, record, fold)
  local lnum = fold.row + 1
  local opened = {}
  while true do
    local outer = vim.fn.foldclosed(lnum)
    if outer == -1 or #opened > 20 then
      break
    end
    opened[#opened + 1] = outer
    vim.cmd(string.format("%dfoldopen", outer))
  end
  local ok = make(bufnr, record, fold)
  if ok and not starts_closed(fold) then
    vim.cmd(string.format("%dfoldopen", lnum))
  end
  for i = #opened, 1, -1 do
    vim.cmd(string.format("%dfoldclose", opened[i]))
  end
  return ok
end

--- The folds made in a window, with where their ends are now.
local function current(bufnr, record)
  -- One call for every mark of the namespace (all windows' folds) instead of one per mark.
  local rows = {}
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(bufnr, M.ns, 0, -1, {})) do
    rows[mark[1]] = mark[2]
  end
  local out = {}
  for _, fold in ipairs(record.folds) do
    local s, e = rows[fold.start_mark], rows[fold.end_mark]
    if s == nil or e == nil then
      return nil
    end
    out[#out + 1] = { kind = fold.kind, row = s, end_row = e, level = fold.level }
  end
  return out
end

local function forget_marks(bufnr, record)
  for _, fold in ipairs(record.folds) do
    pcall(vim.api.nvim_buf_del_extmark, bufnr, M.ns, fold.start_mark)
    pcall(vim.api.nvim_buf_del_extmark, bufnr, M.ns, fold.end_mark)
  end
  record.folds = {}
end

--- Set the window options folding needs (window-local, for this buffer in this window).
local function window_options(win)
  local wo = vim.wo[win][0]
  wo.foldmethod = "manual"
  wo.foldenable = true
  wo.foldtext = "v:lua.require'flemma.ui.fold'.text()"
  wo.foldlevel = H.cfg.foldlevel
end

--- Bring the folds of `win` (showing `bufnr`) in line with the structure `st`.
---@return integer made how many folds were made
function M.sync(win, bufnr, st)
  local record = H.wins[win]
  local fresh = record == nil or record.bufnr ~= bufnr
  if fresh then
    if record then
      forget_marks(record.bufnr, record)
    end
    record = { bufnr = bufnr, folds = {}, last_count = nil }
    H.wins[win] = record
  end
  local wanted = M.wanted(st, record.last_count == #st.messages)
  local have = not fresh and current(bufnr, record) or nil
  local made = 0
  vim.api.nvim_win_call(win, function()
    if fresh then
      window_options(win)
    end
    if have then
      -- Fold identity is (kind, first row, last row): the maps hold the last row by the rest.
      local wanted_keys, have_keys = {}, {}
      for _, fold in ipairs(wanted) do
        wanted_keys[key(fold.kind, fold.row)] = fold.end_row
      end
      local subset = true
      for _, fold in ipairs(have) do
        local k = key(fold.kind, fold.row)
        have_keys[k] = fold.end_row
        if wanted_keys[k] ~= fold.end_row then
          subset = false
          break
        end
      end
      if subset then
        for _, fold in ipairs(wanted) do
          if have_keys[key(fold.kind, fold.row)] ~= fold.end_row then
            if add(bufnr, record, fold) then
              made = made + 1
            end
          end
        end
        return
      end
    end
    -- Make every fold again, keeping the states of those that stay.
    local closed = {}
    if have then
      for _, fold in ipairs(have) do
        if fold.end_row < vim.api.nvim_buf_line_count(bufnr) then
          closed[fold.kind .. ":" .. fold.row] = vim.fn.foldclosed(fold.row + 1) == fold.row + 1
        end
      end
    end
    forget_marks(bufnr, record)
    vim.cmd("normal! zE")
    -- Each fold is opened right after it is made: an Ex range inside a closed fold stands for
    -- the whole fold, so the folds nested in it could not be made. Then the closed ones are
    -- closed from the last back: at its first line a block is the innermost fold, and a
    -- message marker is in no other fold.
    local to_close = {}
    for _, fold in ipairs(wanted) do
      if make(bufnr, record, fold) then
        made = made + 1
        vim.cmd(string.format("%dfoldopen", fold.row + 1))
        local state = closed[fold.kind .. ":" .. fold.row]
        if state == nil then
          state = starts_closed(fold)
        end
        if state then
          to_close[#to_close + 1] = fold.row + 1
        end
      end
    end
    for i = #to_close, 1, -1 do
      vim.cmd(string.format("%dfoldclose", to_close[i]))
    end
  end)
  return made
end

--- Forget a window (closed) or a buffer (wiped).
function M.forget_window(win)
  H.wins[win] = nil
end

function M.forget_buffer(bufnr)
  for win, record in pairs(H.wins) do
    if record.bufnr == bufnr then
      H.wins[win] = nil
    end
  end
  if vim.api.nvim_buf_is_valid(bufnr) then
    vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  end
end

--- Toggle the fold of the message under the cursor (made first for the last message).
---@param st table the buffer's structure
function M.toggle_message(st)
  local win = vim.api.nvim_get_current_win()
  local bufnr = vim.api.nvim_get_current_buf()
  local row = vim.api.nvim_win_get_cursor(win)[1] - 1
  local index = scan.message_at(st, row)
  local target
  if index then
    target = st.messages[index]
  elseif st.frontmatter and row <= st.frontmatter.end_row then
    target = st.frontmatter
  end
  if not target then
    return false
  end
  local record = H.wins[win]
  if index == #st.messages and record and record.last_count ~= #st.messages then
    -- Until another message follows, this one has a fold too.
    record.last_count = #st.messages
    M.sync(win, bufnr, st)
    -- The new fold was made open or closed by the defaults; toggling it means closing it.
    vim.cmd(string.format("%dfoldclose", target.row + 1))
    return true
  end
  local lnum = target.row + 1
  if vim.fn.foldclosed(lnum) == lnum then
    vim.cmd(string.format("%dfoldopen", lnum))
  else
    vim.cmd(string.format("%dfoldclose", lnum))
  end
  return true
end

--- 'foldtext': what a closed fold shows.
function M.text()
  local lnum = vim.v.foldstart
  local last = vim.v.foldend
  local bufnr = vim.api.nvim_get_current_buf()
  local lines = vim.api.nvim_buf_get_lines(bufnr, lnum - 1, math.min(last, lnum + 40), false)
  local head = lines[1] or ""
  local count = last - lnum + 1
  local preview
  -- A thinking block shows its first words, never its provider's signature (nor a redacted
  -- block's opaque data).
  local label, opaque = scan.thinking_label(head)
  head = label or head
  for i = 2, opaque and 0 or #lines do
    local text = vim.trim(lines[i])
    if text ~= "" and not scan.is_delimiter(text) then
      preview = text
      break
    end
  end
  local chunks = { { head, "Folded" } }
  if preview then
    local width = vim.api.nvim_win_get_width(0) - vim.fn.strdisplaywidth(head) - 20
    if width > 10 then
      if vim.fn.strchars(preview) > width then
        preview = vim.fn.strcharpart(preview, 0, width - 1) .. "…"
      end
      chunks[#chunks + 1] = { " " .. preview, "FlemmaFoldPreview" }
    end
  end
  chunks[#chunks + 1] = { string.format(" (%d lines)", count), "FlemmaFoldMeta" }
  return chunks
end

return M
