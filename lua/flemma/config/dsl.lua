--- flemma.config.dsl: the small schema language the `setup()` options are written in: node kinds,
--- defaults (lazy ones too), strict objects, trust classes, and validation that reports the first
--- problem with its full dotted path. `flemma.config.merge` applies a schema to option tables;
--- `flemma.config.schema` re-exports both with the option tree (`options`).
local suggest = require("flemma.util.suggest")

local M = {}

local H = {}

---@class flemma.schema.Node
---@field kind string
---@field default any
---@field optional boolean|nil
---@field coerce (fun(value: any): any)|nil  applied to a user value before it is merged
local Node = {}
Node.__index = Node

local LAZY = {}

-- ---------------------------------------------------------------------------------------------
-- Helpers
-- ---------------------------------------------------------------------------------------------

function H.node(kind, props)
  props = props or {}
  props.kind = kind
  return setmetatable(props, Node)
end

--- `path` + `key` as shown to the user: `a.b`, `a[2]`, `presets.$name`.
function H.join(path, key)
  if type(key) == "number" then
    return string.format("%s[%d]", path, key)
  end
  local k = tostring(key)
  if not k:match("^[%a_$][%w_$%-]*$") then
    k = string.format("[%q]", k)
    return path .. k
  end
  if path == "" then
    return k
  end
  return path .. "." .. k
end

--- A short description of a value for error messages: `string "x"`, `number 3`, `table`.
function H.show(value)
  local t = type(value)
  if t == "string" then
    local text = value
    if #text > 40 then
      text = text:sub(1, 37) .. "..."
    end
    return "string " .. vim.inspect(text)
  elseif t == "number" or t == "boolean" then
    return t .. " " .. tostring(value)
  elseif t == "table" then
    if H.is_list(value) then
      return next(value) == nil and "an empty table" or "a list"
    end
    return "a table"
  end
  return t
end

function H.is_list(value)
  if type(value) ~= "table" then
    return false
  end
  local count = 0
  for _ in pairs(value) do
    count = count + 1
    if value[count] == nil then
      return false
    end
  end
  return true
end

--- Keys in a stable order: numbers first (ascending), then strings, then anything else.
function H.sorted_keys(tbl)
  local keys = vim.tbl_keys(tbl)
  local rank = { number = 1, string = 2 }
  table.sort(keys, function(a, b)
    local ra, rb = rank[type(a)] or 3, rank[type(b)] or 3
    if ra ~= rb then
      return ra < rb
    end
    if ra == 3 then
      return tostring(a) < tostring(b)
    end
    return a < b
  end)
  return keys
end

function H.copy(value)
  if type(value) == "table" and getmetatable(value) == LAZY then
    return value.fn()
  end
  return vim.deepcopy(value)
end

function H.mismatch(node, value, path)
  return string.format("option '%s' must be %s, got %s", path, node:describe(), H.show(value))
end

function H.bounds(what, min, max)
  if min and max then
    return string.format("%s between %s and %s", what, min, max)
  elseif min then
    return string.format("%s >= %s", what, min)
  elseif max then
    return string.format("%s <= %s", what, max)
  end
  return what
end

--- The largest integer a number holds exactly (2^53 - 1); the host reads options as such numbers.
local MAX_EXACT = 9007199254740991

--- Within the node's bounds, and a finite number (no inf, no NaN) of an exact magnitude.
function H.within(node, value)
  if value ~= value or value >= math.huge or value <= -math.huge or math.abs(value) > MAX_EXACT then
    return false
  end
  return (node.min == nil or value >= node.min) and (node.max == nil or value <= node.max)
end

--- `what` with the node's unit, if it has one: `an integer between 1 and 2147483 (seconds)`.
function H.with_unit(node, what)
  return node.unit and string.format("%s (%s)", what, node.unit) or what
end

--- The Lua type a node expects, used to pick the union member that explains a mismatch best.
local LUA_TYPE = {
  string = "string",
  enum = "string",
  integer = "number",
  number = "number",
  boolean = "boolean",
  func = "function",
  list = "table",
  map = "table",
  object = "table",
  table = "table",
}

-- ---------------------------------------------------------------------------------------------
-- Node methods
-- ---------------------------------------------------------------------------------------------

--- A phrase for "must be …", e.g. `an integer >= 0`.
---@return string
function Node:describe()
  local kind = self.kind
  if self.desc then
    return self.desc
  elseif kind == "string" then
    return "a string"
  elseif kind == "boolean" then
    return "a boolean"
  elseif kind == "integer" then
    return H.with_unit(self, H.bounds("an integer", self.min, self.max))
  elseif kind == "number" then
    return H.with_unit(self, H.bounds("a number", self.min, self.max))
  elseif kind == "enum" then
    local quoted = vim.tbl_map(function(v)
      return string.format("%q", v)
    end, self.values)
    return "one of " .. table.concat(quoted, ", ")
  elseif kind == "literal" then
    return tostring(self.value)
  elseif kind == "func" then
    return "a function"
  elseif kind == "list" then
    local what = "a list of " .. self.item:plural()
    if self.count then
      what = string.format("a list of %d %s", self.count, self.item:plural())
    end
    return what
  elseif kind == "map" then
    return "a table of " .. self.value:plural() .. " by name"
  elseif kind == "union" then
    local parts = vim.tbl_map(function(member)
      return member:describe()
    end, self.members)
    if #parts == 1 then
      return parts[1]
    end
    return table.concat(parts, ", ", 1, #parts - 1) .. " or " .. parts[#parts]
  end
  return "a table"
end

--- The plural noun used inside "a list of …".
---@return string
function Node:plural()
  local nouns = {
    string = "strings",
    enum = "strings",
    integer = "integers",
    number = "numbers",
    boolean = "booleans",
    func = "functions",
    list = "lists",
    map = "tables",
    object = "tables",
    table = "tables",
  }
  return nouns[self.kind] or "values"
end

--- Check `value` (never nil) against the node; returns an error message or nil.
---@param value any
---@param path string  dotted path of `value`
---@return string|nil
function Node:check(value, path)
  local kind = self.kind
  if kind == "string" then
    if
      type(value) ~= "string"
      or (self.pattern and not value:match(self.pattern))
      or (self.valid and not self.valid(value))
    then
      return H.mismatch(self, value, path)
    end
  elseif kind == "boolean" then
    if type(value) ~= "boolean" then
      return H.mismatch(self, value, path)
    end
  elseif kind == "integer" then
    if type(value) ~= "number" or value ~= math.floor(value) or not H.within(self, value) then
      return H.mismatch(self, value, path)
    end
  elseif kind == "number" then
    if type(value) ~= "number" or value ~= value or not H.within(self, value) then
      return H.mismatch(self, value, path)
    end
  elseif kind == "enum" then
    if type(value) ~= "string" or not self:enum_value(value) then
      return H.mismatch(self, value, path)
    end
  elseif kind == "literal" then
    if value ~= self.value then
      return H.mismatch(self, value, path)
    end
  elseif kind == "func" then
    if type(value) ~= "function" then
      return H.mismatch(self, value, path)
    end
  elseif kind == "table" then
    if type(value) ~= "table" then
      return H.mismatch(self, value, path)
    end
  elseif kind == "list" then
    return self:check_list(value, path)
  elseif kind == "map" then
    return self:check_map(value, path)
  elseif kind == "object" then
    return self:check_object(value, path)
  elseif kind == "union" then
    return self:check_union(value, path)
  end
  return nil
end

--- The canonical spelling of an enum value (enums may ignore case), or nil.
function Node:enum_value(value)
  for _, allowed in ipairs(self.values) do
    if value == allowed or (self.ignore_case and value:lower() == allowed:lower()) then
      return allowed
    end
  end
  return nil
end

function Node:check_list(value, path)
  if type(value) ~= "table" then
    return H.mismatch(self, value, path)
  end
  if not H.is_list(value) then
    for _, key in ipairs(H.sorted_keys(value)) do
      if type(key) ~= "number" then
        return string.format("option '%s' must be %s, got a table with key %s", path, self:describe(), vim.inspect(key))
      end
    end
    return string.format("option '%s' must be %s, got a table with gaps", path, self:describe())
  end
  if self.count and #value ~= self.count then
    return string.format("option '%s' must be %s, got %d item(s)", path, self:describe(), #value)
  end
  for index, item in ipairs(value) do
    local err = self.item:check(item, H.join(path, index))
    if err then
      return err
    end
  end
  return nil
end

function Node:check_map(value, path)
  if type(value) ~= "table" then
    return H.mismatch(self, value, path)
  end
  for _, key in ipairs(H.sorted_keys(value)) do
    if type(key) ~= "string" or (self.key_pattern and not key:match(self.key_pattern)) then
      return string.format(
        "option '%s' has an invalid name %s: %s",
        path,
        vim.inspect(key),
        self.key_desc or "names must be strings"
      )
    end
    local err = self.value:check(value[key], H.join(path, key))
    if err then
      return err
    end
  end
  return nil
end

--- Option names accepted by an object, aliases included (for "did you mean").
function Node:known_keys()
  local names = vim.tbl_keys(self.fields)
  for alias in pairs(self.aliases or {}) do
    names[#names + 1] = alias
  end
  table.sort(names)
  return names
end

function Node:check_object(value, path)
  if type(value) ~= "table" then
    return H.mismatch(self, value, path)
  end
  for _, key in ipairs(H.sorted_keys(value)) do
    local item = value[key]
    if type(key) == "number" and self.list then
      if key < 1 or key ~= math.floor(key) or (key > 1 and value[key - 1] == nil) then
        return string.format("option '%s' has a list part with gaps (index %s)", path, tostring(key))
      end
      local err = self.list:check(item, H.join(path, key))
      if err then
        return err
      end
    elseif type(key) == "string" and self.fields[key] then
      local err = self.fields[key]:check(item, H.join(path, key))
      if err then
        return err
      end
    elseif type(key) == "string" and self.extra and type(item) == "table" then
      -- Open objects take other keys whose value fits `extra` (a custom tool's own settings).
      local err = self.extra:check(item, H.join(path, key))
      if err then
        return err
      end
    elseif type(key) == "string" then
      local full = H.join(path, key)
      local guess = suggest.closest(key, self:known_keys())
      if guess then
        return string.format("unknown option '%s' (did you mean '%s'?)", full, H.join(path, guess))
      end
      return string.format("unknown option '%s'", full)
    else
      local where = path == "" and "the options" or string.format("option '%s'", path)
      return string.format("%s must use names as keys, got %s key %s", where, type(key), vim.inspect(key))
    end
  end
  return nil
end

function Node:check_union(value, path)
  local same_type = {}
  for _, member in ipairs(self.members) do
    if member:check(value, path) == nil then
      return nil
    end
    if LUA_TYPE[member.kind] == type(value) then
      same_type[#same_type + 1] = member
    end
  end
  -- A table that fits one member's shape is best explained by that member (it names the nested
  -- key that is wrong); scalars get the union's own description.
  if type(value) == "table" and #same_type > 1 then
    local list_like = next(value) ~= nil and H.is_list(value)
    same_type = vim.tbl_filter(function(member)
      return (member.kind == "list") == list_like
    end, same_type)
  end
  if #same_type == 1 and type(value) == "table" then
    return same_type[1]:check(value, path)
  end
  return H.mismatch(self, value, path)
end

--- The member of a union that accepts `value`, or nil.
function Node:member_for(value)
  for _, member in ipairs(self.members) do
    if member:check(value, "") == nil then
      return member
    end
  end
  return nil
end

--- A fresh copy of the node's default value (objects build theirs from their fields).
---@return any
function Node:default_value()
  if self.kind == "object" and self.default == nil then
    local result = {}
    for name, field in pairs(self.fields) do
      result[name] = field:default_value()
    end
    for index, item in ipairs(self.list_default or {}) do
      result[index] = H.copy(item)
    end
    return result
  end
  return H.copy(self.default)
end

-- ---------------------------------------------------------------------------------------------
-- Constructors (the DSL)
-- ---------------------------------------------------------------------------------------------

--- A default computed when defaults are built (e.g. paths from `stdpath()`).
---@param fn fun(): any
function M.lazy(fn)
  return setmetatable({ fn = fn }, LAZY)
end

--- A string; `opts.pattern` (Lua pattern) and `opts.valid` (a function of the string, true when
--- it is valid) with `opts.desc` to describe it.
function M.string(default, opts)
  opts = opts or {}
  return H.node("string", { default = default, pattern = opts.pattern, valid = opts.valid, desc = opts.desc })
end

function M.boolean(default)
  return H.node("boolean", { default = default })
end

--- An integer with optional bounds and the unit its messages name: `M.integer(2, { min = 0 })`,
--- `M.integer(30, { min = 1, max = 2147483, unit = "seconds" })`. Infinity and NaN never pass.
function M.integer(default, opts)
  opts = opts or {}
  return H.node("integer", { default = default, min = opts.min, max = opts.max, unit = opts.unit })
end

--- A number with optional bounds and unit, as `M.integer`.
function M.number(default, opts)
  opts = opts or {}
  return H.node("number", { default = default, min = opts.min, max = opts.max, unit = opts.unit })
end

--- One of a fixed set of strings; `opts.ignore_case` accepts any capitalisation.
function M.enum(values, default, opts)
  opts = opts or {}
  return H.node("enum", { values = values, default = default, ignore_case = opts.ignore_case })
end

--- Exactly this value (e.g. `false` in "a string or false").
function M.literal(value)
  return H.node("literal", { value = value })
end

function M.func(default)
  return H.node("func", { default = default })
end

--- Any table, unchecked inside; replaced as a whole when merged.
function M.table(default)
  return H.node("table", { default = default })
end

--- A list of `item`; `opts.count` requires an exact length. Lists replace when merged.
function M.list(item, default, opts)
  opts = opts or {}
  return H.node("list", { item = item, default = default, count = opts.count })
end

--- String keys to `value`; `opts.key_pattern` / `opts.key_desc` restrict the names.
function M.map(value, default, opts)
  opts = opts or {}
  return H.node("map", { value = value, default = default, key_pattern = opts.key_pattern, key_desc = opts.key_desc })
end

--- The first member that accepts the value wins; `opts.coerce` normalizes accepted values.
function M.union(members, default, opts)
  opts = opts or {}
  return H.node("union", { members = members, default = default, coerce = opts.coerce })
end

--- A table with known keys. Unknown keys are errors (`strict` is the only mode).
--- `opts.list` accepts an array part of that item type (default `opts.list_default`);
--- `opts.aliases` maps an alternative name to a path (list of keys) relative to this object;
--- `opts.extra` (a node for tables) admits other keys whose value is a table of that shape;
--- `opts.list_trust` is the trust class (`M.trust`) of the array part.
function M.object(fields, opts)
  opts = opts or {}
  if opts.strict == false then
    error("flemma.config.schema: non-strict objects are not supported", 2)
  end
  return H.node("object", {
    fields = fields or {},
    list = opts.list,
    list_default = opts.list_default,
    list_trust = opts.list_trust,
    aliases = opts.aliases,
    extra = opts.extra,
    default = opts.default,
  })
end

--- The same node, marked with how a frontmatter may change it in a file that is not trusted
--- (docs/security.md, "Option classes"). An option without a mark needs trust; a mark on an
--- object or a union covers what is under it, unless a deeper option has a mark of its own.
---   "safe"              any change
---   "subset"            a list changed to hold only items it held (removals)
---   "superset"          a list changed to keep every item it held (additions)
---   "lower", "higher"   a number changed to one no higher (no lower) than it was
---   { only = { … } }    changed to one of these values
--- A change that leaves the value as it was is always applied.
function M.trust(class, node)
  local copy = setmetatable(vim.tbl_extend("force", {}, node), Node)
  copy.trust = class
  return copy
end

--- The same node with no default: leaving it out means "unset".
function M.optional(node)
  local copy = setmetatable(vim.tbl_extend("force", {}, node), Node)
  copy.optional = true
  copy.default = nil
  return copy
end

-- For flemma.config.merge, which walks option tables the same way (not part of the schema's API).
M.join = H.join
M.sorted_keys = H.sorted_keys
M.copy = H.copy

return M
