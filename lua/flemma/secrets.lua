--- flemma.secrets: the credential resolver chain as Lua sees it.
---
--- The chain and its cache live in the host, with the built-in resolvers (environment at 100,
--- secret_tool and keychain at 50, gcloud at 25). Resolvers registered here stay in Neovim: the
--- host learns their names and priorities (`secrets:define`) and calls them over RPC when the
--- chain reaches them. Values never go to a log or a message.
local lazy = require("flemma.util.lazy")
local config = lazy.require("flemma.config")
local host = lazy.require("flemma.host")
local M = {}

local BUILTINS = {
  { name = "environment", priority = 100, description = "{SERVICE}_{KIND} in Neovim's environment, then aliases" },
  { name = "secret_tool", priority = 50, description = "secret-tool lookup (Linux Secret Service)" },
  { name = "keychain", priority = 50, description = "security find-generic-password (macOS Keychain)" },
  { name = "gcloud", priority = 25, description = "gcloud auth print-access-token (access tokens only)" },
}

--- The Lua resolvers, synced to the host (`secrets:define`).
local registry = require("flemma.util.registry").new({
  method = "secrets:define",
  payload = function(self)
    local out = {}
    for _, entry in pairs(self.entries) do
      out[#out + 1] = { name = entry.name, priority = entry.priority }
    end
    table.sort(out, function(a, b)
      return a.name < b.name
    end)
    return { resolvers = out }
  end,
})

local function is_builtin(name)
  for _, entry in ipairs(BUILTINS) do
    if entry.name == name then
      return true
    end
  end
  return false
end

--- Add or replace a resolver.
---@param name string
---@param def { priority?: integer, supports?: fun(self: table, credential: table, ctx: table): boolean, resolve: fun(self: table, credential: table, ctx: table): { value: string, ttl?: integer }|nil }
function M.register(name, def)
  if type(name) ~= "string" or name == "" then
    error("flemma.secrets.register: the name must be a non-empty string", 2)
  end
  if is_builtin(name) then
    error(string.format("flemma.secrets.register: '%s' is a built-in resolver", name), 2)
  end
  if type(def) ~= "table" or type(def.resolve) ~= "function" then
    error(string.format("flemma.secrets.register: resolver '%s' needs a resolve function", name), 2)
  end
  if def.supports ~= nil and type(def.supports) ~= "function" then
    error(string.format("flemma.secrets.register: supports of '%s' must be a function", name), 2)
  end
  local priority = def.priority == nil and 50 or def.priority
  if type(priority) ~= "number" or priority ~= math.floor(priority) then
    error(string.format("flemma.secrets.register: priority of '%s' must be an integer", name), 2)
  end
  registry:set(name, { name = name, priority = priority, def = def })
end

--- Remove a resolver; true when it existed.
---@param name string
---@return boolean
function M.unregister(name)
  return registry:remove(name)
end

--- Every resolver (built-ins included), highest priority first, ties by name.
---@return { name: string, priority: integer, builtin: boolean }[]
function M.get_all()
  local all = {}
  for _, entry in ipairs(BUILTINS) do
    all[#all + 1] = { name = entry.name, priority = entry.priority, description = entry.description, builtin = true }
  end
  for _, entry in pairs(registry.entries) do
    all[#all + 1] = { name = entry.name, priority = entry.priority, builtin = false }
  end
  table.sort(all, function(a, b)
    if a.priority ~= b.priority then
      return a.priority > b.priority
    end
    return a.name < b.name
  end)
  return all
end

--- Forget the cached value of one credential (the next request resolves it again).
---@param kind string  e.g. "api_key"
---@param service string  e.g. "anthropic"
function M.invalidate(kind, service)
  if host.channel() then
    host.notify("secrets:invalidate", { kind = kind, service = service })
  end
end

--- Forget every cached credential.
function M.invalidate_all()
  if host.channel() then
    host.notify("secrets:invalidate", { all = true })
  end
end

--- What the host receives: the Lua resolvers without their functions.
function M.payload()
  return registry:payload()
end

--- Subscribe once: a (re)started host gets the resolvers before anything else.
function M.bootstrap()
  registry:follow_host()
end

--- The context a resolver receives: its settings (`secrets.<name>`, a copy) and a way to say
--- why it could not help.
local function context(name, diagnostics)
  return {
    get_config = function()
      local ok, cfg = pcall(function()
        return config.get().secrets
      end)
      if not ok or type(cfg) ~= "table" or cfg[name] == nil then
        return nil
      end
      return vim.deepcopy(cfg[name])
    end,
    diagnostic = function(_, message)
      diagnostics[#diagnostics + 1] = tostring(message)
    end,
  }
end

--- Host → Lua: ask the resolver `params.name` for `params.credential`.
function M.resolve(params)
  local entry = registry:get(params.name)
  if not entry then
    return { supported = false, diagnostics = { "no longer registered" } }
  end
  local credential = type(params.credential) == "table" and params.credential or {}
  if credential.ttl == vim.NIL then
    credential.ttl = nil
  end
  local diagnostics = {}
  local ctx = context(entry.name, diagnostics)
  local def = entry.def
  if def.supports then
    local ok, supported = pcall(def.supports, def, credential, ctx)
    if not ok then
      return { supported = false, diagnostics = diagnostics, error = "supports() raised: " .. tostring(supported) }
    end
    if not supported then
      if #diagnostics == 0 then
        diagnostics[1] = "does not handle " .. tostring(credential.kind) .. ":" .. tostring(credential.service)
      end
      return { supported = false, diagnostics = diagnostics }
    end
  end
  local ok, result = pcall(def.resolve, def, credential, ctx)
  if not ok then
    return { supported = true, diagnostics = diagnostics, error = "resolve() raised: " .. tostring(result) }
  end
  if result == nil or result == vim.NIL then
    return { supported = true, diagnostics = diagnostics }
  end
  if type(result) == "string" then
    result = { value = result }
  end
  if type(result) ~= "table" or type(result.value) ~= "string" then
    return {
      supported = true,
      diagnostics = diagnostics,
      error = "resolve() returned something other than { value = … }",
    }
  end
  return { supported = true, value = result.value, ttl = result.ttl, diagnostics = diagnostics }
end

return M
