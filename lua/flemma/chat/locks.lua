--- flemma.chat.locks: who hears of the buffer locks that flemma.buffer takes and releases, by
--- event: `locked(bufnr)` (its first owner took it), `released(bufnr)` (its last owner let go),
--- `changed(bufnr|nil)` (any lock taken or released; nil: every buffer's), `forgotten(bufnr)`
--- (the buffer was wiped). The modules that show or keep per-buffer state subscribe when they
--- load (the statusline, the turn gutter, the bufferline indicator, the cut-off reply); the keys'
--- guard is subscribed where the plugin is put together (flemma). Kept apart from the applier so
--- that subscribing loads nothing else.
local log = require("flemma.host.log")

local M = {}

local listeners = { locked = {}, released = {}, changed = {}, forgotten = {} }

---@param handlers table<"locked"|"released"|"changed"|"forgotten", fun(bufnr: integer|nil)>
function M.subscribe(handlers)
  for event, handler in pairs(handlers) do
    local list = listeners[event]
    if list == nil then
      error("flemma.chat.locks.subscribe: unknown event '" .. tostring(event) .. "'", 2)
    end
    list[#list + 1] = handler
  end
end

--- Said by flemma.buffer: each listener of `event` runs; one that fails is logged.
function M.tell(event, bufnr)
  for _, handler in ipairs(listeners[event]) do
    local ok, err = pcall(handler, bufnr)
    if not ok then
      log.write("error", string.format("buffer %s listener failed: %s", event, tostring(err)))
    end
  end
end

return M
