--- flemma.ui.turns: the turn gutter of chat windows (`turns.*`).
---
--- A turn is one exchange the user started: their `@You:` messages, the tool calls and results in
--- between, and the reply that ends it (an `@Assistant:` message without a tool call, with the
--- replies right after it). Each row of a turn gets a mark in the window's 'statuscolumn', after
--- the signs and the line number: ╭ on its first row, │ inside, ╰ on its last. A turn that is
--- still open — a reply streaming into it, or tool calls still waiting for the reply that ends
--- it — shows ┊ inside and ╯ at its end. `@System:` messages break a turn and are never in one;
--- a reply with no `@You:` before it, and the empty `@You:` waiting at the end, are in none.
---
--- The turns come from the line scan (flemma.ui.scan) and are worked out again only when its
--- structure changed or a request started or ended; the column then reads them with a binary
--- search per drawn row. Rows whose mark changed without their text changing (the rows above a
--- new `@Assistant:` marker, a turn when its reply starts or ends) are redrawn on the next tick.
local lazy = require("flemma.util.lazy")
local buffer = lazy.require("flemma.chat.buffer")
local M = {}

local api = vim.api

local CHARS = { top = "╭", middle = "│", bottom = "╰", pending = "┊", pending_end = "╯" }

--- The screen rows of buffer row `row` in `win` from its text on: its wrapped parts and the
--- virtual lines below it (not those above), so that a turn's end mark goes on the last of them.
local function rows_from_text(win, row)
  local ok, height = pcall(api.nvim_win_text_height, win, { start_row = row, end_row = row })
  if not ok then
    return 1
  end
  local rows = height.all
  if height.fill > 0 then
    local marks = api.nvim_buf_get_extmarks(
      api.nvim_win_get_buf(win),
      -1,
      { row, 0 },
      { row, -1 },
      { details = true, type = "virt_lines" }
    )
    for _, mark in ipairs(marks) do
      local details = mark[4]
      if details.virt_lines_above and details.virt_lines then
        rows = rows - #details.virt_lines
      end
    end
  end
  return rows
end

--- The 'statuscolumn' of a chat window with the gutter on.
M.EXPR = "%!v:lua.require'flemma.ui.turns'.column()"

--- Fold, signs, then the line number right-aligned (each empty when its option is off).
local PREFIX = "%C%s%=%l"

local H = {
  enabled = true,
  buffers = {}, ---@type table<integer, { structure: table, streaming: boolean, turns: table[], flushed: table[]|nil }>
  suffix = {}, ---@type table<string, string> mark → its padded, highlighted text ("" → no mark)
}

--- Take the configuration: the padding around a mark. The highlight is always `FlemmaTurn`,
--- which flemma.ui.highlight defines from `turns.hl`.
function M.configure(cfg)
  H.enabled = (cfg.turns or {}).enabled ~= false
  local padding = (cfg.turns or {}).padding
  local left, right = 0, 1
  if type(padding) == "number" then
    left, right = padding, padding
  elseif type(padding) == "table" then
    left = padding.left or padding[1] or left
    right = padding.right or padding[2] or right
  end
  local before, after = string.rep(" ", left), string.rep(" ", right)
  H.suffix = { [""] = PREFIX .. before .. " " .. after }
  for _, char in pairs(CHARS) do
    H.suffix[char] = PREFIX .. before .. "%#FlemmaTurn#" .. char .. "%*" .. after
  end
end

M.configure({})

--- The turns of a structure (flemma.ui.scan), in order: `{ row, end_row, open }` (0-based rows,
--- `end_row` inclusive). `streaming`: a reply is being written into the buffer.
---@param structure table
---@param streaming boolean
---@return { row: integer, end_row: integer, open: boolean }[]
function M.detect(structure, streaming)
  local messages = structure.messages
  local count = #messages
  local calls = {} -- message index → it holds a tool call
  for _, block in ipairs(structure.blocks) do
    if block.kind == "tool_use" then
      calls[block.msg] = true
    end
  end
  local turns = {}
  local function close(first, last, open)
    turns[#turns + 1] = { row = messages[first].row, end_row = messages[last].end_row, open = open }
  end
  local start -- the first message of the turn being read
  local i = 1
  while i <= count do
    local role = messages[i].role
    if role == "You" then
      start = start or i
      i = i + 1
    elseif role == "Assistant" and start and not calls[i] then
      -- The reply that ends the turn, with the replies right after it.
      local last = i
      while last < count and messages[last + 1].role == "Assistant" do
        last = last + 1
      end
      close(start, last, streaming and last == count)
      start = nil
      i = last + 1
    elseif role == "System" then
      if start then
        close(start, i - 1, false)
        start = nil
      end
      i = i + 1
    else
      -- A reply with a tool call (the turn goes on), one before any `@You:`, an unknown role.
      i = i + 1
    end
  end
  if start then
    -- Still open: a reply streams into it, or it has replies with tool calls and waits for the
    -- one that ends it. A lone `@You:` at the end (the next prompt) is no turn yet.
    local replied = streaming
    for j = start, count do
      replied = replied or messages[j].role == "Assistant"
    end
    if replied then
      close(start, count, true)
    end
  end
  return turns
end

local function same(a, b)
  return a.row == b.row and a.end_row == b.end_row and a.open == b.open
end

--- Where the buffers' structures come from: flemma.ui, which draws with this module, hands its
--- reader over when it loads (`M.read_structures`).
---@type fun(bufnr: integer): table|nil
function H.structure()
  return nil
end

---@param reader fun(bufnr: integer): table|nil
function M.read_structures(reader)
  H.structure = reader
end

--- The buffer's turns now (worked out again when its structure or its request changed).
local function current(bufnr)
  local structure = H.structure(bufnr)
  if structure == nil then
    return nil
  end
  local owners = buffer.lock_owners(bufnr)
  local streaming = owners ~= nil and owners.request == true
  local state = H.buffers[bufnr]
  if state and state.structure == structure and state.streaming == streaming then
    return state
  end
  local turns = M.detect(structure, streaming)
  if state == nil then
    state = {}
    H.buffers[bufnr] = state
  end
  state.structure, state.streaming, state.turns = structure, streaming, turns
  -- The first turns worked out are the ones drawn first: a later change is judged against them
  -- (a request that starts on a chat nothing was edited in yet redraws the question's rows).
  state.flushed = state.flushed or turns
  return state
end

--- The rows (first, last) whose marks differ between two lists of turns, or nil.
local function changed_rows(before, after)
  local first, last
  local function cover(a, b)
    first = math.min(first or a, a)
    last = math.max(last or b, b)
  end
  for i = 1, math.max(#before, #after) do
    local a, b = before[i], after[i]
    if a == nil or b == nil then
      local turn = a or b
      cover(turn.row, turn.end_row)
    elseif not same(a, b) then
      if a.row == b.row and a.open == b.open then
        -- Only its end moved: the rows between the two ends change.
        cover(math.min(a.end_row, b.end_row), math.max(a.end_row, b.end_row))
      else
        cover(math.min(a.row, b.row), math.max(a.end_row, b.end_row))
      end
    end
  end
  return first, last
end

local function redraw(bufnr, first, last)
  if first <= last then
    pcall(api.nvim__redraw, { buf = bufnr, range = { first, last + 1 } })
  end
end

--- After a change (scheduled by flemma.ui) or when a request starts or ends: redraw the rows
--- whose mark changed although their text did not. `edited`: the rows `{first, last}` (end
--- exclusive) the change wrote, which Neovim draws again itself (a reply streaming in changes
--- only those: asking for them again would draw the window twice per chunk).
function M.refresh(bufnr, edited)
  if not H.enabled then
    return
  end
  local state = current(bufnr)
  if state == nil then
    return
  end
  local before = state.flushed
  state.flushed = state.turns
  if before == nil or before == state.turns then
    return
  end
  local first, last = changed_rows(before, state.turns)
  if first == nil then
    return
  end
  if edited == nil then
    redraw(bufnr, first, last)
  else
    redraw(bufnr, first, math.min(last, edited[1] - 1))
    redraw(bufnr, math.max(first, edited[2]), last)
  end
end

--- The turn holding 0-based `row`, or nil.
local function turn_at(turns, row)
  local lo, hi, found = 1, #turns, nil
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    if turns[mid].row <= row then
      found, lo = mid, mid + 1
    else
      hi = mid - 1
    end
  end
  local turn = found and turns[found]
  if turn and row <= turn.end_row then
    return turn
  end
  return nil
end

--- The last row of a closed fold starting at `lnum` (1-based) in `win`, or -1.
local function fold_end(win, lnum)
  if win == api.nvim_get_current_win() then
    return vim.fn.foldclosedend(lnum)
  end
  return api.nvim_win_call(win, function()
    return vim.fn.foldclosedend(lnum)
  end)
end

--- The 'statuscolumn' of a chat window (`M.EXPR`): Neovim calls it for each row it draws, with
--- `g:statusline_winid` the window (which need not be the current one).
function M.column()
  -- The API rather than vim.g / vim.v: this runs for every row drawn.
  local ok, win = pcall(api.nvim_get_var, "statusline_winid")
  local state = ok and api.nvim_win_is_valid(win) and current(api.nvim_win_get_buf(win)) or nil
  local row = api.nvim_get_vvar("lnum") - 1
  local turn = state and turn_at(state.turns, row)
  if not turn then
    return H.suffix[""]
  end
  local char
  local virtnum = api.nvim_get_vvar("virtnum")
  if virtnum ~= 0 then
    -- A wrapped part of a row, or virtual lines: the line goes on. Virtual lines above the
    -- turn's first row are not in it.
    if virtnum < 0 and row == turn.row then
      return H.suffix[""]
    end
    -- The end mark goes on the last screen row of the turn's last line.
    if row == turn.end_row and row ~= turn.row and virtnum == rows_from_text(win, row) - 1 then
      char = turn.open and CHARS.pending_end or CHARS.bottom
    else
      char = turn.open and CHARS.pending or CHARS.middle
    end
  elseif row == turn.row then
    char = CHARS.top
  elseif row == turn.end_row and rows_from_text(win, row) > 1 then
    -- The line wraps (or has virtual lines below): it ends further down.
    char = turn.open and CHARS.pending or CHARS.middle
  elseif row == turn.end_row then
    char = turn.open and CHARS.pending_end or CHARS.bottom
  else
    -- A closed fold from this row hides the turn's last row: the end shows here.
    local last = fold_end(win, row + 1)
    if last ~= -1 and last - 1 >= turn.end_row then
      char = turn.open and CHARS.pending_end or CHARS.bottom
    else
      char = turn.open and CHARS.pending or CHARS.middle
    end
  end
  return H.suffix[char]
end

--- Forget a buffer (wiped, or no longer drawn).
function M.forget(bufnr)
  H.buffers[bufnr] = nil
end

return M
