--- flemma.config.options.shared: what more than one section of the `setup()` schema
--- (`flemma.config.options.*`) writes the same way.
local S = require("flemma.config.dsl")

local M = {}

--- Marks an option as safe to set from any file (see `flemma.config.dsl`, `trust`).
function M.safe(node)
  return S.trust("safe", node)
end

--- The names of a table of presets (`presets`, `tools.presets`).
M.preset_name = { key_pattern = "^%$[%w_%-]+$", key_desc = "preset names start with '$'" }

return M
