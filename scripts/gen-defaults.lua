--- The configuration's defaults and schema as data, for `flemma run` (docs/cli.md), which reads
--- the options without Neovim: `npm run gen:defaults` runs this with `nvim -l` and writes
--- src/core/config/defaults.json; test/nvim/cli-defaults.test.ts compares that file with what this
--- answers in a running Neovim.
---
--- `defaults` is the snapshot the host gets from Lua (functions as `{__function = true}`, a table
--- with a list part keeps it under `__list`), with the defaults computed from the machine
--- (`logging.path`, `lsp.enabled`) left out. `schema` is the option tree: each node's kind, its
--- trust class (`trust`, `list_trust`), what the CLI checks a value against (`values`, `min`,
--- `max`, `count`, `value` of a literal, `optional`), and its children (`fields`, `extra`, `item`,
--- `list`, `value_node`, `members`, `aliases`).
local M = {}

--- Whether a default is computed when the defaults are built (`dsl.lazy`).
local function is_lazy(value)
  return type(value) == "table" and getmetatable(value) ~= nil and type(rawget(value, "fn")) == "function"
end

--- Plain data as the host's snapshot has it (see `flemma.rpc`).
local function plain(value)
  if type(value) == "function" then
    return { __function = true }
  elseif type(value) ~= "table" then
    return value
  end
  local count = #value
  local mixed = false
  for key in pairs(value) do
    if type(key) ~= "number" then
      mixed = count > 0
      break
    end
  end
  local out = {}
  for key, item in pairs(value) do
    if not (mixed and type(key) == "number") then
      out[key] = plain(item)
    end
  end
  if mixed then
    local list = {}
    for i = 1, count do
      list[i] = plain(value[i])
    end
    out.__list = list
  end
  if next(out) == nil then
    return count == 0 and vim.empty_dict() or out
  end
  return out
end

--- The node's default, without the lazy ones (nil).
local function default_of(node)
  if node.kind == "object" and node.default == nil then
    local result = {}
    for name, field in pairs(node.fields) do
      result[name] = default_of(field)
    end
    for index, item in ipairs(node.list_default or {}) do
      result[index] = vim.deepcopy(item)
    end
    return result
  end
  if is_lazy(node.default) then
    return nil
  end
  return vim.deepcopy(node.default)
end

local SCALARS = { "trust", "list_trust", "values", "min", "max", "count", "optional", "ignore_case" }

local function describe(node)
  local out = { kind = node.kind }
  for _, key in ipairs(SCALARS) do
    if node[key] ~= nil then
      out[key] = node[key]
    end
  end
  if node.kind == "literal" then
    out.value = node.value
  end
  if node.fields then
    out.fields = vim.empty_dict()
    for name, field in pairs(node.fields) do
      out.fields[name] = describe(field)
    end
  end
  for _, key in ipairs({ "extra", "item", "list" }) do
    if type(node[key]) == "table" and node[key].kind then
      out[key] = describe(node[key])
    end
  end
  if node.kind == "map" then
    out.value_node = describe(node.value)
  end
  if node.members then
    out.members = vim.tbl_map(describe, node.members)
  end
  if node.aliases then
    out.aliases = node.aliases
  end
  return out
end

--- The data as a table: `{ version, defaults, schema }`.
function M.data()
  local schema = require("flemma.config.schema")
  return {
    version = 1,
    defaults = plain(default_of(schema.options)),
    schema = describe(schema.options),
  }
end

function M.json()
  return vim.json.encode(M.data())
end

if _G.arg ~= nil and _G.arg[0] ~= nil then
  io.stdout:write(M.json())
  return
end
return M
