--- flemma.sandbox: the runtime switch (`:Flemma sandbox:enable|disable`, which beats the
--- frontmatter and setup()), the status report, and sandbox backends defined in Lua. The policy
--- itself is applied by the host: it gets the list of Lua backends (`sandbox:define`, without
--- functions) and calls back here to run their `available` and `wrap` (`sandbox.available`,
--- `sandbox.wrap`), or to load a Lua module named by `sandbox.backend` (`sandbox.load`).
local lazy = require("flemma.util.lazy")
local config = lazy.require("flemma.config")
local host = lazy.require("flemma.host")
local notify = lazy.require("flemma.notify")
local M = {}

local H = {
  override = nil, ---@type boolean|nil
  modules = {}, ---@type table<string, string>  module name → the backend name it registered
}

--- The backends registered from Lua, synced to the host (`sandbox:define`, without functions).
local registry = require("flemma.util.registry").new({
  method = "sandbox:define",
  payload = function(self)
    local list = {}
    for _, name in ipairs(self:names()) do
      local def = self.entries[name]
      list[#list + 1] = {
        name = name,
        priority = def.priority or 50,
        description = def.description,
        replace = def.replace == true or nil,
      }
    end
    return { backends = list }
  end,
})

--- Names that are selections rather than backends.
local RESERVED = { auto = true, required = true }
--- Backends built into the host: taking one of these names needs `replace = true`.
local BUILTIN = { bwrap = true }

--- The runtime override: true, false, or nil when not set.
function M.override()
  return H.override
end

function M.enable()
  H.override = true
  notify.info("sandbox enabled for this session")
  config.record("runtime", "set", "sandbox.enabled", true, ":Flemma sandbox:enable")
end

function M.disable()
  H.override = false
  notify.warn("sandbox disabled for this session: tools can write anywhere you can")
  config.record("runtime", "set", "sandbox.enabled", false, ":Flemma sandbox:disable")
end

--- `:Flemma sandbox:status`: ask the host how the policy resolves for the current buffer.
function M.status(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  host.call("sandbox:status", { bufnr = bufnr }, function(err, report)
    if err then
      notify.warn("sandbox status: " .. tostring(err))
      return
    end
    notify.info(table.concat(report.lines or {}, "\n"), { key = "sandbox:status", report = true })
  end)
end

-- ---------------------------------------------------------------------------------------------
-- Backends defined in Lua

local function is_js_path(name)
  return name:match("%.m?js$") ~= nil or name:match("%.cjs$") ~= nil
end

--- The problem with a backend definition, or nil when it is fine.
local function problem_of(def)
  if type(def) ~= "table" then
    return "the definition must be a table, got " .. type(def)
  end
  local name = def.name
  if type(name) ~= "string" or name == "" then
    return "a backend needs a name (a non-empty string), got " .. vim.inspect(name)
  end
  if RESERVED[name] then
    return string.format("'%s' is reserved and cannot name a backend", name)
  end
  if is_js_path(name) then
    return string.format("'%s' looks like a JavaScript module path and cannot name a backend", name)
  end
  local priority = def.priority
  local finite = type(priority) == "number" and priority == priority and math.abs(priority) ~= math.huge
  if priority ~= nil and not finite then
    return string.format("backend '%s': priority must be a finite number, got %s", name, vim.inspect(priority))
  end
  for _, field in ipairs({ "available", "wrap" }) do
    if type(def[field]) ~= "function" then
      return string.format("backend '%s' needs a function `%s`, got %s", name, field, type(def[field]))
    end
  end
  if def.description ~= nil and type(def.description) ~= "string" then
    return string.format("backend '%s': description must be a string", name)
  end
  if def.replace ~= nil and type(def.replace) ~= "boolean" then
    return string.format("backend '%s': replace must be a boolean", name)
  end
  if BUILTIN[name] and def.replace ~= true then
    return string.format("'%s' is a built-in backend; set replace = true to replace it", name)
  end
  return nil
end

--- What the host receives: the backends without their functions.
function M.payload()
  return registry:payload()
end

--- Register a sandbox backend:
---   { name = "firejail", priority = 60, description = "…",
---     available = function(settings) return true end,           -- or false, "why"
---     wrap = function(argv, policy, settings) return { "firejail", "--quiet", unpack(argv) } end }
--- `policy` is `{ rw_paths, network, allow_privileged, hidden_paths, read_only_paths, env_unset }`
--- (the last three: what to keep from the command, docs/tools.md); `settings` is
--- `sandbox.backends.<name>` (nil when not set). Registering a name again replaces it; the
--- built-in `bwrap` is replaced only with `replace = true`. Returns the name.
function M.register_backend(def)
  local problem = problem_of(def)
  if problem then
    error("flemma.sandbox.register_backend: " .. problem, 2)
  end
  registry:set(def.name, vim.tbl_extend("force", {}, def))
  return def.name
end

--- Remove a backend registered from Lua; returns whether it existed. (A replaced built-in comes
--- back in the host.)
function M.unregister_backend(name)
  for module, backend in pairs(H.modules) do
    if backend == name then
      H.modules[module] = nil
    end
  end
  return registry:remove(name)
end

--- Names of the backends registered from Lua, sorted (`:Flemma sandbox:status` lists all).
function M.backends()
  return registry:names()
end

--- Subscribe once: a (re)started host gets the list before anything else.
function M.bootstrap()
  registry:follow_host()
end

--- The settings table as a backend sees it: nil when absent or empty.
local function settings_of(settings)
  if type(settings) ~= "table" or next(settings) == nil then
    return nil
  end
  return settings
end

local function missing(name)
  return string.format("no backend named '%s' is registered in Lua", tostring(name))
end

--- Host → Lua `sandbox.available {name, settings}` → `{ok, error?}`. A backend that raises is
--- unavailable, with the error as the reason.
function M.call_available(params)
  local def = registry:get(params.name)
  if not def then
    return { ok = false, error = missing(params.name) }
  end
  local ok, answer, why = pcall(def.available, settings_of(params.settings))
  if not ok then
    return { ok = false, error = tostring(answer) }
  end
  if answer == true then
    return { ok = true }
  end
  if answer == false or answer == nil then
    return { ok = false, error = why ~= nil and tostring(why) or "unavailable" }
  end
  if type(answer) == "table" and type(answer.ok) == "boolean" then
    if answer.ok then
      return { ok = true }
    end
    return { ok = false, error = answer.error ~= nil and tostring(answer.error) or "unavailable" }
  end
  return { ok = false, error = "available() must return true, or false and a reason; got " .. type(answer) }
end

--- Host → Lua `sandbox.wrap {name, argv, policy, settings}` → `{argv}` or `{error}`.
function M.call_wrap(params)
  local def = registry:get(params.name)
  if not def then
    return { error = missing(params.name) }
  end
  local argv = vim.deepcopy(params.argv or {})
  local policy = params.policy or {}
  local ok, out = pcall(def.wrap, argv, {
    rw_paths = vim.deepcopy(policy.rw_paths or {}),
    network = policy.network == true,
    allow_privileged = policy.allow_privileged == true,
    hidden_paths = vim.deepcopy(policy.hidden_paths or {}),
    read_only_paths = vim.deepcopy(policy.read_only_paths or {}),
    env_unset = vim.deepcopy(policy.env_unset or {}),
  }, settings_of(params.settings))
  if not ok then
    return { error = tostring(out) }
  end
  if type(out) ~= "table" or #out == 0 then
    local got = type(out) == "table" and "an empty table" or type(out)
    return { error = "wrap() must return a non-empty list of strings, got " .. got }
  end
  local count = 0
  for _ in pairs(out) do
    count = count + 1
  end
  if count ~= #out then
    return { error = "wrap() must return a list of strings (it returned a table with other keys)" }
  end
  for i, item in ipairs(out) do
    if type(item) ~= "string" then
      return { error = string.format("wrap() must return a list of strings, item %d is a %s", i, type(item)) }
    end
  end
  return { argv = out }
end

--- Host → Lua `sandbox.load {module}`: `require` a Lua module named by `sandbox.backend` and
--- register the backend it returns (the definition itself, or a table with `backend`; a
--- definition without a name takes the module's). Answers `{name, backend}`, `{found = false}`
--- when there is no such module, or `{error}`.
function M.load(params)
  local module = params and params.module
  if type(module) ~= "string" or module == "" then
    return { found = false }
  end
  local function answer(name)
    local spec
    for _, item in ipairs(M.payload().backends) do
      if item.name == name then
        spec = item
      end
    end
    return { name = name, backend = spec }
  end
  if H.modules[module] and registry:get(H.modules[module]) then
    return answer(H.modules[module])
  end
  if registry:get(module) then
    return answer(module)
  end
  local ok, mod = pcall(require, module)
  if not ok then
    if tostring(mod):find("module '" .. module .. "' not found", 1, true) then
      return { found = false }
    end
    return { error = tostring(mod) }
  end
  local def = mod
  if type(mod) == "table" and type(mod.backend) == "table" then
    def = mod.backend
  end
  if type(def) == "table" and def.name == nil then
    def = vim.tbl_extend("force", {}, def, { name = module })
  end
  local problem = problem_of(def)
  if problem then
    return { error = string.format("module '%s': %s", module, problem) }
  end
  H.modules[module] = def.name
  registry:set(def.name, vim.tbl_extend("force", {}, def))
  return answer(def.name)
end

return M
