--- flemma.frontmatter: runs a chat's Lua frontmatter in a restricted environment and answers what
--- it did: the `flemma.opt` operations in order (the host applies them over the configuration),
--- the other top-level assignments (template variables), or an error with its line.
---
--- Lua frontmatter runs only in a trusted file (`flemma.trust`); other languages are read by the
--- host (or by the user's own reader) and their operations checked here, each with its option's
--- trust class (`schema.trust`), so that the host applies in a file that is not trusted only what
--- that file may change.
local lazy = require("flemma.util.lazy")
local schema = lazy.require("flemma.config.schema")
local flemma_config_trust = lazy.require("flemma.config.trust")
local restricted = lazy.require("flemma.util.restricted")
local suggest = lazy.require("flemma.util.suggest")
local M = {}

local H = {
  --- bufnr → { functions = { ["tools.auto_approve"] = fn } } from the latest run
  cache = {},
}

local METHODS = { append = true, prepend = true, remove = true }

--- Every `flemma.opt…` proxy handed out (weak keys): assigning one to an option is a mistake.
H.proxies = setmetatable({}, { __mode = "k" })

--- The list-operation form of a value assigned with `+` / `-` (`flemma.opt.tools - "bash"`).
local Expr = {}
Expr.__index = Expr

local function is_expr(value)
  return getmetatable(value) == Expr
end

local function items_of(value)
  if type(value) == "table" and not is_expr(value) then
    return value
  end
  return { value }
end

local function combine(left, right, op)
  local ops = {}
  if is_expr(left) then
    vim.list_extend(ops, left.ops)
  end
  for _, item in ipairs(items_of(right)) do
    ops[#ops + 1] = { op = op, value = item }
  end
  return setmetatable({ ops = ops }, Expr)
end

Expr.__add = function(left, right)
  return combine(left, right, "append")
end
Expr.__sub = function(left, right)
  return combine(left, right, "remove")
end

--- A line of the frontmatter code → a line of the buffer (`first` is the buffer line of line 1).
local function buffer_line(first, line)
  return first + line - 1
end

--- The line of the frontmatter currently running (for operations), from the debug info.
local function current_line(first)
  for level = 3, 12 do
    local info = debug.getinfo(level, "Sl")
    if info == nil then
      break
    end
    if info.source == "=frontmatter" and info.currentline and info.currentline > 0 then
      return buffer_line(first, info.currentline)
    end
  end
  return nil
end

--- `flemma.opt` and everything under it: reading a key goes one level down, assigning records a
--- `set`, `:append` / `:prepend` / `:remove` record list operations, `+` / `-` build a list
--- expression that an assignment records as operations.
local function option(path, state)
  local proxy = {}
  local mt = {}
  mt.__index = function(_, key)
    if type(key) ~= "string" then
      error("flemma.opt keys are names, got " .. type(key), 2)
    end
    if METHODS[key] and #path > 0 then
      return function(self, value)
        if self ~= proxy then
          error(string.format("use %s:%s(…), with a colon", table.concat(path, "."), key), 2)
        end
        for _, item in ipairs(items_of(value)) do
          state.record(path, key, item)
        end
        return proxy
      end
    end
    local child = vim.list_extend(vim.deepcopy(path), { key })
    return option(child, state)
  end
  mt.__newindex = function(_, key, value)
    local child = vim.list_extend(vim.deepcopy(path), { key })
    if is_expr(value) then
      for _, op in ipairs(value.ops) do
        state.record(child, op.op, op.value)
      end
      return
    end
    if type(value) == "function" then
      state.functions[table.concat(child, ".")] = value
    end
    if H.proxies[value] then
      error(string.format("flemma.opt.%s: cannot assign an option to another", table.concat(child, ".")), 2)
    end
    state.record(child, "set", value)
  end
  mt.__add = function(_, right)
    return combine(nil, right, "append")
  end
  mt.__sub = function(_, right)
    return combine(nil, right, "remove")
  end
  mt.__tostring = function()
    return "flemma.opt." .. table.concat(path, ".")
  end
  H.proxies[proxy] = true
  return setmetatable(proxy, mt)
end

--- An error from the chunk as `frontmatter line N: message` (N a buffer line).
local function describe(message, first)
  message = tostring(message)
  if vim.startswith(message, "frontmatter line ") then
    return message
  end
  local line, rest = message:match("^frontmatter:(%d+): (.*)$")
  if line then
    return string.format("frontmatter line %d: %s", buffer_line(first, tonumber(line)), rest)
  end
  return "frontmatter: " .. message
end

--- A value as plain data for the host: functions become `{__function = true}`.
local function plain(value, seen)
  if type(value) == "function" then
    return { __function = true }
  elseif type(value) ~= "table" then
    return value
  end
  seen = seen or {}
  if seen[value] then
    return vim.NIL
  end
  seen[value] = true
  local out = {}
  for k, v in pairs(value) do
    if type(k) == "string" or type(k) == "number" then
      out[k] = plain(v, seen)
    end
  end
  seen[value] = nil
  return out
end

--- Names the frontmatter accepts at the top beyond the options' own: parameters and the
--- providers' parameter sections (`flemma.opt.anthropic.thinking_budget`).
local TOP_ALIASES = {
  cache_retention = { "parameters", "cache_retention" },
}

--- The schema node of an option path, its canonical path and its trust class (the deepest mark
--- on the way, `schema.trust`; "needs_trust" when there is none), or nil and an error message.
function H.lookup(path)
  local node = schema.options
  local canonical = {}
  local class = node.trust
  for index, key in ipairs(path) do
    local step = { key }
    if index == 1 then
      local aliases = vim.tbl_extend("force", node.aliases or {}, TOP_ALIASES)
      if aliases[key] then
        step = aliases[key]
      elseif node.fields[key] == nil and node.fields.parameters.fields[key] ~= nil then
        step = { "parameters", key }
      end
    end
    for _, name in ipairs(step) do
      local shown = "flemma.opt." .. table.concat(vim.list_extend(vim.deepcopy(canonical), { name }), ".")
      if node.kind == "union" then
        local found
        for _, member in ipairs(node.members) do
          if member.kind == "object" or member.kind == "map" then
            found = member
            break
          end
        end
        if found == nil then
          return nil,
            string.format("%s: %s has no options under it", shown, "flemma.opt." .. table.concat(canonical, "."))
        end
        node = found
        class = node.trust or class
      end
      if node.kind == "object" then
        -- Another name for an option beside it (`tools.approve` is `tools.auto_approve`).
        local alias = node.fields[name] == nil and node.aliases and node.aliases[name]
        if alias and #alias == 1 then
          name = alias[1]
          shown = "flemma.opt." .. table.concat(vim.list_extend(vim.deepcopy(canonical), { name }), ".")
        end
        local field = node.fields[name]
        local guess = field == nil and suggest.closest(name, node:known_keys()) or nil
        -- An open object (`tools.<custom tool>`) takes other names, unless it is a likely typo.
        if field == nil and node.extra and guess == nil then
          field = node.extra
        end
        if field == nil then
          return nil,
            string.format("unknown option %s%s", shown, guess and string.format(" (did you mean '%s'?)", guess) or "")
        end
        node = field
      elseif node.kind == "map" then
        node = node.value
      else
        return nil, string.format("unknown option %s", shown)
      end
      class = node.trust or class
      canonical[#canonical + 1] = name
    end
  end
  return node, nil, canonical, class or "needs_trust"
end

--- The node that checks one item of a list option, or nil when the option is not a list.
local function list_item(node)
  if node.kind == "list" then
    return node.item
  elseif node.kind == "object" and node.list then
    return node.list
  elseif node.kind == "union" then
    for _, member in ipairs(node.members) do
      local item = list_item(member)
      if item then
        return item
      end
    end
  end
  return nil
end

--- Whether every option a table assigns to an object is safe anywhere (a `$set` of a whole
--- section in a file that is not trusted is applied only then).
function H.all_safe(node, value, class)
  if node.kind == "union" then
    node = node:member_for(value) or node
  end
  if node.kind ~= "object" or type(value) ~= "table" or vim.islist(value) then
    return class == "safe"
  end
  for key, item in pairs(value) do
    local field = type(key) == "string" and node.fields[key] or nil
    if field == nil or not H.all_safe(field, item, field.trust or class) then
      return false
    end
  end
  return true
end

--- The trust class of one operation on `node` (found with `class` by `H.lookup`).
function H.class_of(node, op, value, class)
  local member = node
  if node.kind == "union" then
    for _, candidate in ipairs(node.members) do
      if candidate.kind == "object" then
        member = candidate
      end
    end
  end
  local list_op = op ~= "set" or (type(value) == "table" and vim.islist(value))
  if member.kind == "object" and member.list and member.list_trust and list_op then
    return member.list_trust
  end
  if op == "set" and type(value) == "table" and not vim.islist(value) and member.kind == "object" then
    return H.all_safe(node, value, class) and "safe" or class
  end
  return class
end

--- Check one operation against the schema; answers the canonical path and the operation's trust
--- class, or raises the error.
function H.check(path, op, value)
  local node, err, canonical, class = H.lookup(path)
  if node == nil then
    error(err, 0)
  end
  local shown = "flemma.opt." .. table.concat(canonical, ".")
  if op == "set" then
    local problem = node:check(value, shown)
    if problem then
      error(problem, 0)
    end
  else
    local item = list_item(node)
    if item == nil then
      error(string.format("%s is not a list: :%s() does not apply (assign it instead)", shown, op), 0)
    end
    local problem = item:check(value, shown)
    if problem then
      error(problem, 0)
    end
  end
  return canonical, H.class_of(node, op, value, class)
end

--- The trust class of an option (`schema.trust`) given as a list of keys: a string or a table
--- (`{ only = { … } }`), or nil and an error for an unknown option. For an option that holds a
--- list of its own (`tools`), the class of that list.
function M.option_class(path)
  local node, err, _, class = H.lookup(path)
  if node == nil then
    return nil, err
  end
  if node.kind == "object" and node.list and node.list_trust then
    return node.list_trust
  end
  return class
end

--- Check operations that came from elsewhere (JSON frontmatter); answers them with canonical paths,
--- or `{error}` naming the first wrong one and its line.
function M.check_ops(ops)
  local out = {}
  for _, op in ipairs(ops or {}) do
    local value = op.value
    if value == vim.NIL then
      value = nil
    end
    local ok, canonical, class = pcall(H.check, op.path, op.op, value)
    if not ok then
      return { error = string.format("frontmatter line %d: %s", op.line or 1, canonical) }
    end
    out[#out + 1] = { path = canonical, op = op.op, value = op.value, line = op.line, trust = class }
  end
  return { ops = out }
end

--- Run `code` (the frontmatter's lines; `first` is the buffer line of its first line).
--- Returns `{ops, variables}` or `{error}`, and the functions assigned to options by path.
function M.run(code, first)
  local state = { ops = {}, functions = {} }
  state.record = function(path, op, value)
    local line = current_line(first) or first
    local ok, canonical, class = pcall(H.check, path, op, value)
    if not ok then
      error(string.format("frontmatter line %d: %s", line, canonical), 0)
    end
    state.ops[#state.ops + 1] = { path = canonical, op = op, value = plain(value), line = line, trust = class }
  end
  local variables = {}
  -- What frontmatter code may use: plain Lua helpers, no files, processes or editor state.
  local globals = restricted.globals({ vim = restricted.FRONTMATTER_VIM })
  globals.flemma = setmetatable({ opt = option({}, state) }, {
    __newindex = function()
      error("flemma is read-only: set options through flemma.opt", 2)
    end,
  })
  local env = restricted.environment(variables, globals)
  local chunk, syntax = load(code, "=frontmatter", "t", env)
  if not chunk then
    return { error = describe(syntax, first) }, {}
  end
  local ok, err = pcall(chunk)
  if not ok then
    return { error = describe(err, first) }, {}
  end
  local vars = {}
  for key, value in pairs(variables) do
    if type(key) == "string" and type(value) ~= "function" then
      vars[key] = plain(value)
    end
  end
  return { ops = state.ops, variables = vars }, state.functions, variables
end

--- Host → Lua (within `editor.context`): evaluate the buffer's Lua frontmatter.
--- `fm` is `{code, line}` (line: the buffer line of the code's first line), or `{ops}` from a JSON
--- frontmatter, which only gets checked; `trust` is the buffer's decision (`flemma.trust.state`).
--- Answers `{ops, variables}`, `{error}` or `{untrusted = message}`.
function M.evaluate(bufnr, fm, trust)
  if fm.ops ~= nil then
    H.cache[bufnr] = nil
    return M.check_ops(fm.ops)
  end
  if fm.custom ~= nil then
    -- The reader is the user's own Lua, not the file's: no trust needed, as for JSON.
    H.cache[bufnr] = nil
    return H.evaluate_custom(fm)
  end
  if not trust.trusted then
    H.cache[bufnr] = nil
    return { untrusted = flemma_config_trust.message(bufnr, trust, "frontmatter") }
  end
  -- Run every time (a send, a step of the tool loop): the code may read the date or the
  -- environment. Functions it assigns are kept for the approval chain to call.
  local result, functions, variables = M.run(fm.code, fm.line)
  H.cache[bufnr] = { functions = functions, variables = variables }
  return result
end

-- ---------------------------------------------------------------------------------------------
-- Custom languages

--- The registered languages (name → `parse`), synced to the host (`frontmatter:languages`), which
--- then reads them as known in the buffer's tree.
H.languages = require("flemma.util.registry").new({
  method = "frontmatter:languages",
  payload = function(self)
    return { names = self:names() }
  end,
})

--- Register a frontmatter language: `parse(code)` returns a table like a JSON frontmatter's
--- (options under `flemma`, with `$set` / `$append` / `$prepend` / `$remove`; other keys are
--- template variables), or raises. Lua, JSON and YAML are built in.
function M.register_language(name, parse)
  vim.validate({ name = { name, "string" }, parse = { parse, "function" } })
  name = name:lower()
  if name == "lua" or name == "json" or name == "yaml" or name == "yml" then
    error("flemma.frontmatter.register_language: '" .. name .. "' is built in", 2)
  end
  H.languages:set(name, parse)
  -- Only once a language was registered does a starting host need to hear of them.
  H.languages:follow_host()
end

function M.unregister_language(name)
  return H.languages:remove(name:lower())
end

local OPERATORS = { ["$set"] = "set", ["$append"] = "append", ["$prepend"] = "prepend", ["$remove"] = "remove" }

--- Decoded data → operations (checked) and variables, as for JSON; `first` is the first code line.
function H.data_ops(data, first)
  if type(data) ~= "table" then
    return { error = string.format("frontmatter line %d: the frontmatter must be a table", first) }
  end
  local variables = {}
  for key, value in pairs(data) do
    if key ~= "flemma" and type(key) == "string" then
      variables[key] = plain(value)
    end
  end
  local ops = {}
  local function walk(value, path)
    if type(value) == "table" and not vim.islist(value) then
      for key, operand in pairs(value) do
        local kind = type(key) == "string" and OPERATORS[key] or nil
        if type(key) == "string" and key:sub(1, 1) == "$" then
          if not kind then
            error(string.format('unknown operator "%s" (use $set, $append, $prepend or $remove)', key), 0)
          end
          local items = (kind ~= "set" and type(operand) == "table" and vim.islist(operand)) and operand or { operand }
          for _, item in ipairs(items) do
            local canonical, class = H.check(path, kind, item)
            ops[#ops + 1] = { path = canonical, op = kind, value = plain(item), line = first, trust = class }
          end
        end
      end
      for key, item in pairs(value) do
        if type(key) == "string" and key:sub(1, 1) ~= "$" then
          walk(item, vim.list_extend(vim.deepcopy(path), { key }))
        end
      end
      return
    end
    local canonical, class = H.check(path, "set", value)
    ops[#ops + 1] = { path = canonical, op = "set", value = plain(value), line = first, trust = class }
  end
  if data.flemma ~= nil then
    local ok, err = pcall(walk, data.flemma, {})
    if not ok then
      return { error = string.format("frontmatter line %d: %s", first, tostring(err)) }
    end
  end
  return { ops = ops, variables = variables }
end

--- A table of options as a frontmatter sets them (`{ thinking = false }`, `{ tools = { ["$remove"]
--- = "bash" } }`; a slash command's, flemma.slash), as checked operations with their trust class
--- on buffer line `line`: `{ops}`, or `{error}` without the frontmatter's line prefix.
function M.options_ops(options, line)
  local result = H.data_ops({ flemma = options }, line)
  if result.error then
    return { error = (result.error:gsub("^frontmatter line %d+: ", "")) }
  end
  return { ops = result.ops }
end

--- A frontmatter in a registered language: `fm` is `{custom, code, line}`.
function H.evaluate_custom(fm)
  local parse = H.languages:get(fm.custom)
  if not parse then
    return { error = string.format("frontmatter line %d: no reader for %s frontmatter", fm.line - 1, fm.custom) }
  end
  local ok, data = pcall(parse, fm.code)
  if not ok then
    return { error = string.format("frontmatter line %d: %s: %s", fm.line - 1, fm.custom, tostring(data)) }
  end
  return H.data_ops(data, fm.line)
end

--- The variables of the buffer's latest Lua frontmatter run, as Lua values (functions too), for
--- templates; nil when it has none.
function M.variables_for(bufnr)
  local cached = H.cache[bufnr]
  return cached and cached.variables or nil
end

--- The buffer has no Lua frontmatter (any more): forget what its last one left.
function M.clear(bufnr)
  H.cache[bufnr] = nil
end

--- The function the buffer's frontmatter assigned to an option (`tools.auto_approve`), if any.
function M.function_for(bufnr, path)
  local cached = H.cache[bufnr]
  return cached and cached.functions[path] or nil
end

--- Host → Lua: what a check of the frontmatter found (`{bufnr, items = {{lnum, severity,
--- message}}}`), as diagnostics of their own namespace (source `flemma`).
function M.show_diagnostics(params)
  local bufnr = params.bufnr
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  H.ns = H.ns or vim.api.nvim_create_namespace("flemma.frontmatter")
  local severities = { error = vim.diagnostic.severity.ERROR, warning = vim.diagnostic.severity.WARN }
  local list = {}
  local last = math.max(vim.api.nvim_buf_line_count(bufnr) - 1, 0)
  for _, item in ipairs(params.items or {}) do
    list[#list + 1] = {
      lnum = math.min(math.max(item.lnum or 0, 0), last),
      col = 0,
      severity = severities[item.severity] or vim.diagnostic.severity.ERROR,
      message = item.message,
      source = "flemma",
      code = "frontmatter",
    }
  end
  vim.diagnostic.set(H.ns, bufnr, list)
end

function M.forget(bufnr)
  H.cache[bufnr] = nil
end

return M
