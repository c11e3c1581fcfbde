--- flemma.config: the options given to `setup()`, validated against the schema and merged over
--- the defaults. Other modules read them with `get()`.
local schema = require("flemma.config.schema")

local M = {}

local H = {}

local PREFIX = "flemma.setup: "

--- The generation of the values: bumped by every `setup()` and run-time change, so that the host
--- is sent the configuration again only when it changed (`editor.context`, docs/rpc.md), and told
--- at once that what it holds is stale (`editor:state`). It starts
--- from the clock, so that a reloaded module does not repeat a generation the host holds.
H.generation = math.floor(vim.uv.hrtime() / 1000) % 1000000000

--- The generation of the current values (see `H.generation`).
---@return integer
function M.generation()
  return H.generation
end

--- Who hears of a run-time change (`apply_runtime()`, `record()`): `fn()` each time. Registered where
--- the plugin is put together (flemma: the `config:updated` event), so that this module, which
--- most others read, depends on none of them.
H.listeners = {} ---@type fun()[]

---@param fn fun()
function M.on_updated(fn)
  H.listeners[#H.listeners + 1] = fn
end

H.change_listeners = {} ---@type fun()[]

--- Call `fn()` each time the values change (a new generation: `setup`, a runtime switch), before
--- anything reads them again. flemma.init wires the host's held settings to it.
---@param fn fun()
function M.on_changed(fn)
  H.change_listeners[#H.change_listeners + 1] = fn
end

function H.updated()
  for _, fn in ipairs(H.listeners) do
    fn()
  end
end

--- The values changed (also the autopilot switch, which the host's snapshot includes).
function H.changed()
  H.generation = H.generation + 1
  for _, fn in ipairs(H.change_listeners) do
    fn()
  end
end

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
  H.logs.setup = H.ops_of(normalized, {})
  -- The run-time layer (`:Flemma switch`) stays above `setup()`.
  for _, op in ipairs(H.runtime_values) do
    H.assign(M.values, op.path, op.value)
  end
  H.changed()
  return M.values
end

--- Set (or, with vim.NIL, clear) the option at `path` (a list of keys) in `values`.
function H.assign(values, path, value)
  local node = values
  for i = 1, #path - 1 do
    local key = path[i]
    if type(node[key]) ~= "table" then
      node[key] = {}
    end
    node = node[key]
  end
  if value == vim.NIL then
    node[path[#path]] = nil
  else
    node[path[#path]] = vim.deepcopy(value)
  end
end

--- Run-time changes that `setup()` keeps: `{ path = {…}, value = v|vim.NIL }`, oldest first.
H.runtime_values = {}

--- Apply already-validated run-time changes (`:Flemma switch!`) over the current values, record
--- them in the runtime log as `source`, and fire `config:updated` once. They are for every chat:
--- a chat's own switch of the same options gives way to them.
---@param ops { path: string[], value: any }[]
---@param source string
function M.apply_runtime(ops, source)
  for _, op in ipairs(ops) do
    local key = table.concat(op.path, ".")
    for _, layer in pairs(H.chats) do
      layer[key] = nil
    end
    H.assign(M.values, op.path, op.value)
    H.runtime_values[#H.runtime_values + 1] = { path = op.path, value = op.value }
    local value = op.value == vim.NIL and nil or op.value
    H.logs.runtime[#H.logs.runtime + 1] = {
      op = value == nil and "clear" or "set",
      path = table.concat(op.path, "."),
      value = value,
      source = source,
    }
  end
  H.changed()
  H.updated()
end

-- ---------------------------------------------------------------------------------------------
-- A chat's own switch (`:Flemma switch` in a chat buffer, docs/credentials.md): per buffer, the
-- options it set over the global values, by dotted path (`{ path, value, source }`; the latest
-- switch of an option wins). The host applies them under the buffer's frontmatter, which still
-- wins. They live as long as the buffer (`forget_chat` when it is deleted) and are never written
-- to the file.

H.chats = {} ---@type table<integer, table<string, { path: string[], value: any, source: string }>>

--- The layer of chat `bufnr` (0: the current buffer), or nil.
function H.chat(bufnr)
  if bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  return bufnr ~= nil and H.chats[bufnr] or nil
end

--- Who hears that a chat's own switch changed: `fn(bufnr)` (flemma: the host's held settings).
H.chat_listeners = {} ---@type fun(bufnr: integer)[]

---@param fn fun(bufnr: integer)
function M.on_chat_changed(fn)
  H.chat_listeners[#H.chat_listeners + 1] = fn
end

--- Apply already-validated changes (`:Flemma switch`) to chat `bufnr` only, as `source`; fires
--- `config:updated` once.
---@param bufnr integer
---@param ops { path: string[], value: any }[]
---@param source string
function M.apply_chat(bufnr, ops, source)
  local layer = H.chats[bufnr] or {}
  H.chats[bufnr] = layer
  for _, op in ipairs(ops) do
    layer[table.concat(op.path, ".")] = { path = op.path, value = op.value, source = source }
  end
  for _, fn in ipairs(H.chat_listeners) do
    fn(bufnr)
  end
  H.updated()
end

--- The options chat `bufnr`'s own switch set, as `{ path, value }` (vim.NIL clears), sorted by
--- path so that a table comes before the options under it.
---@param bufnr integer
---@return { path: string[], value: any }[]
function M.chat_ops(bufnr)
  local layer = H.chat(bufnr) or {}
  local keys = vim.tbl_keys(layer)
  table.sort(keys)
  local out = {}
  for _, key in ipairs(keys) do
    out[#out + 1] = { path = vim.deepcopy(layer[key].path), value = vim.deepcopy(layer[key].value) }
  end
  return out
end

--- Chat `bufnr` was deleted: its own switch goes with it.
---@param bufnr integer
function M.forget_chat(bufnr)
  H.chats[bufnr] = nil
end

-- ---------------------------------------------------------------------------------------------
-- The operation log of each global layer (docs/frontmatter.md, "Layers"): what `setup()` set, and what the
-- run-time commands changed. The buffer's frontmatter is the fourth layer, applied by the host
-- over these. The values themselves are kept merged (`get()`); the logs say who set what.

H.logs = { setup = {}, runtime = {} }

--- `set` operations for every option `opts` gives (a list, a function or a scalar is one value).
function H.ops_of(opts, path)
  local ops = {}
  if type(opts) ~= "table" then
    return ops
  end
  local count = #opts
  if count > 0 then
    local list = {}
    for i = 1, count do
      list[i] = opts[i]
    end
    ops[#ops + 1] = { op = "set", path = table.concat(path, "."), value = list }
  end
  for key, value in pairs(opts) do
    if type(key) == "string" then
      local child = vim.list_extend(vim.deepcopy(path), { key })
      if type(value) == "table" and not vim.islist(value) and next(value) ~= nil then
        vim.list_extend(ops, H.ops_of(value, child))
      else
        ops[#ops + 1] = { op = "set", path = table.concat(child, "."), value = value }
      end
    end
  end
  return ops
end

--- Record a run-time change (`source` says which command): `record("runtime", "set",
--- "tools.autopilot.enabled", false, ":Flemma autopilot:disable")`. Fires `config:updated`.
function M.record(layer, op, path, value, source)
  local log = H.logs[layer]
  if log == nil then
    error("flemma.config.record: unknown layer '" .. tostring(layer) .. "'", 2)
  end
  log[#log + 1] = { op = op, path = path, value = value, source = source }
  H.changed()
  H.updated()
end

--- A copy of a layer's operation log (`setup` or `runtime`), oldest first.
function M.log(layer)
  return vim.deepcopy(H.logs[layer] or {})
end

--- The current option values (the defaults until `setup()` succeeds); with `bufnr` (0: the
--- current buffer), with that chat's own switch applied (its frontmatter is the host's).
---@param bufnr integer|nil
---@return table
function M.get(bufnr)
  local layer = H.chat(bufnr)
  if layer == nil or next(layer) == nil then
    return M.values
  end
  local values = vim.deepcopy(M.values)
  for _, op in ipairs(M.chat_ops(bufnr)) do
    H.assign(values, op.path, op.value)
  end
  return values
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

--- Where each option set above the defaults came from, by dotted path, from the layers'
--- operation logs: "setup", "runtime (<command>)", or with `bufnr` "this chat (<command>)" for
--- that chat's own switch; the latest layer wins.
---@param bufnr integer|nil
---@return table<string, string>
function M.origins(bufnr)
  local out = {}
  for _, op in ipairs(H.logs.setup) do
    out[op.path] = "setup"
  end
  for _, op in ipairs(H.logs.runtime) do
    out[op.path] = op.source and ("runtime (" .. op.source .. ")") or "runtime"
  end
  for key, op in pairs(H.chat(bufnr) or {}) do
    out[key] = "this chat (" .. op.source .. ")"
  end
  return out
end

--- The current values; the defaults until `setup()` succeeds.
---@type table
M.values = M.defaults()

return M
