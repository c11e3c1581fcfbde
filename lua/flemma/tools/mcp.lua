--- flemma.mcp: MCP servers from the `mcp` configuration. The host connects them and registers
--- their tools as `mcp:<server>:<tool>`; this module sends the configuration along with Lua's
--- tools and provides `:Flemma mcp:status`, `mcp:restart [server]`, `mcp:resources [server]` and
--- `mcp:prompt <server> <name> [key=value …]` (docs/mcp.md).
local lazy = require("flemma.util.lazy")
local buffer = lazy.require("flemma.chat.buffer")
local guard = lazy.require("flemma.chat.guard")
local commands = lazy.require("flemma.commands")
local config = lazy.require("flemma.config")
local host = lazy.require("flemma.host")
local notify = lazy.require("flemma.notify")
local scan = lazy.require("flemma.ui.scan")
local M = {}

local H = {
  registered = false,
  --- Each connected server's `{prompts, resources}`, as the host last sent it (`mcp.catalog`):
  --- completion reads it, so that completing never waits on the host.
  catalog = {},
}

--- The `mcp` section as the host receives it (data only).
---@return table
function M.payload()
  local ok, cfg = pcall(function()
    return config.get().mcp
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
    return config.get().mcp
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
  host.call("mcp:status", vim.NIL, function(err, result)
    if err then
      notify.warn("mcp:status: " .. tostring(err))
      return
    end
    notify.info(table.concat(result.lines, "\n"), { key = "mcp:status", report = true })
  end)
end

--- `:Flemma mcp:restart [server]`.
---@param server string|nil
function M.restart(server)
  host.call("mcp:restart", { server = server or vim.NIL }, function(err)
    if err then
      notify.warn("mcp:restart: " .. tostring(err))
    end
  end)
end

--- The host's copy of the servers' prompts and resources (the `mcp.catalog` notification).
---@param servers table|nil
function M.set_catalog(servers)
  H.catalog = type(servers) == "table" and servers or {}
end

--- `:Flemma mcp:resources [server]`: asks the host (without blocking) and shows its answer.
---@param server string|nil
function M.resources(server)
  host.call("mcp:resources", { server = server or vim.NIL }, function(err, result)
    if err then
      notify.warn("mcp:resources: " .. tostring(err))
      return
    end
    notify.info(table.concat(result.lines, "\n"), { key = "mcp:resources", report = true })
  end)
end

--- Names of servers that have prompts (every configured one while the host has said nothing).
---@return string[]
function H.prompt_servers()
  local names = {}
  for name, entry in pairs(H.catalog) do
    if type(entry) == "table" and type(entry.prompts) == "table" and #entry.prompts > 0 then
      names[#names + 1] = name
    end
  end
  if #names == 0 then
    return M.server_names()
  end
  table.sort(names)
  return names
end

---@return table|nil the prompt `name` of `server` in the catalogue
function H.prompt_info(server, name)
  local entry = H.catalog[server]
  for _, prompt in ipairs(type(entry) == "table" and entry.prompts or {}) do
    if prompt.name == name then
      return prompt
    end
  end
end

--- Completion of `:Flemma mcp:prompt <server> <name> [key=value …]`.
---@param args string[] the finished arguments
---@return string[]
function H.complete_prompt(args)
  if #args == 0 then
    return H.prompt_servers()
  end
  local entry = H.catalog[args[1]]
  if #args == 1 then
    local names = {}
    for _, prompt in ipairs(type(entry) == "table" and entry.prompts or {}) do
      names[#names + 1] = prompt.name
    end
    table.sort(names)
    return names
  end
  -- The prompt's arguments not given yet, required ones first.
  local given = {}
  for i = 3, #args do
    given[args[i]:match("^([^=]+)=") or ""] = true
  end
  local out = {}
  local prompt = H.prompt_info(args[1], args[2])
  for _, want in ipairs({ true, false }) do
    for _, arg in ipairs(prompt and prompt.arguments or {}) do
      if (arg.required == true) == want and not given[arg.name] then
        out[#out + 1] = arg.name .. "="
      end
    end
  end
  return out
end

--- Lines to put at the end of `bufnr` for the prompt's `lines`: an empty `@You:` that ends the
--- chat is filled rather than left before the prompt; a prompt that ends with the assistant gets
--- an empty `@You:` after it (where the next question goes), like a reply does.
---@return integer first the first line replaced (0-based)
---@return string[] lines
function H.insertion(bufnr, lines)
  local count = vim.api.nvim_buf_line_count(bufnr)
  local last = count -- 1-based index of the last line that is not blank
  while last >= 1 and vim.api.nvim_buf_get_lines(bufnr, last - 1, last, false)[1]:match("^%s*$") do
    last = last - 1
  end
  local out = {}
  local first
  local last_line = last >= 1 and vim.api.nvim_buf_get_lines(bufnr, last - 1, last, false)[1] or nil
  if last_line and scan.role_marker(last_line) == "You" and scan.role_marker(lines[1]) == "You" then
    first = last - 1
  else
    first = last
    if last >= 1 then
      out[1] = ""
    end
  end
  vim.list_extend(out, lines)
  local tail_role
  for i = #lines, 1, -1 do
    tail_role = scan.role_marker(lines[i])
    if tail_role then
      break
    end
  end
  if tail_role == "Assistant" then
    vim.list_extend(out, { "", "@You:", "" })
  end
  return first, out
end

--- `:Flemma mcp:prompt <server> <name> [key=value …]`: the prompt's messages inserted at the end
--- of the current chat as `@You:` / `@Assistant:` text, in one undo step, never while the chat is
--- locked (a reply streaming, tools running).
---@param args string[]
function M.prompt(args)
  local bufnr = vim.api.nvim_get_current_buf()
  if vim.bo[bufnr].filetype ~= "chat" then
    notify.warn("mcp:prompt: run it in a chat buffer")
    return
  end
  local server, name = args[1], args[2]
  if not server or not name then
    local known = server and H.complete_prompt({ server }) or {}
    notify.warn(
      "mcp:prompt: usage: :Flemma mcp:prompt <server> <name> [key=value …]"
        .. (#known > 0 and (" (prompts of " .. server .. ": " .. table.concat(known, ", ") .. ")") or "")
    )
    return
  end
  local values = {}
  for i = 3, #args do
    local key, value = args[i]:match("^([^=]+)=(.*)$")
    if not key then
      notify.warn(string.format("mcp:prompt: '%s' is not key=value", args[i]))
      return
    end
    values[key] = value
  end
  if buffer.is_locked(bufnr) then
    notify.warn("mcp:prompt: nothing inserted: the chat is " .. guard.message(bufnr))
    return
  end
  local params = { server = server, name = name, args = next(values) and values or vim.empty_dict() }
  host.call("mcp:prompt", params, function(err, result)
    if err then
      notify.warn("mcp:prompt: " .. tostring(err))
      return
    end
    if not vim.api.nvim_buf_is_valid(bufnr) then
      return
    end
    -- The chat may have become busy while the server answered.
    if buffer.is_locked(bufnr) then
      notify.warn("mcp:prompt: nothing inserted: the chat is " .. guard.message(bufnr))
      return
    end
    local first, lines = H.insertion(bufnr, result.lines)
    -- One call: one undo step.
    vim.api.nvim_buf_set_lines(bufnr, first, -1, false, lines)
    for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
      vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(bufnr), 0 })
    end
    local message = string.format("MCP prompt '%s' of %s inserted", name, server)
    if type(result.notes) == "table" and #result.notes > 0 then
      message = message .. ": " .. table.concat(result.notes, "; ")
    end
    notify.info(message, { key = "mcp:prompt" })
  end)
end

--- Register the `:Flemma mcp:…` commands (once).
function M.bootstrap()
  if H.registered then
    return
  end
  H.registered = true
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
  commands.register("mcp:resources", {
    desc = "List the resources of an MCP server (all of them without a name)",
    complete = function()
      return M.server_names()
    end,
    run = function(args)
      M.resources(args[1])
    end,
  })
  commands.register("mcp:prompt", {
    desc = "Insert an MCP server's prompt into the chat: mcp:prompt <server> <name> [key=value …]",
    complete = function(_, args)
      return H.complete_prompt(args)
    end,
    run = function(args)
      M.prompt(args)
    end,
  })
end

-- The servers go with the host: nothing to complete until the next host lists them.
host.on_exit(function()
  M.set_catalog(nil)
end)

return M
