--- flemma.log: the plugin's log file, shared by the shim and the host (which appends its own lines).
local lazy = require("flemma.util.lazy")
local config = lazy.require("flemma.config")
local redact = lazy.require("flemma.host.redact")
local paths = require("flemma.util.path")
local M = {}

local LEVELS = { debug = 1, info = 2, warn = 3, error = 4 }

local H = { level = "info", overridden = false }

local function logging_config()
  local ok, cfg = pcall(function()
    return config.get()
  end)
  return ok and type(cfg) == "table" and cfg or {}
end

--- The path of the log file (shared by the shim and the host): `logging.path`, by default
--- `stdpath("log")/flemma.log`.
function M.path()
  local logging = logging_config().logging
  if type(logging) == "table" and type(logging.path) == "string" and logging.path ~= "" then
    -- A path that cannot be expanded (an unset variable, an unknown user) leaves the default.
    local path = paths.expand(logging.path)
    if path ~= nil then
      return path
    end
  end
  return vim.fs.joinpath(vim.fn.stdpath("log"), "flemma.log")
end

--- The level the configuration asks for: `logging.level` when `logging.enabled` (verbose
--- logging), else `host.log_level`.
function M.configured_level()
  local cfg = logging_config()
  if type(cfg.logging) == "table" and cfg.logging.enabled and type(cfg.logging.level) == "string" then
    local level = cfg.logging.level:lower()
    return level == "trace" and "debug" or level
  end
  return type(cfg.host) == "table" and cfg.host.log_level or "info"
end

--- Apply the configured level (after setup); a level set at run time is dropped.
function M.configure()
  H.overridden = false
  M.set_level(M.configured_level())
  H.overridden = false
end

--- Set the level for this session (`:Flemma log:level`); it outlives host restarts.
function M.set_level(level)
  if LEVELS[level] then
    H.level = level
    H.overridden = true
  end
end

function M.get_level()
  return H.level
end

--- Append one line to the log; never raises.
---@param level "debug"|"info"|"warn"|"error"
---@param message string
function M.write(level, message)
  if (LEVELS[level] or 4) < LEVELS[H.level] then
    return
  end
  M.append(string.format("[lua] %s %s", level:upper(), message))
end

--- Append raw text (already tagged) with a timestamp; used for the host's stderr. Secrets are
--- redacted first (`flemma.redact`, the host's rules).
function M.append(text)
  pcall(function()
    text = redact.text(text)
    local dir = vim.fn.stdpath("log")
    if vim.fn.isdirectory(dir) == 0 then
      vim.fn.mkdir(dir, "p")
    end
    local file = io.open(M.path(), "a")
    if not file then
      return
    end
    local stamp = os.date("!%Y-%m-%dT%H:%M:%SZ")
    for line in (text .. "\n"):gmatch("(.-)\n") do
      file:write(stamp, " ", line, "\n")
    end
    file:close()
  end)
end

--- Past this size the log is rotated (at host start): the old file becomes `flemma.log.1`.
M.MAX_BYTES = 2 * 1024 * 1024

--- Rotate the log if it grew past MAX_BYTES; returns whether it did.
function M.rotate()
  local path = M.path()
  local stat = vim.uv.fs_stat(path)
  if not stat or stat.size <= M.MAX_BYTES then
    return false
  end
  os.remove(path .. ".1")
  return os.rename(path, path .. ".1") == true
end

--- Open the log file in a split.
function M.open()
  local path = M.path()
  if vim.fn.filereadable(path) == 0 then
    M.append("[lua] INFO log opened")
  end
  vim.cmd("split " .. vim.fn.fnameescape(path))
  vim.bo.autoread = true
end

return M
