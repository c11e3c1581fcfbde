--- flemma.rebuild: a new build reaches a Neovim that is running. An update of the plugin (lazy.nvim's
--- `:Lazy update`, a `git pull` and `npm run build`) replaces dist/ under the running host, which
--- keeps the old code in memory while the files it loads lazily (dist/sdk/) are the new build's.
--- The host is restarted on the new build at the next idle moment: when no buffer is locked and
--- the host says nothing runs (`host:info`'s `busy`: a request, a tool, a background job, an
--- automatic continue). dist/build-info.json, which the build writes last, is watched with a stat
--- every two seconds while a host runs; nothing is watched while none does.
local lazy = require("flemma.util.lazy")
local buffer = lazy.require("flemma.chat.buffer")
local hooks = lazy.require("flemma.hooks")
local flemma_host = lazy.require("flemma.host")
local log = lazy.require("flemma.host.log")
local notify = lazy.require("flemma.notify")
local M = {}

local POLL_MS = 2000
--- How soon a busy host is asked again.
local RETRY_MS = 2000
local ASK_TIMEOUT_MS = 5000

local H = {
  started_with = nil, ---@type string|nil  dist/build-info.json when the running host started
  poll = nil, ---@type uv.uv_fs_poll_t|nil
  retry = nil, ---@type uv.uv_timer_t|nil
  asking = false, -- a `host:info` is on its way
  told = nil, ---@type string|nil  the build the "restarts once idle" message was shown for
  bootstrapped = false,
}

local function host()
  return flemma_host
end

local function info_path()
  return vim.fs.joinpath(host().root(), "dist", "build-info.json")
end

--- dist/build-info.json as written, or nil while a build has not written it yet.
local function read_info()
  local file = io.open(info_path(), "rb")
  if not file then
    return nil
  end
  local text = file:read("*a")
  file:close()
  return text ~= "" and text or nil
end

local function close(handle)
  if handle and not handle:is_closing() then
    handle:stop()
    handle:close()
  end
end

local function any_locked()
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if buffer.is_locked(bufnr) then
      return true
    end
  end
  return false
end

function H.schedule_retry()
  close(H.retry)
  H.retry = vim.uv.new_timer()
  H.retry:start(RETRY_MS, 0, function()
    vim.schedule(M.check)
  end)
end

--- The host is busy with a new build waiting: say so once per build, and ask again later.
function H.wait(build)
  if H.told ~= build then
    H.told = build
    notify.info(
      "Flemma was updated: the host restarts on the new build once the running request and tools "
        .. "are done (:Flemma host:restart restarts it now)",
      { key = "rebuild" }
    )
  end
  H.schedule_retry()
end

function H.restart()
  close(H.retry)
  log.write("info", "dist/ was rebuilt: restarting the host on the new build")
  if host().restart() then
    notify.info(
      string.format("Flemma was updated: the host restarted on the new build (pid %d)", host().status().pid),
      { key = "rebuild" }
    )
  end
end

--- Compare dist/build-info.json with the one the running host started with; restart the host
--- when it changed and nothing runs, else try again later.
function M.check()
  if not host().channel() or H.asking then
    return
  end
  local build = read_info()
  if build == nil or build == H.started_with then
    return
  end
  if any_locked() then
    H.wait(build)
    return
  end
  H.asking = true
  host().call("host:info", nil, function(err, info)
    H.asking = false
    if read_info() ~= build or not host().channel() then
      -- Another build meanwhile (the next poll sees it), or the host is gone (the next start
      -- reads the new build anyway).
      return
    end
    -- NOTE: a host older than `busy` does not say; then the locks alone decide.
    if err or type(info) ~= "table" or info.busy == true or any_locked() then
      H.wait(build)
    else
      H.restart()
    end
  end, ASK_TIMEOUT_MS)
end

function H.on_started()
  H.started_with = read_info()
  close(H.retry)
  if H.poll and not H.poll:is_closing() then
    return
  end
  H.poll = vim.uv.new_fs_poll()
  -- NOTE: the callback runs in a fast event; the check reads files and calls the host.
  H.poll:start(info_path(), POLL_MS, function()
    vim.schedule(M.check)
  end)
end

function H.on_exited()
  -- A restart starts the new host before the old one's exit arrives: keep watching for it.
  if host().channel() then
    return
  end
  close(H.poll)
  close(H.retry)
  H.poll, H.retry, H.asking = nil, nil, false
end

--- Follow the host's starts and exits (from flemma.bootstrap()).
function M.bootstrap()
  if H.bootstrapped then
    return
  end
  H.bootstrapped = true
  hooks.on("host:started", H.on_started)
  hooks.on("host:exited", H.on_exited)
end

return M
