--- flemma.tools: register tools from Lua. Definitions (and their functions) stay here; the host
--- gets their descriptions and calls back into Neovim to run `execute`. Every registration form
--- of docs/tools.md ("Registering tools from Lua") works: (name, definition), a module name (exporting `definitions` or
--- `resolve`), an array of definitions, and asynchronous sources (a function, a `{ resolve,
--- timeout }` table, or a module with `resolve`).
local log = require("flemma.host.log")
local lazy = require("flemma.util.lazy")
local config = lazy.require("flemma.config")
local host = lazy.require("flemma.host")
local notify = lazy.require("flemma.notify")
local sandbox = lazy.require("flemma.sandbox")
local codecompanion = lazy.require("flemma.tools.codecompanion")
local context = lazy.require("flemma.tools.context")
local mcp = lazy.require("flemma.tools.mcp")
local paths = require("flemma.util.path")

local M = {}

local H = {
  pending = 0, -- async sources still loading
  sources = {}, ---@type table<integer, { label: string, done: boolean }>
  next_source = 0,
  calls = {}, ---@type table<string, { cancel: function|nil }>
}

--- The tools registered from Lua, synced to the host (`tools:define`: descriptions without
--- functions, with how many sources are still loading and the configuration's tool sources).
local registry = require("flemma.util.registry").new({
  method = "tools:define",
  payload = function()
    return M.payload()
  end,
})

local NAME_PATTERN = "^[%w_%.:%-]+$"

local function default_timeout()
  local ok, cfg = pcall(function()
    return config.get().tools.default_timeout
  end)
  return (ok and type(cfg) == "number") and cfg or 30
end

local function check_definition(name, def, level)
  level = (level or 1) + 1
  if type(def) ~= "table" then
    error(string.format("flemma.tools.register: the definition of '%s' must be a table", tostring(name)), level)
  end
  name = name or def.name
  if type(name) ~= "string" or not name:match(NAME_PATTERN) then
    error(
      string.format(
        "flemma.tools.register: invalid tool name %s (letters, digits, '_', '.', ':' and '-')",
        vim.inspect(name)
      ),
      level
    )
  end
  if type(def.description) ~= "string" then
    error(string.format("flemma.tools.register: tool '%s' needs a description (string)", name), level)
  end
  if def.input_schema ~= nil and type(def.input_schema) ~= "table" then
    error(string.format("flemma.tools.register: tool '%s': input_schema must be a table", name), level)
  end
  if def.system_prompt ~= nil and type(def.system_prompt) ~= "string" then
    error(string.format("flemma.tools.register: tool '%s': system_prompt must be a string", name), level)
  end
  local approval = def.require_approval
  if approval ~= nil and type(approval) ~= "boolean" and type(approval) ~= "function" then
    error(
      string.format("flemma.tools.register: tool '%s': require_approval must be a boolean or a function", name),
      level
    )
  end
  for _, field in ipairs({ "execute", "format_preview", "format_rejected", "format_cancelled", "cmd_string" }) do
    if def[field] ~= nil and type(def[field]) ~= "function" then
      error(string.format("flemma.tools.register: tool '%s': %s must be a function", name, field), level)
    end
  end
  return name
end

local function define(name, def, level)
  -- A CodeCompanion tool table (`schema`, `cmds`, `output`, …) becomes a Flemma definition.
  if codecompanion.is_codecompanion(def) then
    name, def = codecompanion.adapt(name, def)
  end
  name = check_definition(name, def, (level or 1) + 1)
  local copy = vim.tbl_extend("force", {}, def)
  copy.name = name
  registry:set(name, copy)
end

--- An asynchronous source: `resolve(register, done)`; `done(err?)` exactly once (later calls do
--- nothing); a source that never calls it times out; a throwing resolve counts as `done(err)`.
local function add_source(label, resolve, timeout)
  H.next_source = H.next_source + 1
  local id = H.next_source
  local source = { label = label, done = false }
  H.sources[id] = source
  H.pending = H.pending + 1
  local timer = vim.uv.new_timer()
  local function done(err)
    if source.done then
      return
    end
    source.done = true
    if timer then
      timer:stop()
      timer:close()
      timer = nil
    end
    H.pending = H.pending - 1
    if err ~= nil then
      local message = string.format("tool source %s failed: %s", label, tostring(err))
      log.write("warn", message)
      vim.schedule(function()
        notify.warn(message)
      end)
    end
    registry:changed()
  end
  local function register(name, def)
    if source.done then
      log.write("warn", string.format("tool source %s registered '%s' after done()", label, tostring(name)))
    end
    local ok, err = pcall(define, name, def, 2)
    if not ok then
      log.write("warn", tostring(err))
      vim.schedule(function()
        notify.warn(tostring(err))
      end)
    end
  end
  local seconds = type(timeout) == "number" and timeout or default_timeout()
  timer:start(
    math.floor(seconds * 1000),
    0,
    vim.schedule_wrap(function()
      done(string.format("timed out after %s s without calling done()", tostring(seconds)))
    end)
  )
  registry:changed()
  local ok, err = pcall(resolve, register, done)
  if not ok then
    done(err)
  end
end

--- Register tools. Forms:
---   register(name, definition)
---   register("my.module")        -- exports `definitions` (array) or `resolve(register, done)`
---   register({ def1, def2 })     -- an array of definitions
---   register(function(register, done) … end)
---   register({ resolve = function(register, done) … end, timeout = 60 })
---   register(definition)         -- a single table with a `name`
function M.register(a, b)
  if type(a) == "string" and b ~= nil then
    define(a, b, 2)
  elseif type(a) == "string" then
    local ok, mod = pcall(require, a)
    if not ok then
      error(string.format("flemma.tools.register: cannot load module '%s': %s", a, tostring(mod)), 2)
    end
    if type(mod) == "table" and type(mod.definitions) == "table" then
      for _, def in ipairs(mod.definitions) do
        define(def.name, def, 2)
      end
    elseif type(mod) == "table" and type(mod.resolve) == "function" then
      add_source(a, mod.resolve, mod.timeout)
    else
      error(string.format("flemma.tools.register: module '%s' exports neither `definitions` nor `resolve`", a), 2)
    end
  elseif type(a) == "function" then
    add_source("function source", a, nil)
  elseif type(a) == "table" and type(a.resolve) == "function" then
    add_source(a.name or "table source", a.resolve, a.timeout)
  elseif type(a) == "table" and a[1] ~= nil then
    for _, def in ipairs(a) do
      define(def.name, def, 2)
    end
  elseif type(a) == "table" and type(a.name) == "string" then
    define(a.name, a, 2)
  else
    error(
      "flemma.tools.register: expected (name, definition), a module name, a list of definitions or a resolve function",
      2
    )
  end
end

--- A registered Lua tool, or nil.
function M.get(name)
  return registry:get(name)
end

--- Names of the tools registered from Lua, sorted.
function M.names()
  return registry:names()
end

--- Whether every asynchronous source has called done() (or timed out).
function M.is_ready()
  return H.pending == 0
end

--- Remove a tool registered from Lua; returns whether it existed.
function M.unregister(name)
  return registry:remove(name)
end

local function js_modules()
  local ok, modules = pcall(function()
    return config.get().tools.modules
  end)
  local out = {}
  for _, name in ipairs(ok and modules or {}) do
    local path = type(name) == "string" and (name:match("%.m?js$") or name:match("%.cjs$")) and paths.expand(name)
    if path then
      out[#out + 1] = vim.fn.fnamemodify(path, ":p")
    end
  end
  return out
end

--- `tools.declarative` for the host: the directories (expanded; the project's `.flemma/tools`
--- when `project = true`, skipped quietly when it does not exist) and the env allowlist.
local function declarative()
  local ok, cfg = pcall(function()
    return config.get().tools.declarative
  end)
  if not ok or type(cfg) ~= "table" then
    return nil
  end
  local dirs = {}
  for _, dir in ipairs(cfg.dirs or {}) do
    local expanded = type(dir) == "string" and dir ~= "" and paths.expand(dir)
    if expanded then
      local path = vim.fn.fnamemodify(expanded, ":p"):gsub("/$", "")
      dirs[#dirs + 1] = { path = path }
    end
  end
  if cfg.project == true then
    dirs[#dirs + 1] = { path = vim.fn.getcwd() .. "/.flemma/tools", optional = true }
  end
  local env = {}
  for _, name in ipairs(cfg.env or {}) do
    if type(name) == "string" then
      env[#env + 1] = name
    end
  end
  return { dirs = dirs, env = env }
end

--- What the host receives: descriptions without functions.
function M.payload()
  local tools = {}
  for _, name in ipairs(M.names()) do
    local def = registry:get(name)
    tools[#tools + 1] = {
      name = name,
      description = def.description,
      input_schema = def.input_schema or { type = "object", properties = vim.empty_dict() },
      strict = def.strict,
      async = def.async,
      enabled = def.enabled,
      label = def.label,
      capabilities = def.capabilities,
      has_execute = type(def.execute) == "function",
      has_preview = type(def.format_preview) == "function",
      personalities = type(def.personalities) == "table" and def.personalities or nil,
      system_prompt = def.system_prompt,
      require_approval = type(def.require_approval) == "function" and "function" or def.require_approval,
      has_rejected = type(def.format_rejected) == "function",
      require_cmd_approval = def.require_cmd_approval == true or nil,
      never_auto_approve = def.never_auto_approve == true or nil,
      has_cmd_string = type(def.cmd_string) == "function" or nil,
      has_cancelled = type(def.format_cancelled) == "function" or nil,
      codecompanion = def.codecompanion ~= nil or nil,
    }
  end
  return {
    tools = tools,
    pending = H.pending,
    js_modules = js_modules(),
    declarative = declarative(),
    mcp = mcp.payload(),
  }
end

--- Register the Lua modules of `tools.modules` (JavaScript ones are loaded by the host).
function M.setup()
  local cfg = config.get().tools
  for _, name in ipairs(cfg.modules or {}) do
    if not (name:match("%.m?js$") or name:match("%.cjs$")) then
      local ok, err = pcall(M.register, name)
      if not ok then
        notify.warn(tostring(err))
      end
    end
  end
  registry:changed()
end

--- Subscribe once: a (re)started host gets the whole set before anything else.
function M.bootstrap()
  -- Sandbox backends defined in Lua travel with their own notification (`sandbox:define`).
  sandbox.bootstrap()
  registry:follow_host()
end

-- ---------------------------------------------------------------------------------------------
-- Execution (host → Lua)

--- The ExecutionContext a Lua tool receives (flemma.tools.context).
function M.context(facts, tool_name)
  return context.new(facts, tool_name)
end

local function send_result(call_id, result)
  H.calls[call_id] = nil
  if type(result) ~= "table" then
    result = result == nil and { success = false, error = "Tool returned no result" }
      or { success = true, output = tostring(result) }
  end
  host.notify("tools:result", { call_id = call_id, result = result })
end

--- Run a Lua tool for the host: `execute(input, ctx)` returning a result, or (async tools, or
--- functions taking three arguments) `execute(input, ctx, callback)` returning a cancel function.
function M.execute(params)
  local call_id = params.call_id
  vim.schedule(function()
    local def = registry:get(params.name)
    if not def or type(def.execute) ~= "function" then
      send_result(call_id, { success = false, error = "Unknown tool: " .. tostring(params.name) })
      return
    end
    local ctx = M.context(params.ctx or {}, params.name)
    local input = params.input
    if input == vim.NIL then
      input = {}
    end
    local finished = false
    local function callback(result)
      if finished then
        return
      end
      finished = true
      send_result(call_id, result)
    end
    local info = debug.getinfo(def.execute, "u")
    local wants_callback = def.async == true or (info and info.nparams >= 3)
    H.calls[call_id] = { cancel = nil }
    local function returned(ok, ret)
      if not ok then
        callback({ success = false, error = tostring(ret) })
      elseif wants_callback and type(ret) == "function" then
        if not finished and H.calls[call_id] then
          H.calls[call_id].cancel = ret
        end
      elseif wants_callback and type(ret) == "table" then
        -- A three-argument function that answered at once.
        callback(ret)
      elseif not wants_callback then
        callback(ret)
      end
    end
    -- In a coroutine of its own, so that the context can wait for the host.
    context.run(def.execute, returned, input, ctx, wants_callback and vim.schedule_wrap(callback) or nil)
  end)
end

--- The host gave up on a call (cancel or timeout): call the tool's cancel function.
function M.cancel(params)
  local call = H.calls[params.call_id]
  H.calls[params.call_id] = nil
  if call and call.cancel then
    local ok, err = pcall(call.cancel)
    if not ok then
      log.write("warn", "a tool's cancel function failed: " .. tostring(err))
    end
  end
end

local function call_input(params)
  local input = params.input
  if input == nil or input == vim.NIL or type(input) ~= "table" then
    input = {}
  end
  return input
end

--- Host → Lua: a tool's `require_approval` function for one call (`fn(input, ctx)`); the answer
--- as `{ value }`, or `{ error }` when it raised.
function M.require_approval(params)
  local def = registry:get(params.name)
  if not def or type(def.require_approval) ~= "function" then
    return { value = vim.NIL }
  end
  local facts = { bufnr = params.bufnr, cwd = vim.fn.getcwd(), tool_id = params.tool_id, truncate = params.truncate }
  local ok, value = pcall(def.require_approval, call_input(params), M.context(facts, params.name))
  if not ok then
    return { error = tostring(value) }
  end
  if value == nil then
    return { value = vim.NIL }
  end
  return { value = value }
end

--- Host → Lua: the error text for a rejected call (`format_rejected(reason, input)`), or nil.
function M.format_rejected(params)
  local def = registry:get(params.name)
  if not def or type(def.format_rejected) ~= "function" then
    return vim.NIL
  end
  local ok, text = pcall(def.format_rejected, params.reason or "", call_input(params))
  if not ok then
    log.write("warn", string.format("format_rejected of %s failed: %s", params.name, tostring(text)))
    return vim.NIL
  end
  return type(text) == "string" and text or vim.NIL
end

--- Host → Lua: a string a tool's optional function `field` (`cmd_string`, `format_cancelled`)
--- returns for `input`, or nil (also when it raised: logged).
local function optional_text(field, params)
  local def = registry:get(params.name)
  if not def or type(def[field]) ~= "function" then
    return vim.NIL
  end
  local ok, text = pcall(def[field], call_input(params))
  if not ok then
    log.write("warn", string.format("%s of %s failed: %s", field, params.name, tostring(text)))
    return vim.NIL
  end
  return type(text) == "string" and text or vim.NIL
end

--- Host → Lua: the command a call runs (`cmd_string(input)`), for per-command "always" approvals.
function M.cmd_string(params)
  return optional_text("cmd_string", params)
end

--- Host → Lua: the error text for a cancelled call (`format_cancelled(input)`), or nil.
function M.format_cancelled(params)
  return optional_text("format_cancelled", params)
end

--- The body of a preview for a Lua tool with `format_preview`, or nil.
function M.format_preview(name, input, max_length)
  local def = registry:get(name)
  if not def or type(def.format_preview) ~= "function" then
    return nil
  end
  local ok, text = pcall(def.format_preview, input, max_length)
  if not ok then
    log.write("warn", string.format("format_preview of %s failed: %s", name, tostring(text)))
    return nil
  end
  if type(text) == "string" then
    return text
  end
  if type(text) ~= "table" then
    return nil
  end
  -- Parts: `{ detail = string|string[], label = string }` → `<detail>  # <label>`.
  local detail = text.detail
  if type(detail) == "table" then
    local parts = {}
    for _, part in ipairs(detail) do
      if type(part) == "string" and part ~= "" then
        parts[#parts + 1] = part
      end
    end
    detail = table.concat(parts, "  ")
  end
  detail = type(detail) == "string" and detail ~= "" and detail or nil
  local label = type(text.label) == "string" and text.label ~= "" and text.label or nil
  if detail and label then
    return detail .. "  # " .. label
  end
  return detail or label
end

return M
