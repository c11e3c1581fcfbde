--- flemma.host: starts, watches and restarts the TypeScript host (`node dist/host.js`, msgpack-RPC
--- over stdio). Lua never blocks on it: work goes out as notifications, answers come back as calls.
local log = require("flemma.host.log")
local notify = require("flemma.notify")
local lazy = require("flemma.util.lazy")
local buffer = lazy.require("flemma.chat.buffer")
local flemma_config = lazy.require("flemma.config")
local pending = lazy.require("flemma.host.pending")
local hooks = lazy.require("flemma.hooks")
local progress = lazy.require("flemma.ui.progress")

local M = {}

local H = {
  exit_listeners = {}, ---@type fun(intended: boolean)[]
  state = "stopped", ---@type "stopped"|"running"|"waiting"|"failed"
  job = nil, ---@type integer|nil
  pid = nil, ---@type integer|nil
  started_at = nil, ---@type integer|nil  (hrtime, ns)
  starts = 0,
  crashes = {}, ---@type integer[]  (hrtime of recent crashes, ns)
  last_exit = nil, ---@type { code: integer, pid: integer|nil, at: integer }|nil
  stopping = {}, ---@type table<integer, true>  jobs we stopped on purpose
  queue = {}, ---@type { method: string, args: table }[]  notifications waiting for a start
  timer = nil,
  stderr_tail = "",
  pids = {}, ---@type table<integer, integer>  pid of each job, until its exit
  last_error = nil, ---@type { message: string, at: integer }|nil  the last start failure reported
}

--- A start failure is reported once, not once per caller of the same user action.
local REPEAT_ERROR_AFTER_MS = 3000

local function config()
  local ok, cfg = pcall(function()
    return flemma_config.get().host
  end)
  cfg = ok and type(cfg) == "table" and cfg or {}
  local restart = type(cfg.restart) == "table" and cfg.restart or {}
  return {
    node = cfg.node or "node",
    log_level = cfg.log_level or "info",
    max_attempts = restart.max_attempts or 5,
    window_ms = restart.window_ms or 60000,
    backoff_ms = restart.backoff_ms or 100,
  }
end

--- The plugin's root directory (the one holding lua/, dist/, package.json).
function M.root()
  local source = debug.getinfo(1, "S").source:sub(2)
  return vim.fn.fnamemodify(source, ":p:h:h:h:h")
end

function M.bundle_path()
  return vim.fs.joinpath(M.root(), "dist", "host.js")
end

--- What builds the host in the plugin's directory: the plugin managers' `build` and the README's
--- install by hand. `--omit=dev`: the build needs the bundler and the bundled libraries only.
M.BUILD_COMMAND = "npm ci --omit=dev && npm run build"

--- The name lazy.nvim knows this plugin by, when lazy.nvim manages its directory.
local function lazy_name(root)
  local ok, plugins = pcall(function()
    return require("lazy.core.config").plugins
  end)
  if not ok or type(plugins) ~= "table" then
    return nil
  end
  root = vim.fs.normalize(root)
  for name, plugin in pairs(plugins) do
    if type(plugin) == "table" and type(plugin.dir) == "string" and vim.fs.normalize(plugin.dir) == root then
      return type(plugin.name) == "string" and plugin.name or name
    end
  end
  return nil
end

--- How to build (again), for messages: lazy.nvim's build command and the npm one.
function M.build_hint()
  local root = M.root()
  return string.format(
    "run `:Lazy build %s` (lazy.nvim), or `%s` in %s",
    lazy_name(root) or "flemma",
    M.BUILD_COMMAND,
    root
  )
end

local function now()
  return vim.uv.hrtime()
end

local function recent_crashes(window_ms)
  local cutoff = now() - window_ms * 1e6
  local kept = {}
  for _, at in ipairs(H.crashes) do
    if at >= cutoff then
      kept[#kept + 1] = at
    end
  end
  H.crashes = kept
  return #kept
end

local function on_stderr(_, data)
  if type(data) ~= "table" then
    return
  end
  -- Lines arrive in pieces: the last element is an unfinished line, kept for the next call.
  data[1] = H.stderr_tail .. (data[1] or "")
  H.stderr_tail = table.remove(data) or ""
  for _, line in ipairs(data) do
    if line ~= "" then
      log.append("[host stderr] " .. line)
    end
  end
end

local function fire(name, data)
  pcall(hooks.emit, name, data)
end

--- Run `listener(intended)` each time a host exits, before its buffers are unlocked: for the
--- modules holding something the host owned (they register when loaded).
---@param listener fun(intended: boolean)
function M.on_exit(listener)
  H.exit_listeners[#H.exit_listeners + 1] = listener
end

local function on_exit(job, code)
  if H.stderr_tail ~= "" then
    log.append("[host stderr] " .. H.stderr_tail)
    H.stderr_tail = ""
  end
  local intended = H.stopping[job]
  H.stopping[job] = nil
  local pid = H.pids[job]
  H.pids[job] = nil
  if H.job == job then
    H.job, H.pid, H.started_at = nil, nil, nil
    if H.state == "running" then
      H.state = "stopped"
    end
  end
  H.last_exit = { code = code, pid = pid, at = now(), intended = intended or false }
  pending.fail_all(intended and "the host was stopped" or "the host exited", job)
  -- What went with the host (a reply it was streaming gets the end it could not write, the MCP
  -- catalogue), said before the buffers are unlocked.
  for _, listener in ipairs(H.exit_listeners) do
    local ok, err = pcall(listener, intended or false)
    if not ok then
      log.write("error", "host exit listener failed: " .. tostring(err))
    end
  end
  local released = buffer.unlock_all()
  progress.stop_all()
  log.write(intended and "info" or "error", string.format("host (pid %s) exited with code %d", tostring(pid), code))
  if not intended then
    H.crashes[#H.crashes + 1] = now()
    -- NOTE: a warning, not an error: Neovim pauses for a second before redrawing over an error
    -- message, and the plugin recovers from this by itself.
    notify.warn(
      string.format(
        "the host process exited unexpectedly (exit code %d)%s. It restarts on next use. Log: %s",
        code,
        released > 0 and string.format("; %d buffer(s) unlocked", released) or "",
        log.path()
      )
    )
  end
  fire("host:exited", { code = code, pid = pid or vim.NIL, intended = intended or false })
end

local function flush_queue()
  local queued = H.queue
  H.queue = {}
  for _, item in ipairs(queued) do
    M.notify(item.method, unpack(item.args))
  end
end

--- V8's pool of background threads (its optimising compiler, the garbage collector's helpers):
--- one core is left to Neovim. Node makes 4 whatever the machine; on two cores, those threads
--- compiling while a chat is sent took the CPU from Neovim and the host (docs/architecture.md).
function H.pool_flag()
  local cores = vim.uv.available_parallelism()
  return "--v8-pool-size=" .. math.max(1, math.min(4, cores - 1))
end

--- Start the host now (no backoff). Returns the channel id, or nil and an error message.
function M.start()
  if H.job then
    return H.job
  end
  if H.timer then
    H.timer:stop()
    H.timer:close()
    H.timer = nil
  end
  local cfg = config()
  local bundle = M.bundle_path()
  if vim.fn.filereadable(bundle) == 0 then
    H.state = "failed"
    return nil, string.format("the host is not built (%s is missing): %s", bundle, M.build_hint())
  end
  if vim.fn.executable(cfg.node) == 0 then
    H.state = "failed"
    return nil,
      string.format("the node executable '%s' was not found: install Node.js >= 20 or set host.node", cfg.node)
  end
  log.rotate()
  local ok, job = pcall(vim.fn.jobstart, { cfg.node, H.pool_flag(), bundle }, {
    rpc = true,
    cwd = M.root(),
    env = { FLEMMA_LOG_FILE = log.path(), FLEMMA_LOG_LEVEL = log.get_level() },
    on_stderr = on_stderr,
    on_exit = on_exit,
  })
  if not ok or type(job) ~= "number" or job <= 0 then
    H.state = "failed"
    return nil, string.format("could not start the host with '%s': %s", cfg.node, tostring(job))
  end
  H.job = job
  H.pid = vim.fn.jobpid(job)
  H.pids[job] = H.pid
  H.last_error = nil
  H.started_at = now()
  H.starts = H.starts + 1
  H.state = "running"
  log.write("info", string.format("host started (pid %d, channel %d)", H.pid, job))
  pending.adopt(job)
  fire("host:started", { pid = H.pid, channel = job })
  flush_queue()
  return job
end

--- Start the host, or tell the user why it cannot start (node missing, bundle not built).
function H.start_or_report()
  local job, err = M.start()
  if not job then
    local last = H.last_error
    if not last or last.message ~= err or (now() - last.at) / 1e6 > REPEAT_ERROR_AFTER_MS then
      notify.error(err)
    end
    H.last_error = { message = err, at = now() }
  end
  return job
end

--- Make sure the host is running, or will be: after a crash the restart waits a backoff
--- (backoff_ms doubled per recent crash); after too many crashes it stops restarting by itself.
--- Returns the channel if it is running now.
function M.ensure()
  if H.job then
    return H.job
  end
  if H.state == "waiting" then
    return nil
  end
  local cfg = config()
  local crashes = recent_crashes(cfg.window_ms)
  if crashes > cfg.max_attempts then
    if H.state ~= "failed" then
      H.state = "failed"
      notify.warn(
        string.format(
          "the host crashed %d times in %d s; it is not restarted automatically. Log: %s. Run :Flemma host:restart to try again.",
          crashes,
          math.floor(cfg.window_ms / 1000),
          log.path()
        )
      )
    end
    return nil
  end
  local delay = 0
  if crashes > 0 and H.last_exit then
    local wanted = cfg.backoff_ms * 2 ^ (crashes - 1)
    local elapsed = (now() - H.last_exit.at) / 1e6
    delay = math.max(0, math.floor(wanted - elapsed))
  end
  if delay == 0 then
    return H.start_or_report()
  end
  H.state = "waiting"
  H.timer = vim.uv.new_timer()
  H.timer:start(delay, 0, function()
    vim.schedule(function()
      if H.state == "waiting" then
        H.state = "stopped"
        H.start_or_report()
      end
    end)
  end)
  return nil
end

--- Send a notification to the host (starting it if needed); queued while a restart waits.
function M.notify(method, ...)
  local args = { ... }
  local chan = M.ensure()
  if not chan then
    if H.state == "waiting" then
      H.queue[#H.queue + 1] = { method = method, args = args }
    end
    return false
  end
  local ok, err = pcall(vim.rpcnotify, chan, method, unpack(args))
  if not ok then
    log.write("warn", string.format("rpcnotify %s failed: %s", method, tostring(err)))
  end
  return ok
end

--- Call a host action without blocking: `callback(err, result)` runs on the answer, on timeout
--- (`timeout_ms`, default 10 s) or when the host exits.
function M.call(method, params, callback, timeout_ms)
  if params == nil then
    params = vim.NIL
  end
  local chan = M.ensure()
  local id = pending.track(callback, timeout_ms or 10000, chan)
  if not chan and H.state ~= "waiting" then
    pending.settle(id, false, "the host is not running")
    return
  end
  M.notify("call", id, method, params)
end

--- Stop the host on purpose (no crash message).
function M.stop()
  if H.timer then
    H.timer:stop()
    H.timer:close()
    H.timer = nil
  end
  if H.state == "waiting" then
    H.state = "stopped"
  end
  local job = H.job
  if not job then
    return false
  end
  H.stopping[job] = true
  pcall(vim.fn.jobstop, job)
  return true
end

--- Stop (if running) and start again now, clearing the crash history.
function M.restart()
  local old = H.job
  M.stop()
  if old then
    -- on_exit of the old job runs later; forget it now so start() does not return it.
    H.job, H.pid, H.started_at = nil, nil, nil
  end
  H.crashes = {}
  H.state = "stopped"
  return H.start_or_report()
end

--- A snapshot of the host's state (no RPC).
function M.status()
  return {
    state = H.state,
    channel = H.job,
    pid = H.pid,
    uptime_ms = H.started_at and math.floor((now() - H.started_at) / 1e6) or nil,
    starts = H.starts,
    recent_crashes = recent_crashes(config().window_ms),
    crash_window_ms = config().window_ms,
    last_exit = H.last_exit,
    log = log.path(),
    bundle = M.bundle_path(),
    node = config().node,
  }
end

--- The channel id if running (for callers that must not start it).
function M.channel()
  return H.job
end

return M
