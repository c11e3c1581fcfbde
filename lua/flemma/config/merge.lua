--- flemma.config.merge: option tables through a schema (`flemma.config.dsl`): alias keys moved to
--- their canonical place, then a validated value merged over the defaults.
local dsl = require("flemma.config.dsl")

local M = {}

--- Move alias keys to their canonical place. Returns a copy (input tables are never changed),
--- or nil and an error when both the alias and the canonical key are set.
---@param node flemma.schema.Node
---@param value any
---@param path string
---@return any, string|nil
function M.normalize(node, value, path)
  if node.kind ~= "object" or type(value) ~= "table" then
    return value, nil
  end
  local out = {}
  for key, item in pairs(value) do
    out[key] = item
  end
  if node.aliases then
    for _, alias in ipairs(dsl.sorted_keys(node.aliases)) do
      if out[alias] ~= nil then
        local target = node.aliases[alias]
        local parent = out
        for i = 1, #target - 1 do
          local step = parent[target[i]]
          if step ~= nil and type(step) ~= "table" then
            break -- the type error is reported by validation
          end
          local fresh = {}
          for k, v in pairs(step or {}) do
            fresh[k] = v
          end
          parent[target[i]] = fresh
          parent = fresh
        end
        local last = target[#target]
        local canonical = path
        for _, step in ipairs(target) do
          canonical = dsl.join(canonical, step)
        end
        if parent[last] ~= nil then
          return nil,
            string.format(
              "option '%s' is another name for '%s': set only one of them",
              dsl.join(path, alias),
              canonical
            )
        end
        parent[last] = out[alias]
        out[alias] = nil
      end
    end
  end
  for key, item in pairs(out) do
    local field = type(key) == "string" and node.fields[key]
    if field and type(item) == "table" then
      local normalized, err = M.normalize(field, item, dsl.join(path, key))
      if err then
        return nil, err
      end
      out[key] = normalized
    end
  end
  return out, nil
end

--- Merge a validated user value over `base` (which is modified and returned). Objects and maps
--- merge key by key, lists and scalars replace, and a table given where the schema expects an
--- object merges into the default object.
---@param node flemma.schema.Node|nil
---@param base any
---@param value any
---@return any
function M.merge(node, base, value)
  if value == nil then
    return base
  end
  if node == nil then
    return dsl.copy(value)
  end
  if node.coerce then
    value = node.coerce(value)
  end
  local kind = node.kind
  if kind == "object" then
    local result = type(base) == "table" and base or {}
    local has_list = false
    for key, item in pairs(value) do
      if type(key) == "string" then
        result[key] = M.merge(node.fields[key], result[key], item)
      elseif type(key) == "number" then
        has_list = true
      end
    end
    if has_list then
      for index = #result, 1, -1 do
        result[index] = nil
      end
      for index, item in ipairs(value) do
        result[index] = dsl.copy(item)
      end
    end
    return result
  elseif kind == "map" then
    local result = type(base) == "table" and base or {}
    for key, item in pairs(value) do
      result[key] = M.merge(node.value, result[key], item)
    end
    return result
  elseif kind == "union" then
    local member = node:member_for(value)
    if member and (member.kind == "object" or member.kind == "map") and type(base) == "table" then
      return M.merge(member, base, value)
    end
    return dsl.copy(value)
  elseif kind == "enum" and type(value) == "string" then
    return node:enum_value(value) or value
  end
  return dsl.copy(value)
end

return M
