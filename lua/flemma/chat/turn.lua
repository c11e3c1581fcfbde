--- flemma.chat.turn: where a turn ends for the user (docs/tools.md, "Where the turn ends"). Each
--- action that ends a turn gets a ticket; the host answers it with `chat.step_ended` once the user
--- has the word again, and the cursor of the window the action came from goes where the user goes
--- on (the call that waits, the empty `@You:` at the end); from Insert mode, Insert mode comes back
--- after a normal end. Its own module so that the tools, the diff view and the commands can take a
--- ticket without requiring the chat module.
local scan = require("flemma.ui.scan")
local lazy = require("flemma.util.lazy")
local ui = lazy.require("flemma.ui")

local M = {}

local H = {
  ns_pins = vim.api.nvim_create_namespace("flemma.step_pins"),
  --- The user's last action that ends a turn, per buffer: its ticket, the window it came from,
  --- whether from Insert mode, the changedtick, and a mark where its cursor stood.
  ---@type table<integer, { ticket: integer, win: integer, insert: boolean, tick: integer, pin: integer|nil }>
  resume = {},
  --- Per buffer, the mark of the row Flemma last put its cursor on (`M.placed`).
  ---@type table<integer, integer>
  placed = {},
  tickets = 0,
}

--- A ticket for a user's action that ends a turn (`<C-]>`, `<M-CR>`, `:Flemma send`, approving or
--- rejecting): the host answers it with `chat.step_ended` once the user has the word again. It
--- remembers the window the action came from (the current one when it shows the chat), whether
--- from Insert mode, and where its cursor stood (a mark that follows edits). A newer ticket of
--- the buffer replaces an older one.
---@param bufnr integer
---@param insert boolean|nil
---@return integer
function M.ticket(bufnr, insert)
  H.forget_wait(bufnr)
  H.tickets = H.tickets + 1
  local win = vim.api.nvim_get_current_win()
  if vim.api.nvim_win_get_buf(win) ~= bufnr then
    -- From another tab (the diff tab's `ga`): the chat's window there.
    win = vim.fn.win_findbuf(bufnr)[1] or -1
  end
  local wait =
    { ticket = H.tickets, win = win, insert = insert == true, tick = vim.api.nvim_buf_get_changedtick(bufnr) }
  if win ~= -1 then
    local row = vim.api.nvim_win_get_cursor(win)[1] - 1
    wait.pin = vim.api.nvim_buf_set_extmark(bufnr, H.ns_pins, row, 0, { right_gravity = false })
  end
  H.resume[bufnr] = wait
  return wait.ticket
end

--- Drop the buffer's waiting ticket (and its mark).
function H.forget_wait(bufnr)
  local wait = H.resume[bufnr]
  H.resume[bufnr] = nil
  if wait and wait.pin and vim.api.nvim_buf_is_valid(bufnr) then
    pcall(vim.api.nvim_buf_del_extmark, bufnr, H.ns_pins, wait.pin)
  end
end

--- Host → Lua (through `tools.cursor`): Flemma put the buffer's cursor on `row` (0-based); a
--- mark keeps the place through edits, so that the end of a turn knows the cursor is still there.
function M.placed(bufnr, row)
  H.placed[bufnr] = vim.api.nvim_buf_set_extmark(bufnr, H.ns_pins, row, 0, { id = H.placed[bufnr] })
end

--- Whether the cursor of `win` stands where the action left it, so that it may be moved: on the
--- row it stood on when the action began, on the row Flemma last put it (`M.placed`: the call
--- that waits, a result's header), both marks following edits, or on the buffer's last line
--- (where following a reply puts it).
function H.cursor_free(bufnr, win, wait)
  local row = vim.api.nvim_win_get_cursor(win)[1] - 1
  for _, id in pairs({ start = wait.pin, placed = H.placed[bufnr] }) do
    local pos = vim.api.nvim_buf_get_extmark_by_id(bufnr, H.ns_pins, id, {})
    if pos[1] == row then
      return true
    end
  end
  return row == vim.api.nvim_buf_line_count(bufnr) - 1
end

--- Whether row (0-based) is in a `**Tool Use:**` or `**Tool Result:**` block.
function H.in_tool_block(bufnr, row)
  local structure = ui.structure(bufnr)
  local block = structure and scan.block_at(structure, row)
  return block ~= nil and (block.kind == "tool_use" or block.kind == "tool_result")
end

--- Where the cursor goes when the action is over: the first call that waits (`row` from the
--- host), else the line under an empty `@You:` that ends the buffer when the action wrote
--- something; nil to leave it.
function H.target_row(bufnr, wait, params)
  if params.outcome == "waiting" then
    local row = params.row
    return type(row) == "number" and row or nil
  end
  if vim.api.nvim_buf_get_changedtick(bufnr) ~= wait.tick then
    return H.empty_prompt_row(bufnr)
  end
  return nil
end

--- The outcomes after which Insert mode comes back (a failure, an approval stop or a stopped
--- chain leave the user in Normal mode, their message on screen).
local RESUMES = { done = true, refused = true, cancelled = true }

--- Host → Lua: the action of `ticket` is over (`outcome`: done, refused, waiting, failed,
--- cancelled, stopped; `row`: the call that waits). The cursor of the window it came from goes
--- where the user goes on (`H.target_row`) unless they moved it elsewhere meanwhile
--- (`H.cursor_free`). From Insert mode, Insert mode comes back when the turn ended normally, the
--- user is still in that chat's window, in Normal mode, with a cursor the action placed outside
--- any tool block. Returns whether Insert mode comes back.
---@param params { bufnr: integer, ticket: integer, outcome: string|nil, row: integer|nil }
function M.step_ended(params)
  local bufnr = params.bufnr
  local wait = H.resume[bufnr]
  if wait == nil or wait.ticket ~= params.ticket then
    return false
  end
  local win = wait.win
  if not vim.api.nvim_win_is_valid(win) or vim.api.nvim_win_get_buf(win) ~= bufnr then
    win = vim.fn.bufwinid(bufnr)
  end
  local free = win ~= -1 and H.cursor_free(bufnr, win, wait)
  H.forget_wait(bufnr)
  if not free then
    return false
  end
  local target = H.target_row(bufnr, wait, params)
  if target ~= nil then
    local last = vim.api.nvim_buf_line_count(bufnr) - 1
    pcall(vim.api.nvim_win_set_cursor, win, { math.min(target, last) + 1, 0 })
  end
  local mode = vim.api.nvim_get_mode()
  if
    not wait.insert
    or not RESUMES[params.outcome or "done"]
    or vim.api.nvim_get_current_win() ~= win
    or mode.mode ~= "n"
    or mode.blocking
    or H.in_tool_block(bufnr, vim.api.nvim_win_get_cursor(win)[1] - 1)
  then
    return false
  end
  vim.cmd("startinsert!")
  return true
end

--- The row (0-based) to type in when the buffer ends with an empty `@You:` message (its marker,
--- then only blank lines): the line under the marker; nil otherwise.
function H.empty_prompt_row(bufnr)
  local count = vim.api.nvim_buf_line_count(bufnr)
  local last = count - 1
  -- A few lines at a time from the end: a long chat is not read whole.
  while last >= 0 do
    local from = math.max(0, last - 15)
    local lines = vim.api.nvim_buf_get_lines(bufnr, from, last + 1, false)
    for i = #lines, 1, -1 do
      local line = lines[i]
      if line:find("%S") then
        local row = from + i - 1
        if scan.role_marker(line) == "You" and row + 1 < count then
          return row + 1
        end
        return nil
      end
    end
    last = from - 1
  end
  return nil
end

--- Forget a buffer that went away.
function M.forget(bufnr)
  H.forget_wait(bufnr)
  H.placed[bufnr] = nil
end

return M
