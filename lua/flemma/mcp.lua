--- flemma.mcp: MCP servers from the `mcp` configuration. The host connects them and registers
--- their tools as `mcp:<server>:<tool>`; this module sends the configuration along with Lua's
--- tools and provides `:Flemma mcp:status` and `:Flemma mcp:restart [server]`.
local M = {}

local H = { registered = false }

--- The `mcp` section as the host receives it (data only).
---@return table
function M.payload()
  local ok, cfg = pcall(function()
    return require("flemma.config").get().mcp
  end)
  if not ok or type(cfg) ~= "table" then
    return { servers = vim.empty_dict() }
  end
  local servers = {}
  for name, server in pairs(cfg.servers or {}) do
    servers[name] = server
  end
  return {
    servers = next(servers) and servers or vim.empty_dict(),
    timeout = cfg.timeout,
    reconnect = cfg.reconnect,
  }
end

--- Configured server names, sorted (completion of `:Flemma mcp:restart`).
---@return string[]
function M.server_names()
  local ok, cfg = pcall(function()
    return require("flemma.config").get().mcp
  end)
  local names = {}
  if ok and type(cfg) == "table" then
    for name in pairs(cfg.servers or {}) do
      names[#names + 1] = name
    end
  end
  table.sort(names)
  return names
end

--- `:Flemma mcp:status`: asks the host (without blocking) and shows its answer.
function M.status()
  require("flemma.host").call("mcp:status", vim.NIL, function(err, result)
    local notify = require("flemma.notify")
    if err then
      notify.warn("mcp:status: " .. tostring(err))
      return
    end
    notify.info(table.concat(result.lines, "\n"), { key = "mcp:status" })
  end)
end

--- `:Flemma mcp:restart [server]`.
---@param server string|nil
function M.restart(server)
  require("flemma.host").call("mcp:restart", { server = server or vim.NIL }, function(err)
    if err then
      require("flemma.notify").warn("mcp:restart: " .. tostring(err))
    end
  end)
end

--- Register the `:Flemma mcp:…` commands (once).
function M.bootstrap()
  if H.registered then
    return
  end
  H.registered = true
  local commands = require("flemma.commands")
  commands.register("mcp:status", {
    desc = "Show the MCP servers: transport, state, tools, uptime, last error",
    run = function()
      M.status()
    end,
  })
  commands.register("mcp:restart", {
    desc = "Reconnect an MCP server (all of them without a name)",
    complete = function()
      return M.server_names()
    end,
    run = function(args)
      M.restart(args[1])
    end,
  })
end

return M
