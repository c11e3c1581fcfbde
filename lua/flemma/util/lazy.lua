--- Modules named at the top of a file and loaded when first used.
---
--- `local host = lazy.require("flemma.host")` names the dependency where a reader looks for it
--- and costs nothing at load time: the module itself is required the first time one of its
--- fields is read (or written). Start-up and the first chat buffer load only what they touch.
--- A module already loaded is handed back as it is. The stand-in only forwards field access:
--- it cannot be iterated or compared with the module, and it is no way around a require cycle
--- (test/unit/lua-requires.test.ts counts these requires like the others).
local M = {}

---@param name string a module name, as for `require`
---@return table
function M.require(name)
  local loaded = package.loaded[name]
  if type(loaded) == "table" then
    return loaded
  end
  return setmetatable({}, {
    __index = function(_, key)
      return require(name)[key]
    end,
    __newindex = function(_, key, value)
      require(name)[key] = value
    end,
  })
end

return M
