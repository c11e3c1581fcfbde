--- flemma.config.schema: a small schema DSL (types, defaults, strict objects) and the schema of
--- every `setup()` option. Validation reports the first problem with its full dotted path.
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

function H.within(node, value)
  return (node.min == nil or value >= node.min) and (node.max == nil or value <= node.max)
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
    return H.bounds("an integer", self.min, self.max)
  elseif kind == "number" then
    return H.bounds("a number", self.min, self.max)
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
    if type(value) ~= "string" or (self.pattern and not value:match(self.pattern)) then
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

--- A string; `opts.pattern` (Lua pattern) with `opts.desc` to describe it.
function M.string(default, opts)
  opts = opts or {}
  return H.node("string", { default = default, pattern = opts.pattern, desc = opts.desc })
end

function M.boolean(default)
  return H.node("boolean", { default = default })
end

--- An integer with optional bounds: `M.integer(2, { min = 0 })`.
function M.integer(default, opts)
  opts = opts or {}
  return H.node("integer", { default = default, min = opts.min, max = opts.max })
end

function M.number(default, opts)
  opts = opts or {}
  return H.node("number", { default = default, min = opts.min, max = opts.max })
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

-- ---------------------------------------------------------------------------------------------
-- Operations on option tables
-- ---------------------------------------------------------------------------------------------

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
    for _, alias in ipairs(H.sorted_keys(node.aliases)) do
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
          canonical = H.join(canonical, step)
        end
        if parent[last] ~= nil then
          return nil,
            string.format("option '%s' is another name for '%s': set only one of them", H.join(path, alias), canonical)
        end
        parent[last] = out[alias]
        out[alias] = nil
      end
    end
  end
  for key, item in pairs(out) do
    local field = type(key) == "string" and node.fields[key]
    if field and type(item) == "table" then
      local normalized, err = M.normalize(field, item, H.join(path, key))
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
    return H.copy(value)
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
        result[index] = H.copy(item)
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
    return H.copy(value)
  elseif kind == "enum" and type(value) == "string" then
    return node:enum_value(value) or value
  end
  return H.copy(value)
end

-- ---------------------------------------------------------------------------------------------
-- The option tree (behaviour.md §6.2, plus the `host` section)
-- ---------------------------------------------------------------------------------------------

local S = M

local BUFFER_DIR = "urn:flemma:buffer:path"
local SEARCH_EXCLUDES = { ".git", "node_modules", "__pycache__", ".venv", "target", "dist", "build", "vendor" }
local THINKING_LEVELS = { "minimal", "low", "medium", "high", "max" }
local POSITIONS = { "top", "bottom", "top left", "top right", "bottom left", "bottom right" }
local BUILTIN_TOOLS = { "bash", "edit", "find", "grep", "ls", "read", "write" }

--- A highlight value: a group name or expression string, or a table (attributes or {dark, light}).
local function style(default)
  return S.union({ S.string(), S.table() }, default)
end

--- Marks an option as safe to set from any file (see `M.trust`).
local function safe(node)
  return S.trust("safe", node)
end

local function string_or_false(default)
  return S.union({ S.string(), S.literal(false) }, default)
end

local function thinking()
  return S.union({
    S.enum(THINKING_LEVELS),
    S.number(nil, { min = 0 }),
    S.literal(false),
    S.object({
      level = S.optional(S.union({ S.enum(THINKING_LEVELS), S.number(nil, { min = 0 }), S.literal(false) })),
      foreign = S.optional(S.enum({ "preserve", "drop" })),
    }),
  }, { level = "high", foreign = "preserve" })
end

--- The general request parameters; `with_defaults = false` for the per-provider copies, where
--- an unset key means "use the general value".
local function general_parameters(with_defaults)
  local function pick(node)
    return with_defaults and node or S.optional(node)
  end
  return {
    max_tokens = safe(pick(S.union({
      S.integer(nil, { min = 1 }),
      S.string(nil, { pattern = "^%d+%%$", desc = 'a percentage such as "50%"' }),
    }, "50%"))),
    temperature = safe(S.optional(S.number(nil, { min = 0 }))),
    timeout = safe(pick(S.integer(600, { min = 1 }))),
    connect_timeout = safe(pick(S.integer(10, { min = 1 }))),
    -- A shared file can only make its own requests fail sooner or wait longer.
    stream_idle_timeout = safe(pick(S.integer(60, { min = 1 }))),
    cache_retention = safe(pick(S.enum({ "short", "long", "none" }, "short"))),
    thinking = safe(pick(thinking())),
  }
end

local function provider_parameters(specific)
  -- `base_url`: where the provider's API lives (an OpenAI-compatible server, a proxy, a test
  -- server); unset means the SDK's default or its standard *_BASE_URL environment variable.
  -- Where requests (and the key) go: needs trust.
  specific = vim.tbl_extend("error", { base_url = S.optional(S.string()) }, specific)
  return S.object(vim.tbl_extend("error", general_parameters(false), specific))
end

local function search_tool()
  return S.object({
    cwd = S.string(BUFFER_DIR),
    exclude = S.trust("superset", S.list(S.string(), SEARCH_EXCLUDES)),
  })
end

--- The default of `ui.statusline.format`, in the `.chat` template syntax (`{{ expr }}`,
--- `{% lua %}`); the variables are those of `require("flemma.statusline").variables()`.
--- `tools.policy` and its per-provider layers.
local function tool_policy()
  local layer = {
    profile = S.optional(S.string()),
    allow = S.optional(S.list(S.string())),
    deny = S.optional(S.list(S.string())),
  }
  return S.object({
    profile = S.optional(S.string()),
    allow = S.trust("subset", S.list(S.string(), {})),
    deny = S.trust("superset", S.list(S.string(), {})),
    -- User profiles: a list of patterns, or { extends = "<profile>", allow = {…}, deny = {…} }.
    profiles = S.map(
      S.union({
        S.list(S.string()),
        S.object({
          extends = S.optional(S.string()),
          allow = S.optional(S.list(S.string())),
          deny = S.optional(S.list(S.string())),
        }),
      }),
      {}
    ),
    providers = S.map(S.object(layer), {}),
  })
end

local function statusline_format()
  return "{{ model.name or model.provider }}"
    .. "{% if thinking.level then %} ({{ thinking.level }}){% end %}"
    .. "{% if session.requests > 0 then %} · {{ session.requests }} req"
    .. " ${{ string.format('%.2f', session.cost) }}{% end %}"
    .. "{% if context then %} · {{ context.text }}{% end %}"
    .. "{% if busy == 'request' then %} · request…{% elseif busy == 'tools' then %} · tools…"
    .. "{% elseif booting then %} · booting…{% end %}"
end

local preset_name = { key_pattern = "^%$[%w_%-]+$", key_desc = "preset names start with '$'" }

-- Trust classes (`S.trust`, docs/security.md): what a frontmatter may change in a file that is
-- not trusted. Unmarked options need trust, so a new option is refused there until it is marked.
M.options = S.object({
  -- The providers' own endpoints, with the user's own credentials.
  provider = safe(S.string("anthropic")),
  model = safe(S.optional(S.string())),

  parameters = S.object(vim.tbl_extend("error", general_parameters(true), {
    anthropic = provider_parameters({
      thinking_budget = safe(S.optional(S.integer(nil, { min = 0 }))),
      effort = safe(S.optional(S.enum({ "low", "medium", "high", "xhigh", "max" }))),
    }),
    openai = provider_parameters({
      reasoning = safe(S.optional(S.string())),
      reasoning_summary = safe(S.optional(S.string())),
      experimental = safe(S.object({ phase = S.boolean(true) })),
    }),
    -- The project and the location are part of the endpoint (and of who is billed): need trust.
    vertex = provider_parameters({
      project_id = S.optional(S.string()),
      location = S.string("global"),
      thinking_budget = safe(S.optional(S.integer(nil, { min = 0 }))),
    }),
    moonshot = provider_parameters({
      prompt_cache_key = safe(S.optional(S.string())),
    }),
    -- The offline demo provider (`provider = "demo"`, `npm run demo`).
    demo = provider_parameters({
      delay_ms = safe(S.integer(40, { min = 0 })),
    }),
    gemini = provider_parameters({
      thinking_budget = safe(S.optional(S.integer(nil, { min = 0 }))),
    }),
    -- Any server that speaks OpenAI's Chat Completions (Ollama, llama.cpp, LM Studio, vLLM…).
    openai_compatible = provider_parameters({
      -- The variable that holds the key, for servers that want one.
      api_key_env = S.optional(S.string()),
    }),
  })),

  -- Switch presets (`:Flemma switch $name`): a modeline string or a table.
  presets = S.map(S.union({ S.string(), S.table() }), {}, preset_name),

  tools = S.object({
    require_approval = S.trust({ only = { true } }, S.boolean(true)),
    -- Checked on what the list approves and denies, presets expanded (less, never more).
    auto_approve = S.trust("subset", S.union({ S.list(S.string()), S.func(), S.string() }, { "$default" })),
    auto_approve_sandboxed = S.trust({ only = { false } }, S.boolean(true)),
    -- Path globs added to the built-in sensitive places (docs/approval.md): never approved
    -- automatically, hidden from sandboxed commands. `~` and `${VAR}` are expanded. Adding is safe
    -- anywhere; removing one needs trust.
    sensitive_paths = S.trust("superset", S.list(S.string(), {})),
    -- Approval presets (`$name` → approve/deny lists); these override the built-ins by name.
    presets = S.map(
      S.object({
        approve = S.optional(S.list(S.string())),
        deny = S.optional(S.list(S.string())),
      }),
      {},
      preset_name
    ),
    autopilot = S.trust(
      { only = { false } },
      S.union({
        S.boolean(),
        S.object({
          enabled = S.trust({ only = { false } }, S.boolean(true)),
          max_turns = S.trust("lower", S.integer(100, { min = 1 })),
          -- Milliseconds between a finished step and the automatic continue; an edit of the buffer
          -- meanwhile cancels the continue (0: on the next tick).
          resume_delay = S.trust("higher", S.integer(0, { min = 0 })),
        }),
      }, { enabled = true, max_turns = 100, resume_delay = 0 }, {
        coerce = function(value)
          if type(value) == "boolean" then
            return { enabled = value }
          end
          return value
        end,
      })
    ),
    max_concurrent = safe(S.integer(2, { min = 0 })),
    default_timeout = safe(S.integer(30, { min = 1 })),
    show_spinner = safe(S.boolean(true)),
    -- Seconds after which a running tool moves to the background by itself (0: never).
    background_after = safe(S.integer(0, { min = 0 })),
    cursor_after_result = safe(S.enum({ "result", "stay", "next" }, "result")),
    -- What `write`, `edit`, `file_write` (and any tool writing through `ctx.sandbox.open_for_write`)
    -- keep of a file before changing it, for `:Flemma tool:undo` (docs/tools.md, "Undo and review"):
    -- files over `max_bytes` are not kept; the oldest records go once all of them pass
    -- `max_total_bytes` or are older than `max_age_days`. Turning undo on is safe anywhere; off, or
    -- other bounds, need trust (a chat must not quietly remove the user's way back).
    undo = S.object({
      enabled = S.trust({ only = { true } }, S.boolean(true)),
      max_bytes = S.integer(1048576, { min = 0 }),
      max_total_bytes = S.integer(52428800, { min = 0 }),
      max_age_days = S.integer(14, { min = 0 }),
    }),
    -- How tools reach the model: "native" (the provider's tool calling) or "xml" (tools described
    -- in the system prompt, XML tool blocks in the reply; docs/tools.md, "XML tool calling"). A
    -- table picks per provider and model: { default = "native", openai_compatible = "xml",
    -- ["openai_compatible:llama*"] = "xml" } (the most specific key wins).
    calling = safe(S.union({ S.enum({ "native", "xml" }), S.map(S.enum({ "native", "xml" })) }, "native")),
    modules = S.list(S.string(), {}),
    -- Declarative tools (YAML/JSON files, docs/tools.md): the directories to load, the project's
    -- `.flemma/tools` (opt-in: such files can run commands), and the environment variables their
    -- templates may read with `${NAME}`.
    declarative = S.object({
      dirs = S.list(S.string(), {}),
      project = S.boolean(false),
      env = S.list(S.string(), {}),
    }),
    -- Middleware around every tool's execution (docs/tools.md, "Middleware").
    middleware = S.object({
      logging = S.union({
        S.boolean(),
        S.object({ redact = S.optional(S.list(S.string())) }),
      }, false),
      rate_limit = S.object({
        mode = S.enum({ "wait", "fail" }, "wait"),
        -- tool name → "1/s", "10/m", "2/500ms" or { calls = 1, per = 2 } (seconds)
        limits = S.map(S.union({ S.string(), S.table() }), {}),
      }),
      retry = S.union({
        S.literal(false),
        S.object({
          attempts = S.integer(3, { min = 1 }),
          backoff = S.integer(500, { min = 0 }),
        }),
      }, { attempts = 3, backoff = 500 }),
    }),
    truncate = S.object({
      output_path_format = S.string("${TMPDIR:-/tmp}/flemma_{{ source }}_{{ path }}_{{ id }}.txt"),
    }),
    mcporter = S.object({
      enabled = S.boolean(false),
      path = S.string("mcporter"),
      timeout = S.integer(60, { min = 1 }),
      startup = S.object({ concurrency = S.integer(4, { min = 1 }) }),
      include = S.list(S.string(), {}),
      exclude = S.list(S.string(), {}),
    }),
    bash = S.object({
      shell = S.optional(S.string()),
      cwd = S.string(BUFFER_DIR),
      env = S.optional(S.map(S.string())),
      -- Command rules (docs/approval.md, "Command rules for bash"): patterns over each simple
      -- command. An allow rule approves commands, so it needs trust; a deny rule only makes
      -- commands ask, so adding one is safe anywhere.
      allow = S.list(S.string(), {}),
      deny = S.trust("superset", S.list(S.string(), {})),
    }),
    grep = search_tool(),
    find = search_tool(),
    ls = S.object({ cwd = S.string(BUFFER_DIR) }),
    -- Tool policy (docs/policy.md): offered = (profile ∪ allow) − deny; names, `*` globs, `group:*`.
    policy = tool_policy(),
    -- Hook lists (docs/policy.md): confirm → ask, log → approve and audit, silent → approve.
    hooks = S.object({
      confirm = S.trust("superset", S.list(S.string(), {})),
      -- `log` and `silent` approve the tools they name.
      log = S.trust("subset", S.list(S.string(), {})),
      silent = S.trust("subset", S.list(S.string(), {})),
      -- One JSON line per call of a `log` tool is appended here (besides Flemma's log).
      audit_file = S.optional(S.string()),
    }),
    autonomy = S.trust({ only = { "conservative" } }, S.enum({ "conservative", "standard", "autonomous" }, "standard")),
    -- YOLO mode (docs/approval.md): approve every call except tools that are never approved
    -- automatically (bash); `:Flemma tool:yolo` toggles it per buffer for the session.
    yolo = S.trust({ only = { false } }, S.boolean(false)),
    web_fetch = S.object({
      timeout = safe(S.optional(S.integer(nil, { min = 1 }))),
      max_bytes = safe(S.integer(102400, { min = 1 })),
    }),
  }, {
    -- The tools offered to the model: removing some is safe anywhere.
    list = S.string(),
    list_trust = "subset",
    list_default = BUILTIN_TOOLS,
    aliases = { approve = { "auto_approve" } },
    -- `tools.<name> = { … }`: settings of a custom tool, read by it through ctx:get_config().
    extra = S.table(),
  }),

  -- MCP servers whose tools are registered as `mcp:<server>:<tool>` (docs/mcp.md). Host-wide:
  -- a buffer's frontmatter does not start or stop servers.
  mcp = S.object({
    servers = S.map(
      S.object({
        -- stdio: the command that starts the server (`args`, `env` and `cwd` go with it).
        command = S.optional(S.string()),
        args = S.list(S.string(), {}),
        env = S.map(S.string(), {}),
        cwd = S.optional(S.string()),
        -- Streamable HTTP: the endpoint, and headers sent with every request.
        url = S.optional(S.string()),
        headers = S.map(S.string(), {}),
        -- Globs over the server's own tool names.
        include = S.list(S.string(), {}),
        exclude = S.list(S.string(), {}),
        enabled = S.boolean(true),
        -- Seconds for connecting and listing the tools (default: mcp.timeout).
        timeout = S.optional(S.integer(nil, { min = 1 })),
      }),
      {},
      { key_pattern = "^[%w_%-]+$", key_desc = "server names use letters, digits, '_' and '-'" }
    ),
    timeout = S.integer(30, { min = 1 }),
    reconnect = S.object({
      max_attempts = S.integer(5, { min = 0 }),
      -- Milliseconds before the first attempt, doubled after each failure up to `max_delay`.
      initial_delay = S.integer(500, { min = 0 }),
      max_delay = S.integer(30000, { min = 0 }),
    }),
  }),

  templating = S.object({
    modules = S.list(S.string(), {}),
  }),

  sandbox = S.object({
    enabled = S.trust({ only = { true } }, S.boolean(true)),
    backend = S.string("auto"),
    -- Named directories host-side file access is confined to (docs/tools.md, "Sandbox roots"):
    -- { { name = "workspace", path = "~/project" }, { name = "data", path = "/srv/data", mode = "ro" } }
    roots = S.list(
      S.union({
        S.string(),
        S.object({
          name = S.optional(S.string()),
          path = S.string(),
          mode = S.enum({ "rw", "ro" }, "rw"),
        }),
      }),
      {}
    ),
    policy = S.object({
      rw_paths = S.trust(
        "subset",
        S.list(S.string(), {
          "urn:flemma:cwd",
          BUFFER_DIR,
          "/tmp",
          "${TMPDIR:-/tmp}",
          "${XDG_CACHE_HOME:-~/.cache}",
        })
      ),
      network = S.trust({ only = { false } }, S.boolean(true)),
      allow_privileged = S.trust({ only = { false } }, S.boolean(false)),
      -- Variables kept in a sandboxed command's environment although the scrub rules match them
      -- (provider keys, *_KEY, *_TOKEN, *_SECRET, *_CREDENTIALS, *PASSWORD*; docs/tools.md).
      -- Letting a secret through needs trust.
      env_allow = S.trust("subset", S.list(S.string(), {})),
    }),
    -- `sandbox.backends.<name> = { … }`: the settings of a custom backend, passed to it.
    backends = S.object({
      bwrap = S.object({
        path = S.string("bwrap"),
        extra_args = S.list(S.string(), {}),
      }),
    }, { extra = S.table() }),
  }),

  secrets = S.object({
    gcloud = S.object({ path = S.string("gcloud") }),
  }, {
    -- `secrets.<name> = { … }`: settings of a custom credential resolver (ctx:get_config()).
    extra = S.table(),
  }),

  -- What the editor shows and how it edits: safe anywhere.
  keymaps = safe(S.object({
    enabled = S.boolean(true),
    normal = S.object({
      send = S.string("<C-]>"),
      cancel = S.string("<C-c>"),
      tool_execute = S.string("<M-CR>"),
      message_next = S.string("]m"),
      message_prev = S.string("[m"),
      fold_toggle = string_or_false("<Space>"),
      conceal_toggle = string_or_false("<Space><Space>"),
      goto_definition = string_or_false("gd"),
      goto_file = string_or_false("gf"),
      tool_diff = string_or_false("gD"),
    }),
    insert = S.object({ send = S.string("<C-]>") }),
    -- The keys of a `:Flemma tool:diff` tab.
    diff = S.object({
      approve = string_or_false("ga"),
      reject = string_or_false("gr"),
    }),
    text_object = string_or_false("m"),
  })),

  editing = safe(S.object({
    auto_prompt = S.boolean(true),
    disable_textwidth = S.boolean(true),
    -- A write runs the user's BufWrite autocmds (format-on-save may run a project's programs):
    -- a file may turn it off, only a trusted one on.
    auto_write = S.trust({ only = { false } }, S.boolean(false)),
    manage_updatetime = S.boolean(true),
    foldlevel = S.integer(1, { min = 0 }),
    conceal = S.union({
      S.string(nil, { pattern = "^[0-3][nvic]*$", desc = 'a conceal spec such as "2nv"' }),
      S.literal(false),
    }, "2nv"),
    auto_close = S.object({
      thinking = S.boolean(true),
      tool_use = S.boolean(true),
      tool_result = S.boolean(true),
      frontmatter = S.boolean(false),
    }),
  })),

  highlights = safe(S.object({
    system = style("Special"),
    user = style("Normal"),
    assistant = style("Normal"),
    lua_expression = style("PreProc"),
    lua_code_block = style("PreProc"),
    lua_delimiter = style("FlemmaLuaExpression"),
    user_file_reference = style("Include"),
    thinking_tag = style("Comment"),
    thinking_block = style({ dark = "Comment+bg:#000000-fg:#333333", light = "Comment-bg:#000000+fg:#333333" }),
    tool_icon = style("FlemmaToolUseTitle"),
    tool_name = style("Function"),
    tool_use_title = style("Function"),
    tool_result_title = style("Function"),
    tool_result_error = style("DiagnosticError"),
    tool_result_denied = style("DiagnosticError"),
    tool_result_aborted = style("DiagnosticError"),
    tool_result_pending = style("DiagnosticInfo"),
    tool_result_approved = style("DiagnosticOk"),
    tool_result_rejected = style("DiagnosticWarn"),
    tool_preview = style("Comment"),
    tool_detail = style("Comment"),
    fold_preview = style("Comment"),
    fold_meta = style("Comment"),
    busy = style("DiagnosticWarn"),
    role_style = style("bold"),
    defaults = style({
      dark = { bg = "#000000", fg = "#ffffff" },
      light = { bg = "#ffffff", fg = "#000000" },
    }),
  })),

  ruler = safe(S.object({
    enabled = S.boolean(true),
    char = S.string("─"),
    hl = style({ dark = "Comment-fg:#303030", light = "Comment+fg:#303030" }),
  })),

  turns = safe(S.object({
    enabled = S.boolean(true),
    padding = S.union({
      S.integer(nil, { min = 0 }),
      S.list(S.integer(nil, { min = 0 }), nil, { count = 2 }),
      S.object({
        left = S.integer(0, { min = 0 }),
        right = S.integer(1, { min = 0 }),
      }),
    }, { left = 0, right = 1 }, {
      coerce = function(value)
        if type(value) == "number" then
          return { left = value, right = value }
        elseif type(value) == "table" and value[1] ~= nil then
          return { left = value[1], right = value[2] }
        end
        return value
      end,
    }),
    hl = style("FlemmaTurn"),
  })),

  line_highlights = safe(S.object({
    enabled = S.boolean(true),
    frontmatter = style({ dark = "Normal+bg:#18111a", light = "Normal-bg:#18111a" }),
    system = style({ dark = "Normal+bg:#101112", light = "Normal-bg:#101112" }),
    user = style({ dark = "Normal+bg:#202122", light = "Normal-bg:#202122" }),
    assistant = style("Normal"),
  })),

  ui = S.object({
    usage = safe(S.object({
      enabled = S.boolean(true),
      timeout = S.integer(10000, { min = 0 }),
      position = S.enum(POSITIONS, "top"),
      highlight = S.string("@text.note,PmenuSel"),
    })),
    progress = safe(S.object({
      position = S.enum(POSITIONS, "bottom left"),
      highlight = S.string("StatusLine"),
    })),
    pricing = safe(S.object({
      enabled = S.boolean(true),
      high_cost_threshold = S.number(30, { min = 0 }),
    })),
    -- The format is a template (Lua): needs trust.
    statusline = S.object({
      format = S.union({ S.string(), S.func() }, statusline_format()),
    }),
  }),

  -- Spending limits. `max_session_cost` (USD): once the session's requests have cost this much,
  -- autopilot stops and a send asks first (nil: no limit).
  limits = S.object({
    max_session_cost = S.trust("lower", S.optional(S.number(nil, { min = 0 }))),
  }),

  -- Long conversations (docs/context.md): the meter, the budget and elision. Safe anywhere:
  -- `window` and `warn_at` only change what Flemma tells you (and how much a budget given as a
  -- share leaves out); a budget only ever makes a request send less than the file holds. None
  -- of them names an endpoint, credential, program or file.
  context = safe(S.object({
    -- The model's context window in tokens, overriding the model table (a local server, a beta
    -- window).
    window = S.optional(S.integer(nil, { min = 1 })),
    -- The share of the window at which a send warns first, or false.
    warn_at = S.union({
      S.string(nil, { pattern = "^%d+%%$", desc = 'a percentage such as "80%"' }),
      S.literal(false),
    }, "80%"),
    -- The input tokens a request may hold, or a share of the window ("60%"); over it, old large
    -- tool results are sent as stubs. Unset or false: requests go whole.
    budget = S.optional(S.union({
      S.integer(nil, { min = 1 }),
      S.string(nil, { pattern = "^%d+%%$", desc = 'a percentage such as "60%"' }),
      S.literal(false),
    })),
    elide = S.object({
      -- The model's last replies whose tool results are never elided.
      keep_turns = S.integer(8, { min = 1 }),
      -- Results smaller than this (bytes) are never elided.
      min_bytes = S.integer(4096, { min = 0 }),
      -- Once it must elide, elision goes down to this share of the budget.
      low_water = S.string("70%", { pattern = "^%d+%%$", desc = 'a percentage such as "70%"' }),
    }),
    -- Keep a streaming reply on disk (a record in stdpath("state")/flemma/recovery, and the file
    -- itself with editing.auto_write) so that a crash loses at most its last second. A file may
    -- turn it off (its content stays off the disk); only a trusted one on.
    recovery = S.trust({ only = { false } }, S.boolean(true)),
    compact = S.object({
      -- What `:Flemma compact` asks the chat's model for (nil: the built-in prompt). It goes to
      -- the provider the chat already sends its whole conversation to.
      prompt = S.optional(S.string()),
    }),
  })),

  -- The log's path needs trust (a file Flemma appends to).
  logging = S.object({
    enabled = safe(S.boolean(false)),
    path = S.string(S.lazy(function()
      return vim.fs.joinpath(vim.fn.stdpath("log"), "flemma.log")
    end)),
    level = safe(S.enum({ "TRACE", "DEBUG", "INFO", "WARN", "ERROR" }, "DEBUG", { ignore_case = true })),
  }),

  diagnostics = safe(S.object({ enabled = S.boolean(false) })),

  -- Signals when a chat needs you and you are elsewhere (lua/flemma/attention.lua). Read from
  -- `setup()`. The command runs a program: needs trust.
  attention = S.object({
    enabled = safe(S.boolean(true)),
    terminal = safe(S.union({ S.enum({ "auto", "osc777", "osc9" }), S.literal(false) }, "auto")),
    bell = safe(S.boolean(true)),
    command = S.union({ S.list(S.string()), S.literal(false) }, false),
  }),

  integrations = safe(S.object({
    devicons = S.object({
      enabled = S.boolean(true),
      icon = S.string("∴"),
    }),
    -- Busy indicator for bufferline.nvim (docs/integrations.md, "bufferline.nvim").
    bufferline = S.object({
      icon = S.string("󰔟"),
    }),
    nvim_notify = S.object({
      enabled = S.boolean(true),
      icon = S.optional(S.string()),
    }),
    treesitter_context = S.object({
      enabled = S.boolean(true),
    }),
  })),

  lsp = safe(S.object({
    enabled = S.boolean(S.lazy(function()
      -- NOTE: looked up without touching `vim.lsp`, which would load it (~7 ms) at start-up.
      return rawget(vim, "lsp") ~= nil or #vim.api.nvim_get_runtime_file("lua/vim/lsp.lua", false) > 0
    end)),
  })),

  experimental = S.object({}),

  host = S.object({
    node = S.string("node"),
    log_level = S.enum({ "debug", "info", "warn", "error" }, "info"),
    restart = S.object({
      max_attempts = S.integer(5, { min = 0 }),
      window_ms = S.integer(60000, { min = 1 }),
      backoff_ms = S.integer(100, { min = 0 }),
    }),
  }),
}, {
  aliases = {
    thinking = { "parameters", "thinking" },
    temperature = { "parameters", "temperature" },
    max_tokens = { "parameters", "max_tokens" },
    timeout = { "parameters", "timeout" },
  },
})

return M
