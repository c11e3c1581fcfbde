--- Modules named at the top of a file and loaded when first used.
---
--- `local host = lazy.require("flemma.host")` names the dependency where a reader looks for it
--- and costs nothing at load time: the module itself is required the first time one of its
--- fields is read (or written). Start-up and the first chat buffer load only what they touch.
--- A module already loaded is handed back as it is; a stand-in, once its module is loaded, reads
--- and writes straight through to it. The stand-in only forwards field access: it cannot be
--- iterated or compared with the module, and it is no way around a require cycle
--- (test/unit/lua-requires.test.ts counts these requires like the others).
local M = {}

--- The module name of each stand-in not used yet.
local names = setmetatable({}, { __mode = "k" })

local function load(proxy)
  local module = require(names[proxy])
  names[proxy] = nil
  setmetatable(proxy, { __index = module, __newindex = module })
  return module
end

local STAND_IN = {
  __index = function(proxy, key)
    return load(proxy)[key]
  end,
  __newindex = function(proxy, key, value)
    load(proxy)[key] = value
  end,
}

---@param name string a module name, as for `require`
---@return table
function M.require(name)
  local loaded = package.loaded[name]
  if type(loaded) == "table" then
    return loaded
  end
  local proxy = setmetatable({}, STAND_IN)
  names[proxy] = name
  return proxy
end

return M
