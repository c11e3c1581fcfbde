--- flemma.tools.approval: the approval resolver registry as Lua sees it.
---
--- The chain itself runs in the host (it also holds the built-in resolvers: config, frontmatter,
--- sandbox, catch-all). Resolvers registered here stay in Neovim: the host learns their names and
--- priorities (`approval:define`) and calls `resolve` over RPC when the chain reaches them. The
--- function form of `tools.auto_approve` (or a module path naming such a function or resolver)
--- is evaluated here the same way.
local lazy = require("flemma.util.lazy")
local turn = lazy.require("flemma.chat.turn")
local config = lazy.require("flemma.config")
local frontmatter = lazy.require("flemma.frontmatter")
local host = lazy.require("flemma.host")
local notify = lazy.require("flemma.notify")
local M = {}

M.CONFIG = "urn:flemma:approval:config"
M.FRONTMATTER = "urn:flemma:approval:frontmatter"
M.SANDBOX = "urn:flemma:approval:sandbox"
M.CATCH_ALL = "urn:flemma:approval:catch-all"
M.TOOL_DEFAULT = "urn:flemma:approval:tool-default"
M.SESSION = "urn:flemma:approval:session"
M.YOLO = "urn:flemma:approval:yolo"

local DECISIONS = { approve = true, require_approval = true, deny = true }

--- The Lua resolvers (`{name, priority, description, resolve}`), synced to the host
--- (`approval:define`).
local registry = require("flemma.util.registry").new({
  method = "approval:define",
  payload = function(self)
    local out = {}
    for _, entry in pairs(self.entries) do
      out[#out + 1] = { name = entry.name, priority = entry.priority, description = entry.description }
    end
    table.sort(out, function(a, b)
      return a.name < b.name
    end)
    return { resolvers = out }
  end,
})

--- The built-in resolvers (run by the host), as entries without a Lua `resolve`.
local function builtins()
  local ok, tools = pcall(function()
    return config.get().tools
  end)
  local list = {
    { name = M.CONFIG, priority = 100, description = "tools.auto_approve from the configuration", builtin = true },
    {
      name = M.SESSION,
      priority = 95,
      description = 'calls approved "always" in this buffer (:Flemma tool:approve-always)',
      builtin = true,
    },
    {
      name = M.YOLO,
      priority = 92,
      description = "YOLO mode (:Flemma tool:yolo, tools.yolo); not for neverAutoApprove tools",
      builtin = true,
    },
    {
      name = M.FRONTMATTER,
      priority = 90,
      description = "flemma.opt.tools.auto_approve from the buffer's frontmatter",
      builtin = true,
    },
    {
      name = M.SANDBOX,
      priority = 25,
      description = "tools that can run sandboxed, when the sandbox is enabled and available",
      builtin = true,
    },
    {
      name = M.TOOL_DEFAULT,
      priority = 10,
      description = "the tool's own approval default (requires_approval)",
      builtin = true,
    },
  }
  if ok and type(tools) == "table" and tools.require_approval == false then
    list[#list + 1] = {
      name = M.CATCH_ALL,
      priority = 0,
      description = "approves every call (tools.require_approval = false)",
      builtin = true,
    }
  end
  return list
end

local function is_builtin(name)
  return name == M.CONFIG or name == M.FRONTMATTER or name == M.SANDBOX or name == M.CATCH_ALL or name == M.TOOL_DEFAULT
end

--- Add or replace a resolver.
---@param name string
---@param def { resolve: fun(tool_name: string, input: table, ctx: table): string|nil, priority?: integer, description?: string }
function M.register(name, def)
  if type(name) ~= "string" or name == "" then
    error("flemma.tools.approval.register: the name must be a non-empty string", 2)
  end
  if is_builtin(name) then
    error(string.format("flemma.tools.approval.register: '%s' is a built-in resolver", name), 2)
  end
  if type(def) ~= "table" or type(def.resolve) ~= "function" then
    error(string.format("flemma.tools.approval.register: resolver '%s' needs a resolve function", name), 2)
  end
  local priority = def.priority == nil and 50 or def.priority
  if type(priority) ~= "number" or priority ~= math.floor(priority) then
    error(string.format("flemma.tools.approval.register: priority of '%s' must be an integer", name), 2)
  end
  if def.description ~= nil and type(def.description) ~= "string" then
    error(string.format("flemma.tools.approval.register: description of '%s' must be a string", name), 2)
  end
  registry:set(name, {
    name = name,
    priority = priority,
    description = def.description or "",
    resolve = def.resolve,
  })
end

--- Remove a resolver; true when it existed.
---@param name string
---@return boolean
function M.unregister(name)
  return registry:remove(name)
end

local function sorted()
  local all = builtins()
  for _, entry in pairs(registry.entries) do
    all[#all + 1] = entry
  end
  table.sort(all, function(a, b)
    if a.priority ~= b.priority then
      return a.priority > b.priority
    end
    return a.name < b.name
  end)
  return all
end

--- A resolver entry (a copy), or nil.
function M.get(name)
  for _, entry in ipairs(sorted()) do
    if entry.name == name then
      return vim.deepcopy(entry)
    end
  end
  return nil
end

--- Every resolver, highest priority first (ties by name), as a deep copy.
function M.get_all()
  return vim.deepcopy(sorted())
end

function M.count()
  return #sorted()
end

--- What the host receives: the Lua resolvers without their functions.
function M.payload()
  return registry:payload()
end

--- Subscribe once: a (re)started host gets the resolvers before anything else.
function M.bootstrap()
  registry:follow_host()
end

--- A decision from a resolver's return value: one of the three strings, or nil (pass).
--- Anything else is reported as an error so the host can log and skip it.
local function normalize(value)
  if value == nil or value == vim.NIL then
    return { decision = vim.NIL }
  end
  if type(value) == "string" and DECISIONS[value] then
    return { decision = value }
  end
  return {
    error = "returned " .. vim.inspect(value) .. ' (expected "approve", "require_approval", "deny" or nil)',
  }
end

local function call_ctx(params)
  local input = params.input
  if input == nil or input == vim.NIL or type(input) ~= "table" then
    input = {}
  end
  local ctx = params.ctx
  if type(ctx) ~= "table" then
    ctx = {}
  end
  return input, ctx
end

--- Host → Lua: run the Lua resolver `params.name` for one call.
function M.resolve(params)
  local entry = registry:get(params.name)
  if not entry then
    return { decision = vim.NIL }
  end
  local input, ctx = call_ctx(params)
  local ok, value = pcall(entry.resolve, params.tool_name, input, ctx)
  if not ok then
    return { error = "raised: " .. tostring(value) }
  end
  return normalize(value)
end

--- The function an `auto_approve` value stands for: the function itself, or what a module
--- path names (a module returning a function, or a table with `resolve`).
local function approver(value)
  if type(value) == "function" then
    return value
  end
  if type(value) == "string" and value:sub(1, 1) ~= "$" then
    local ok, mod = pcall(require, value)
    if not ok then
      return nil, "cannot load module '" .. value .. "': " .. tostring(mod)
    end
    if type(mod) == "function" then
      return mod
    end
    if type(mod) == "table" and type(mod.resolve) == "function" then
      return mod.resolve
    end
    return nil, "module '" .. value .. "' returns neither a function nor a table with resolve"
  end
  return nil, "not a function"
end

--- Host → Lua: evaluate the function form of `tools.auto_approve` (or a module path) for one
--- call. true → approve, false → require_approval, "deny" → deny, nil → pass.
function M.config_decision(params)
  local fn, err
  if params.source == "frontmatter" then
    -- The function the buffer's frontmatter assigned (kept from its latest run).
    local bufnr = type(params.ctx) == "table" and params.ctx.bufnr or nil
    fn = bufnr and frontmatter.function_for(bufnr, "tools.auto_approve")
    if not fn then
      return { error = "flemma.opt.tools.auto_approve: the frontmatter's function is gone (run the frontmatter again)" }
    end
  else
    local ok_cfg, tools = pcall(function()
      return config.get().tools
    end)
    fn, err = approver(ok_cfg and tools and tools.auto_approve or nil)
  end
  if not fn then
    return { error = "tools.auto_approve: " .. tostring(err) }
  end
  local input, ctx = call_ctx(params)
  local ok, value = pcall(fn, params.tool_name, input, ctx)
  if not ok then
    return { error = "tools.auto_approve raised: " .. tostring(value) }
  end
  if value == true then
    return { decision = "approve" }
  elseif value == false then
    return { decision = "require_approval" }
  end
  return normalize(value)
end

-- Session approvals: "always" and YOLO (docs/approval.md). The host keeps them per buffer for
-- the session; nothing is written to the file. Each function answers through `callback(err,
-- result)` when given one, else reports a failure as a warning.

local function host_call(method, params, callback)
  host.ensure()
  host.call(method, params, function(err, result)
    if callback then
      callback(err, result)
    elseif err then
      notify.warn(method .. ": " .. tostring(err))
    end
  end)
end

local function cursor_params(bufnr, row)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if row == nil then
    row = vim.api.nvim_win_get_cursor(0)[1] - 1
  end
  return { bufnr = bufnr, row = row }
end

--- Approve the call at `row` (0-based; default: the cursor's) and remember "always" for its tool
--- (or tool and command) in the buffer. `callback(err, entry)` gets `{ tool, command? }`.
function M.approve_always(bufnr, row, callback)
  local params = cursor_params(bufnr, row)
  -- The loop goes on once nothing waits; the host says when (flemma.chat.turn).
  params.ticket = turn.ticket(params.bufnr)
  host_call("tool:approve-always", params, callback)
end

--- The buffer's "always" approvals: `callback(err, { lines, entries = { { tool, command? } } })`.
--- Without a callback the lines are shown.
function M.always(bufnr, callback)
  host_call("tool:always", cursor_params(bufnr, 0), callback or function(err, result)
    if err then
      notify.warn("tool:always: " .. tostring(err))
    else
      notify.info(table.concat(result.lines, "\n"), { key = "tool:always", report = true })
    end
  end)
end

--- Forget the buffer's "always" approvals (only `tool`'s when given).
function M.forget_always(bufnr, tool, callback)
  local params = cursor_params(bufnr, 0)
  params.tool = tool
  host_call("tool:forget-always", params, callback)
end

--- YOLO mode for the buffer: `mode` is "on", "off" or "toggle" (default).
function M.yolo(bufnr, mode, callback)
  local params = cursor_params(bufnr, 0)
  params.mode = mode or "toggle"
  host_call("tool:yolo", params, callback)
end

--- Resolve every call waiting in the buffer into `The user cancelled the execution of the <name>
--- tool`; none of them runs. `callback(err, { cancelled = n })`.
function M.cancel_pending(bufnr, callback)
  host_call("tool:cancel-pending", cursor_params(bufnr, 0), callback)
end

return M
