--- flemma.chat.history: `:Flemma fork`, `:Flemma rewind` and `:Flemma retry` on the editor's side
--- (docs/history.md). The host does the work (the checks of the undo records, the files, the
--- sibling file, the cut); Lua only starts it for the current chat and shows what the host hands
--- back: the new chat to open, the diff of a file that made a rewind refuse, files to read again.
local lazy = require("flemma.util.lazy")
local compact = lazy.require("flemma.chat.compact")
local editor_state = lazy.require("flemma.host.editor_state")
local files = lazy.require("flemma.chat.files")
local guard = lazy.require("flemma.chat.guard")
local host = lazy.require("flemma.host")
local diff = lazy.require("flemma.review.diff")
local turn = lazy.require("flemma.chat.turn")
local M = {}

--- The current chat buffer, its file and the cursor's 0-based row; nil when it has none (said).
local function target(what)
  local bufnr, file = files.with_file(vim.api.nvim_get_current_buf(), what)
  if bufnr == nil then
    return nil
  end
  return bufnr, file, vim.api.nvim_win_get_cursor(0)[1] - 1
end

--- `:Flemma fork`: a new chat beside this one, up to the message under the cursor (not the one
--- a reply is still writing).
function M.fork()
  local bufnr, file, row = target("fork")
  if bufnr == nil or guard.refuse(bufnr, row) then
    return false
  end
  return host.notify("chat:fork", { bufnr = bufnr, file = file, row = row })
end

--- `:Flemma rewind`: back to the message under the cursor (the host refuses while anything runs).
function M.rewind()
  local bufnr, file, row = target("rewind")
  if bufnr == nil or guard.refuse(bufnr) or files.refuse(bufnr) then
    return false
  end
  return host.notify("chat:rewind", { bufnr = bufnr, file = file, row = row })
end

--- `:Flemma retry`: the last reply out (into the sibling file), then the same request again.
function M.retry()
  local bufnr, file = target("retry")
  if bufnr == nil or guard.refuse(bufnr) or files.refuse(bufnr) then
    return false
  end
  local params = { bufnr = bufnr, file = file, ticket = turn.ticket(bufnr), state = editor_state.snapshot(bufnr) }
  return host.notify("chat:retry", params)
end

--- The host's `history.show`: open the fork (as `:Flemma compact` opens its chat: trusted when
--- the old one was) with the cursor on `open.row`; show the `diff` of a file that changed since
--- its call; read files a rewind restored again (`checktime`).
function M.show(params)
  local answer = { opened = false }
  if type(params.open) == "table" then
    answer = compact.open({ bufnr = params.bufnr, path = params.open.path })
    if answer.opened then
      local last = vim.api.nvim_buf_line_count(answer.bufnr)
      pcall(vim.api.nvim_win_set_cursor, 0, { math.min(params.open.row + 1, last), 0 })
    end
  end
  if type(params.diff) == "table" then
    diff.open(params.diff, { decide = false })
  end
  if params.checktime then
    pcall(vim.cmd.checktime)
  end
  return answer
end

return M
