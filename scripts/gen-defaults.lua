--- The configuration's defaults and schema as data, for `flemma run` (docs/cli.md), which reads
--- the options without Neovim: `npm run gen:defaults` runs this with `nvim -l` and writes
--- src/core/config/defaults.json; test/nvim/cli-defaults.test.ts compares that file with what this
--- answers in a running Neovim.
---
--- `defaults` is the snapshot the host gets from Lua (`config.snapshot`: functions as
--- `{__function = true}`, a table with a list part keeps it under `__list`) in a Neovim where
--- `setup()` set nothing, with the defaults computed from the machine (`logging.path`,
--- `lsp.enabled`) left out. `schema` is the option tree: each node's kind, its
--- trust class (`trust`, `list_trust`), what the CLI checks a value against (`values`, `min`,
--- `max`, `count`, `value` of a literal, `optional`), and its children (`fields`, `extra`, `item`,
--- `list`, `value_node`, `members`, `aliases`).
local M = {}

--- Whether a default is computed when the defaults are built (`dsl.lazy`).
local function is_lazy(value)
  return type(value) == "table" and getmetatable(value) ~= nil and type(rawget(value, "fn")) == "function"
end

--- The paths of the options whose default is computed from the machine, under `node`.
local function lazy_paths(node, path, out)
  if is_lazy(node.default) then
    out[#out + 1] = path
  end
  for name, field in pairs(node.fields or {}) do
    lazy_paths(field, vim.list_extend(vim.deepcopy(path), { name }), out)
  end
  return out
end

--- The defaults as the host's snapshot carries them (`config.snapshot` before any `setup()`
--- option), without the machine's own.
local function defaults(schema)
  local snapshot = require("flemma.rpc").dispatch("config.snapshot", { generation = -1 }).config
  for _, path in ipairs(lazy_paths(schema.options, {}, {})) do
    local parent = vim.tbl_get(snapshot, unpack(path, 1, #path - 1))
    if type(parent) == "table" then
      parent[path[#path]] = nil
    end
  end
  return snapshot
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
    defaults = defaults(schema),
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
