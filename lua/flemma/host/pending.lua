--- flemma.host.pending: the Lua → host calls waiting for their answer. `callback(err, result)`
--- of each runs exactly once: on the answer (`rpc.reply`, see flemma.rpc), on timeout, or when
--- the host that was asked goes away.
local log = require("flemma.host.log")

local M = {}

local H = { pending = {}, next_id = 0 }

--- Register a pending call; returns its id. `callback(err, result)` runs exactly once: on the
--- answer, on timeout, or when the host goes away.
function M.track(callback, timeout_ms, chan)
  H.next_id = H.next_id + 1
  local id = H.next_id
  local entry = { callback = callback, chan = chan }
  if timeout_ms and timeout_ms > 0 then
    entry.timer = vim.defer_fn(function()
      M.settle(id, false, string.format("no answer from the host after %d ms", timeout_ms))
    end, timeout_ms)
  end
  H.pending[id] = entry
  return id
end

function M.settle(id, ok, value)
  local entry = H.pending[id]
  if not entry then
    return
  end
  H.pending[id] = nil
  if entry.timer then
    pcall(function()
      entry.timer:stop()
      entry.timer:close()
    end)
  end
  local success, err
  if ok then
    success, err = pcall(entry.callback, nil, value)
  else
    success, err = pcall(entry.callback, value, nil)
  end
  if not success then
    log.write("error", "rpc callback failed: " .. tostring(err))
  end
end

--- Fail every pending call sent on `chan` (that host exited).
function M.fail_all(reason, chan)
  local ids = vim.tbl_keys(H.pending)
  table.sort(ids)
  for _, id in ipairs(ids) do
    if H.pending[id].chan == chan then
      M.settle(id, false, reason)
    end
  end
end

--- Calls queued while no host ran belong to the host that has just started.
function M.adopt(chan)
  for _, entry in pairs(H.pending) do
    if entry.chan == nil then
      entry.chan = chan
    end
  end
end

return M
