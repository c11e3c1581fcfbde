--- flemma.acp: what Neovim does for the chats' ACP agents (docs/agents.md, "Permissions"). A
--- permission request the approval chain left to the user waits in the reply as a placeholder
--- (`**Agent Permission:**` and a `flemma:tool status=pending` fence, found by flemma.ui.scan);
--- each request is its own, and several may wait at once. `<M-CR>` or `:Flemma tool:approve`
--- allows the one under the cursor (else the first that waits), `:Flemma tool:approve-always`
--- allows it always, `:Flemma tool:reject` rejects it, the diff view (`gD` on an `edit` with a
--- diff) answers with `ga` / `gr`, and `<C-]>` honours a status edited in a placeholder, else
--- goes to the first that waits and says so. The reply is locked while it streams: these answer
--- anyway, since they write nothing themselves (the host rewrites the placeholder).
local lazy = require("flemma.util.lazy")
local attention = lazy.require("flemma.ui.attention")
local guard = lazy.require("flemma.chat.guard")
local host = lazy.require("flemma.host")
local notify = lazy.require("flemma.notify")
local review_diff = lazy.require("flemma.review.diff")
local ui = lazy.require("flemma.ui")

local M = {}

--- The requests waiting in each buffer, in the order they were asked: `{ id, key, message, diff }`.
local waiting = {}

local HINT = "<M-CR> or :Flemma tool:approve allows, :Flemma tool:reject rejects"

--- What a status edited in a placeholder answers.
local EDITED = { approved = "allow", rejected = "reject", denied = "reject" }

local function message_key(bufnr, id)
  return string.format("acp:%d:%s", bufnr, id)
end

local function index_of(bufnr, id)
  for i, entry in ipairs(waiting[bufnr] or {}) do
    if entry.id == id then
      return i
    end
  end
  return nil
end

--- `acp.permission {bufnr, id, message, diff?}`: the request waits for the user's answer.
function M.permission(params)
  local bufnr = params.bufnr
  local list = waiting[bufnr] or {}
  waiting[bufnr] = list
  local known = index_of(bufnr, params.id)
  if known then
    table.remove(list, known)
  end
  local key = message_key(bufnr, params.id)
  list[#list + 1] = { id = params.id, key = key, message = params.message, diff = params.diff }
  notify.warn(params.message .. " (" .. HINT .. ")", { key = key })
  guard.agent_waits(bufnr, true)
  attention.signal({ bufnr = bufnr, reason = "approval", tools = { params.message } })
end

--- Request `id` of `bufnr` waits no more (its message goes); false when it did not wait.
local function settle(bufnr, id)
  local i = index_of(bufnr, id)
  if not i then
    return false
  end
  notify.retract(table.remove(waiting[bufnr], i).key)
  guard.agent_waits(bufnr, #waiting[bufnr] > 0)
  return true
end

--- `acp.settled {bufnr, id}`: it was answered, or cancelled.
function M.settled(params)
  settle(params.bufnr, params.id)
end

--- The requests waiting in `bufnr`, or nil when none waits.
local function waiting_in(bufnr)
  local list = waiting[bufnr]
  return list and #list > 0 and list or nil
end

--- The placeholders of the buffer's waiting requests, by id.
local function placeholders(bufnr)
  local found = {}
  for _, block in ipairs(ui.read(bufnr).blocks) do
    if block.kind == "permission" and index_of(bufnr, block.id) then
      found[block.id] = block
    end
  end
  return found
end

--- The waiting request the cursor is in (its placeholder), else the first that waits; nil when
--- none waits in `bufnr`.
function M.target(bufnr)
  local list = waiting_in(bufnr)
  if not list then
    return nil
  end
  if vim.api.nvim_get_current_buf() == bufnr then
    local row = vim.api.nvim_win_get_cursor(0)[1] - 1
    for id, block in pairs(placeholders(bufnr)) do
      if row >= block.row and row <= block.end_row then
        return list[index_of(bufnr, id)]
      end
    end
  end
  return list[1]
end

--- Answer request `id` of `bufnr` (`allow`, `allow_always` or `reject`).
function M.answer_id(bufnr, id, answer)
  if not settle(bufnr, id) then
    return false
  end
  host.notify("acp:answer", { bufnr = bufnr, id = id, answer = answer })
  return true
end

--- Answer the request under the cursor, else the first waiting in `bufnr`; false when none waits.
function M.answer(bufnr, answer)
  local entry = M.target(bufnr)
  return entry ~= nil and M.answer_id(bufnr, entry.id, answer)
end

--- `<C-]>` while requests wait: each whose placeholder's status was edited to `approved` or
--- `rejected` is answered so; the cursor goes to the first still waiting, and a message says
--- what it waits for. False when none waits (the step goes on as usual).
function M.cycle(bufnr)
  local list = waiting_in(bufnr)
  if not list then
    return false
  end
  local blocks = placeholders(bufnr)
  for _, entry in ipairs(vim.list_extend({}, list)) do
    local block = blocks[entry.id]
    local answer = block and EDITED[block.status]
    if answer then
      M.answer_id(bufnr, entry.id, block.always and answer == "allow" and "allow_always" or answer)
    end
  end
  local first = list[1]
  if first then
    local block = blocks[first.id]
    if block and vim.api.nvim_get_current_buf() == bufnr then
      vim.api.nvim_win_set_cursor(0, { block.end_row, 0 })
    end
    local more = #list > 1 and string.format(" (%d requests wait)", #list) or ""
    notify.warn("Approval needed: " .. first.message .. more .. " (" .. HINT .. ")", { key = first.key })
  end
  return true
end

--- `:Flemma tool:diff` on a waiting `edit` whose request carries a diff: the diff view, whose
--- approve allows it once and reject rejects it. False when the cursor is on none.
function M.diff(bufnr)
  local entry = M.target(bufnr)
  local block = entry and placeholders(bufnr)[entry.id]
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  if not (entry and entry.diff and block and row >= block.row and row <= block.end_row) then
    return false
  end
  local d = entry.diff
  review_diff.open({
    bufnr = bufnr,
    tool_id = entry.id,
    name = "edit",
    path = d.path,
    exists = d.exists,
    before = d.before,
    after = d.after,
    answer = function(answer)
      M.answer_id(bufnr, entry.id, answer)
    end,
  })
  return true
end

return M
