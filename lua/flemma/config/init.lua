--- flemma.config: the options given to `setup()`, validated against the schema and merged over
--- the defaults. Other modules read them with `get()`.
local schema = require("flemma.config.schema")

local M = {}

local H = {}

local PREFIX = "flemma.setup: "

--- A fresh, deep copy of every default value.
---@return table
function M.defaults()
  return schema.options:default_value()
end

--- Check user options without applying them.
--- Returns true, or false and a message naming the full option path and what was wrong.
---@param opts table|nil
---@return boolean ok
---@return string|nil err
function M.validate(opts)
  local _, err = H.prepare(opts)
  if err then
    return false, err
  end
  return true, nil
end

--- Validate `opts`, then merge them over the defaults (tables merge key by key, lists replace).
--- On invalid options this raises (without a traceback position) and keeps the previous values.
---@param opts table|nil
---@return table values
function M.setup(opts)
  local normalized, err = H.prepare(opts)
  if err then
    error(err, 0)
  end
  M.values = H.apply(normalized)
  return M.values
end

--- The current option values (the defaults until `setup()` succeeds).
---@return table
function M.get()
  return M.values
end

--- Alias-resolved copy of `opts` after validation, or nil and the error message.
---@return table|nil, string|nil
function H.prepare(opts)
  if opts == nil then
    return {}, nil
  end
  if type(opts) ~= "table" then
    return nil, string.format("%soptions must be a table, got %s", PREFIX, type(opts))
  end
  local normalized, alias_err = schema.normalize(schema.options, opts, "")
  if alias_err then
    return nil, PREFIX .. alias_err
  end
  local err = schema.options:check(normalized, "")
  if err then
    return nil, PREFIX .. err
  end
  return normalized, nil
end

--- Merge validated options over a fresh set of defaults.
---@param normalized table
---@return table
function H.apply(normalized)
  return schema.merge(schema.options, M.defaults(), normalized)
end

--- Where each option that is not at its default came from, by dotted path: "setup", or
--- "runtime (…)" for the session switches. Lists (and the `tools` list, as "tools") are leaves.
---@return table<string, string>
function M.origins()
  local out = {}
  local function walk(value, default, path)
    if type(value) == "table" and type(default) == "table" and not vim.islist(value) then
      local count = #value
      if count > 0 or #default > 0 then
        local list, base = {}, {}
        for i = 1, count do
          list[i] = value[i]
        end
        for i = 1, #default do
          base[i] = default[i]
        end
        if not vim.deep_equal(list, base) then
          out[path] = "setup"
        end
      end
      for key, item in pairs(value) do
        if type(key) == "string" then
          walk(item, default[key], path == "" and key or (path .. "." .. key))
        end
      end
      return
    end
    if not vim.deep_equal(value, default) then
      out[path] = "setup"
    end
  end
  walk(M.values, M.defaults(), "")
  local autopilot = require("flemma.autopilot").override()
  if autopilot ~= nil then
    out["tools.autopilot.enabled"] = "runtime (:Flemma autopilot:" .. (autopilot and "enable" or "disable") .. ")"
  end
  local sandbox = require("flemma.sandbox").override()
  if sandbox ~= nil then
    out["sandbox.enabled"] = "runtime (:Flemma sandbox:" .. (sandbox and "enable" or "disable") .. ")"
  end
  return out
end

--- The current values; the defaults until `setup()` succeeds.
---@type table
M.values = M.defaults()

return M
