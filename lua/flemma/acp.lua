--- flemma.acp: what Neovim does for the chats' ACP agents (docs/agents.md): a permission request
--- the approval chain left to the user waits in the chat; `<M-CR>` or `:Flemma tool:approve`
--- allows it, `:Flemma tool:approve-always` allows it always, `:Flemma tool:reject` rejects it
--- (the reply streams meanwhile, so these answer it instead of acting on a block).
local lazy = require("flemma.util.lazy")
local host = lazy.require("flemma.host")
local notify = lazy.require("flemma.notify")

local M = {}

--- The request waiting in each buffer: `{ id, key }` by bufnr.
local waiting = {}

local function message_key(bufnr, id)
  return string.format("acp:%d:%s", bufnr, id)
end

--- `acp.permission {bufnr, id, message}`: the request waits for the user's answer.
function M.permission(params)
  local key = message_key(params.bufnr, params.id)
  waiting[params.bufnr] = { id = params.id, key = key }
  notify.warn(params.message .. " (<M-CR> or :Flemma tool:approve allows, :Flemma tool:reject rejects)", { key = key })
end

--- `acp.settled {bufnr, id}`: it was answered, or cancelled.
function M.settled(params)
  local entry = waiting[params.bufnr]
  if entry and entry.id == params.id then
    waiting[params.bufnr] = nil
    notify.retract(entry.key)
  end
end

--- Answer the request waiting in `bufnr` (`allow`, `allow_always` or `reject`); false when none
--- waits there.
function M.answer(bufnr, answer)
  local entry = waiting[bufnr]
  if not entry then
    return false
  end
  waiting[bufnr] = nil
  notify.retract(entry.key)
  host.notify("acp:answer", { bufnr = bufnr, id = entry.id, answer = answer })
  return true
end

return M
