--- flemma.health: `:checkhealth flemma`: Neovim, Node.js, the bundle's freshness, the host, the
--- sandbox, provider credentials, MCP servers and ACP agents; every problem says how to fix it.
local lazy = require("flemma.util.lazy")
local config = lazy.require("flemma.config")
local host = lazy.require("flemma.host")
local log = lazy.require("flemma.host.log")
local secrets = lazy.require("flemma.secrets")
local mcp = lazy.require("flemma.tools.mcp")
local M = {}

--- Providers and the environment variables that hold their credentials, in the order the
--- environment resolver tries them (the other resolvers of the chain are only named: asking a
--- keyring or gcloud from a health check could prompt or take seconds).
M.providers = {
  { name = "anthropic", env = { "ANTHROPIC_API_KEY" } },
  { name = "openai", env = { "OPENAI_API_KEY" } },
  { name = "vertex", env = { "VERTEX_ACCESS_TOKEN", "VERTEX_AI_ACCESS_TOKEN" } },
  { name = "gemini", env = { "GEMINI_API_KEY", "GOOGLE_API_KEY" } },
  { name = "moonshot", env = { "MOONSHOT_API_KEY" } },
}

local MIN_NODE_MAJOR = 20
local HOST_TIMEOUT_MS = 5000
local HOST_WAIT_MS = 6000
--- What `acp:probe` may take: the host waits 8 s for each agent's answer (in parallel).
local AGENT_WAIT_MS = 10000

local H = {}

local health = vim.health

local function node_executable()
  local success, node = pcall(function()
    return config.get().host.node
  end)
  if success and type(node) == "string" and node ~= "" then
    return node
  end
  return "node"
end

--- Run a command and return its trimmed stdout, or nil and a reason.
local function run(cmd)
  local success, result = pcall(function()
    return vim.system(cmd, { text = true }):wait(5000)
  end)
  if not success then
    return nil, tostring(result)
  end
  if result.code ~= 0 then
    local reason = vim.trim(result.stderr or "")
    return nil, string.format("exit code %d%s", result.code, reason ~= "" and (": " .. reason) or "")
  end
  return vim.trim(result.stdout or ""), nil
end

local function read_file(path)
  local file = io.open(path, "rb")
  if not file then
    return nil
  end
  local content = file:read("*a")
  file:close()
  return content
end

--- dist/build-info.json as a table, or nil.
local function build_info(root)
  local text = read_file(vim.fs.joinpath(root, "dist", "build-info.json"))
  if not text then
    return nil
  end
  local success, decoded = pcall(vim.json.decode, text)
  if success and type(decoded) == "table" and type(decoded.source_hash) == "string" then
    return decoded
  end
  return nil
end

local function short(hash)
  return type(hash) == "string" and hash:sub(1, 12) or "?"
end

--- Byte-wise string order (Lua's `<` may follow the locale's collation).
local function byte_less(a, b)
  local len = math.min(#a, #b)
  for i = 1, len do
    local x, y = a:byte(i), b:byte(i)
    if x ~= y then
      return x < y
    end
  end
  return #a < #b
end

--- Regular files under `dir` (relative POSIX paths, prefixed with `prefix`); like
--- scripts/source-hash.mjs, symbolic links are neither followed nor counted.
local function walk(dir, prefix, out)
  local handle = vim.uv.fs_scandir(dir)
  if not handle then
    return out
  end
  while true do
    local name, kind = vim.uv.fs_scandir_next(handle)
    if not name then
      break
    end
    local full = vim.fs.joinpath(dir, name)
    if not kind then
      local stat = vim.uv.fs_lstat(full)
      kind = stat and stat.type
    end
    if kind == "directory" then
      walk(full, prefix .. name .. "/", out)
    elseif kind == "file" then
      out[#out + 1] = prefix .. name
    end
  end
  return out
end

local function sha256(data)
  local success, digest = pcall(vim.fn.sha256, data)
  if success then
    return digest
  end
  -- Neovim 0.10 cannot hash a string holding NUL bytes (it becomes a Blob): let Node do it.
  local script = [[
    const h = require("node:crypto").createHash("sha256");
    process.stdin.on("data", (d) => h.update(d)).on("end", () => process.stdout.write(h.digest("hex")));
  ]]
  local done, result = pcall(function()
    return vim.system({ node_executable(), "-e", script }, { stdin = data, text = true }):wait(10000)
  end)
  if done and result.code == 0 and #result.stdout == 64 then
    return result.stdout
  end
  return nil, "could not hash the sources: " .. tostring(digest)
end

--- The fingerprint scripts/source-hash.mjs computes: sha256 over `path\ncontent\n` for src/** and
--- package.json, sorted by path. Returns nil and a reason when a file cannot be read.
---@param root string
---@return string|nil hash
---@return string|nil err
function M.source_hash(root)
  local paths = walk(vim.fs.joinpath(root, "src"), "src/", {})
  paths[#paths + 1] = "package.json"
  table.sort(paths, byte_less)
  local parts = {}
  for _, path in ipairs(paths) do
    local content = read_file(vim.fs.joinpath(root, path))
    if not content then
      return nil, "cannot read " .. path
    end
    parts[#parts + 1] = path .. "\n" .. content .. "\n"
  end
  return sha256(table.concat(parts))
end

function H.check_neovim()
  health.start("Neovim")
  local version = tostring(vim.version())
  if vim.fn.has("nvim-0.10") == 1 then
    health.ok("Neovim " .. version)
    return true
  end
  health.error(string.format("Neovim %s is too old: Flemma needs 0.10 or newer; upgrade Neovim", version))
  return false
end

--- Returns whether the configured Node.js can run the host.
function H.check_node()
  health.start("Node.js")
  local node = node_executable()
  local fix = string.format("install Node.js >= %d or set host.node = '/path/to/node' in setup()", MIN_NODE_MAJOR)
  local path = vim.fn.exepath(node)
  if path == "" then
    health.error(string.format("the Node.js executable '%s' (host.node) was not found: %s", node, fix))
    return false
  end
  local out, err = run({ path, "--version" })
  if not out then
    health.error(string.format("`%s --version` failed (%s): %s", path, err, fix))
    return false
  end
  local parsed = vim.version.parse(out)
  if not parsed then
    health.error(string.format("`%s --version` printed '%s', not a version: %s", path, out, fix))
    return false
  end
  if parsed.major < MIN_NODE_MAJOR then
    health.error(string.format("Node.js %s (%s) is too old (host.node = '%s'): %s", out, path, node, fix))
    return false
  end
  health.ok(string.format("Node.js %s (%s)", out, path))
  return true
end

--- Returns whether dist/host.js exists.
function H.check_bundle()
  health.start("Bundle")
  local root = host.root()
  local bundle = host.bundle_path()
  if vim.fn.filereadable(bundle) == 0 then
    health.error(string.format("%s is missing: %s", bundle, host.build_hint()))
    return false
  end
  local built = build_info(root)
  if built then
    health.ok(
      string.format(
        "%s (flemma %s, source %s, built %s)",
        bundle,
        tostring(built.version),
        short(built.source_hash),
        tostring(built.built_at)
      )
    )
  else
    health.ok(bundle)
  end
  if vim.fn.isdirectory(vim.fs.joinpath(root, "src")) == 0 then
    health.info("no src/ directory (an install that ships only dist/): the freshness check is skipped")
    return true
  end
  if not built then
    health.warn(string.format("dist/build-info.json is missing or unreadable: %s", host.build_hint()))
    return true
  end
  local current, err = M.source_hash(root)
  if not current then
    health.warn(string.format("cannot tell whether dist/ is current (%s): %s", err, host.build_hint()))
  elseif current == built.source_hash then
    health.ok(string.format("built from the current sources (source %s)", short(current)))
  else
    health.warn(
      string.format(
        "dist/ is older than the sources: %s (dist/ source %s, src/ source %s)",
        host.build_hint(),
        short(built.source_hash),
        short(current)
      )
    )
  end
  return true
end

--- Whether `:help flemma` opens: doc/tags is made by the build and by the plugin's first load,
--- unless the directory is not writable.
function H.check_help()
  health.start("Help")
  local doc = vim.fs.joinpath(host.root(), "doc")
  local found = #vim.fn.getcompletion("flemma-credentials", "help") > 0
  if found then
    health.ok(string.format(":help flemma opens (%s)", vim.fs.joinpath(doc, "tags")))
  else
    health.warn(
      string.format(
        ":help flemma does not open (E149): %s is missing or not on 'runtimepath'; run `:helptags %s`",
        vim.fs.joinpath(doc, "tags"),
        doc
      )
    )
  end
end

--- Start the host if needed and time its answer to `host:info`.
function H.check_host(can_start)
  health.start("Host")
  local log_path = log.path()
  local running = host.channel() ~= nil
  if not running and not can_start then
    health.error("the host cannot start: fix the Node.js and Bundle problems above, then run :checkhealth flemma again")
    return
  end
  local sent = vim.uv.hrtime()
  local done, answer_err, answer, elapsed_ms = false, nil, nil, nil
  host.ensure()
  host.call("host:info", nil, function(err, result)
    elapsed_ms = math.floor((vim.uv.hrtime() - sent) / 1e6)
    answer_err, answer, done = err, result, true
  end, HOST_TIMEOUT_MS)
  vim.wait(HOST_WAIT_MS, function()
    return done
  end, 10)

  if not done or answer_err or type(answer) ~= "table" then
    local reason = tostring(answer_err or (done and "an unexpected answer" or "no answer"))
    local crashes = host.status().recent_crashes
    if crashes > 0 then
      reason = string.format(
        "%s; %d crash(es) in the last %d s",
        reason,
        crashes,
        math.floor(host.status().crash_window_ms / 1000)
      )
    end
    health.error(
      string.format(
        "the host does not answer (%s): see the log %s; run :Flemma host:restart to try again",
        reason,
        log_path
      )
    )
    return
  end
  health.ok(
    string.format(
      "host answers (pid %s, %s in %d ms)",
      tostring(answer.pid),
      running and "already running, answered" or "started and answered",
      elapsed_ms
    )
  )

  local running_desc = string.format(
    "flemma %s, source %s, node %s",
    tostring(answer.version),
    short(answer.source_hash),
    tostring(answer.node)
  )
  local built = build_info(host.root())
  if not built then
    health.info("running host: " .. running_desc)
  elseif answer.source_hash == built.source_hash then
    health.ok("running host matches dist/ (" .. running_desc .. ")")
  else
    health.warn(
      string.format(
        "the running host (%s) is older than dist/ (source %s): run :Flemma host:restart",
        running_desc,
        short(built.source_hash)
      )
    )
  end
end

function H.check_sandbox()
  health.start("Sandbox")
  local ok_cfg, cfg = pcall(function()
    return config.get().sandbox
  end)
  local configured = ok_cfg and cfg and cfg.backends and cfg.backends.bwrap and cfg.backends.bwrap.path or "bwrap"
  if ok_cfg and cfg and cfg.enabled == false then
    health.info("sandbox.enabled = false: tools run without a sandbox")
  end
  local path = vim.fn.exepath(configured)
  if path == "" then
    health.warn(
      string.format(
        "bubblewrap (%s) not found: tools run without a sandbox; install bubblewrap (apt install bubblewrap)",
        configured
      )
    )
  else
    local version, err = run({ path, "--version" })
    if not version then
      health.warn(
        string.format(
          "`%s --version` failed (%s): tools run without a sandbox; reinstall bubblewrap (apt install bubblewrap)",
          path,
          err
        )
      )
    else
      health.ok(string.format("%s (%s)", version, path))
    end
  end
  local rg = vim.fn.exepath("rg")
  if rg == "" then
    health.info("ripgrep (rg) not found: the grep tool uses grep instead (apt install ripgrep)")
  else
    health.ok("ripgrep for the grep tool (" .. rg .. ")")
  end
end

--- The first non-empty variable of `names` in Neovim's environment; never its value.
local function credential_var(names)
  for _, name in ipairs(names) do
    local value = vim.env[name]
    if type(value) == "string" and vim.trim(value) ~= "" then
      return name
    end
  end
  return nil
end

function H.check_providers(providers)
  health.start("Providers")
  local found = 0
  for _, provider in ipairs(providers) do
    local var = credential_var(provider.env)
    if var then
      found = found + 1
      health.ok(string.format("%s: credential found in $%s", provider.name, var))
    else
      local wanted = vim.tbl_map(function(name)
        return "$" .. name
      end, provider.env)
      health.info(string.format("%s: no credential (set %s)", provider.name, table.concat(wanted, " or ")))
    end
  end
  local others = {}
  for _, resolver in ipairs(secrets.get_all()) do
    if resolver.name ~= "environment" then
      others[#others + 1] = string.format("%s (%d)", resolver.name, resolver.priority)
    end
  end
  health.info(
    "credentials not in the environment are looked up when a request needs them, in: "
      .. table.concat(others, ", ")
      .. " (see :help flemma-credentials)"
  )
  if found == 0 then
    health.warn(
      "no provider has a credential in the environment: export one of the variables above in the shell "
        .. "that starts Neovim (e.g. `export ANTHROPIC_API_KEY=...` in your shell profile), or store it in "
        .. "a keyring or a resolver of your own (:help flemma-credentials)"
    )
  end
end

--- The SDKs are loaded lazily on first use; this loads each once (as a first send would) and
--- reports versions and load times, or what failed.
function H.check_sdks()
  if not host.channel() then
    return
  end
  local done, err, report = false, nil, nil
  host.call("provider:sdks", nil, function(e, result)
    err, report, done = e, result, true
  end, HOST_TIMEOUT_MS)
  vim.wait(HOST_WAIT_MS, function()
    return done
  end, 10)
  if not done or err or type(report) ~= "table" then
    health.error(
      string.format(
        "the provider SDKs could not be loaded (%s): %s; log: %s",
        tostring(err or "no answer"),
        host.build_hint(),
        log.path()
      )
    )
    return
  end
  local names = vim.tbl_keys(report)
  table.sort(names)
  for _, name in ipairs(names) do
    local sdk = report[name]
    if sdk.ok then
      health.ok(string.format("SDK %s %s loads (%d ms)", sdk.package, sdk.version, math.floor(sdk.load_ms)))
    else
      health.error(string.format("SDK %s does not load: %s; %s", sdk.package, tostring(sdk.error), host.build_hint()))
    end
  end
end

--- MCP servers: each configured one's command (or URL), then what the host says about it.
function H.check_mcp()
  health.start("MCP")
  local names = mcp.server_names()
  if #names == 0 then
    health.info("no MCP server is configured (mcp.servers)")
    return
  end
  local servers = config.get().mcp.servers
  for _, name in ipairs(names) do
    local server = servers[name]
    local command = server.command
    if server.enabled ~= false and type(command) == "string" and not command:find("${", 1, true) then
      if vim.fn.executable(command) ~= 1 then
        health.error(string.format("MCP server '%s': the command '%s' is not an executable on PATH", name, command))
      end
    end
  end
  if not host.channel() then
    return
  end
  local done, err, report = false, nil, nil
  host.call("mcp:status", nil, function(e, result)
    err, report, done = e, result, true
  end, HOST_TIMEOUT_MS)
  vim.wait(HOST_WAIT_MS, function()
    return done
  end, 10)
  if not done or err or type(report) ~= "table" then
    health.warn("the host did not say how its MCP servers are: " .. tostring(err or "no answer"))
    return
  end
  for _, server in ipairs(report.servers) do
    local tools = #server.tools
    local summary =
      string.format("MCP server '%s' (%s): %s, %d tool(s)", server.name, server.transport, server.state, tools)
    if server.state == "connected" then
      health.ok(summary)
    elseif server.state == "disabled" then
      health.info(string.format("MCP server '%s' is disabled (enabled = false)", server.name))
    elseif server.state == "starting" or server.state == "reconnecting" then
      health.warn(summary .. (server.lastError and (": " .. server.lastError) or ""))
    else
      health.error(
        string.format(
          "%s: %s; fix it, then run :Flemma mcp:restart %s",
          summary,
          tostring(server.lastError or "stopped"),
          server.name
        )
      )
    end
  end
end

--- Runners that install what they run: a ready entry run so is asked only if `setup()` set it.
local INSTALLERS = { npx = true, bunx = true, pnpx = true }

--- Whether the user's `setup()` (or a run-time change) set the agent `name`.
local function user_set(name)
  local prefix = "acp.agents." .. name .. "."
  for path in pairs(config.origins()) do
    if path:sub(1, #prefix) == prefix then
      return true
    end
  end
  return false
end

--- The agents of `acp.agents` (docs/agents.md, "Checking an agent"): whether each one's program is
--- on PATH, then what it answers to `initialize`: a chat's running agent answers itself; one the
--- user's setup() set, or a ready entry not run through `npx`, is started, asked and ended by
--- the host (waiting `AGENT_WAIT_MS` at most).
function H.check_acp()
  health.start("Agents (ACP)")
  local agents = config.get().acp.agents
  local names = vim.tbl_keys(agents)
  table.sort(names)
  local startable, ready = {}, {}
  for _, name in ipairs(names) do
    local agent = agents[name]
    local line = table.concat(vim.list_extend({ agent.command }, vim.deepcopy(agent.args)), " ")
    local path = vim.fn.exepath(agent.command)
    if path ~= "" then
      health.ok(string.format("agent '%s': %s (%s found)", name, line, path))
      local installs = INSTALLERS[vim.fn.fnamemodify(agent.command, ":t")]
      table.insert((user_set(name) or not installs) and startable or ready, name)
    else
      health.info(string.format("agent '%s': %s (%s is not on PATH)", name, line, agent.command))
    end
  end
  local answered = #names > 0 and host.channel() and H.check_agents(startable) or {}
  ready = vim.tbl_filter(function(name)
    return not answered[name]
  end, ready)
  if #ready > 0 then
    local list = table.concat(ready, ", ")
    health.info("not started to ask their version (their runner would install them): " .. list)
  end
end

--- What the agents answer to `initialize` (those a chat runs, and `startable`), one line each;
--- returns the names that answered.
function H.check_agents(startable)
  local done, err, report = false, nil, nil
  host.call("acp:probe", { names = startable }, function(e, result)
    err, report, done = e, result, true
  end, AGENT_WAIT_MS)
  vim.wait(AGENT_WAIT_MS + 1000, function()
    return done
  end, 10)
  if not done or err or type(report) ~= "table" then
    health.warn("the host did not say what the agents answer: " .. tostring(err or "no answer"))
    return {}
  end
  local answered = {}
  for _, agent in ipairs(report.agents) do
    local say = ({ ok = health.ok, warn = health.warn })[agent.level] or health.error
    say(string.format("agent '%s': %s", agent.name, agent.text))
    answered[agent.name] = true
  end
  return answered
end

function M.check()
  if not H.check_neovim() then
    return
  end
  local node_ok = H.check_node()
  local bundle_ok = H.check_bundle()
  H.check_help()
  H.check_host(node_ok and bundle_ok)
  H.check_sandbox()
  H.check_providers(M.providers)
  H.check_sdks()
  H.check_mcp()
  H.check_acp()
end

return M
