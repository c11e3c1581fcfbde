--- flemma.config.options.shared: what more than one section of the `setup()` schema
--- (`flemma.config.options.*`) writes the same way.
local S = require("flemma.config.dsl")

local M = {}

--- Marks an option as safe to set from any file (see `flemma.config.dsl`, `trust`).
function M.safe(node)
  return S.trust("safe", node)
end

--- The longest delay a timer takes: 2^31 - 1 ms (about 24.8 days). Node's `setTimeout` (and so
--- every timeout the host arms) fires at once past it, so a setting that becomes a timer is bounded
--- by it (issue 28: `parameters.timeout = 999999999` made every request fail at once).
M.MAX_TIMER_MS = 2147483647
M.MAX_TIMER_SECONDS = 2147483

--- A delay in whole seconds that becomes a timer: `min` (default 1) up to `MAX_TIMER_SECONDS`.
function M.seconds(default, min)
  return S.integer(default, { min = min or 1, max = M.MAX_TIMER_SECONDS, unit = "seconds" })
end

--- A delay in milliseconds that becomes a timer: `min` (default 0) up to `MAX_TIMER_MS`.
function M.milliseconds(default, min)
  return S.integer(default, { min = min or 0, max = M.MAX_TIMER_MS, unit = "milliseconds" })
end

--- A size in bytes the host holds in memory as text (a fetched page, an undo record's file):
--- `min` up to 256 MiB (a JavaScript string holds at most about 512 MiB, base64 a third more).
function M.bytes_in_memory(default, min)
  return S.integer(default, { min = min, max = 268435456, unit = "bytes" })
end

--- A share written as a percentage, `"1%"` to `"100%"`.
function M.percent(default, example)
  return S.string(default, {
    pattern = "^%d+%%$",
    valid = function(value)
      local n = tonumber(value:sub(1, -2))
      return n ~= nil and n >= 1 and n <= 100
    end,
    desc = string.format('a percentage from "1%%" to "100%%" such as "%s"', example),
  })
end

--- The names of a table of presets (`presets`, `tools.presets`).
M.preset_name = { key_pattern = "^%$[%w_%-]+$", key_desc = "preset names start with '$'" }

return M
