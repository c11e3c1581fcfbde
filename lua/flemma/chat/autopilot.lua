--- flemma.chat.autopilot: the Lua half of autopilot. The host owns the state machine (idle, armed,
--- paused, the turn counter) and the resume delay's timer; Lua owns what needs the editor: the
--- runtime switch (`:Flemma autopilot:enable|disable`), and watching the buffer while a continue
--- waits: a change to it cancels the continue (the user started typing, so the automatic
--- continue would fight them), and so does `<C-c>`.
local lazy = require("flemma.util.lazy")
local config = lazy.require("flemma.config")
local hooks = lazy.require("flemma.hooks")
local host = lazy.require("flemma.host")
local notify = lazy.require("flemma.notify")
local M = {}

local H = {
  override = nil, ---@type boolean|nil
  pending = {}, ---@type table<integer, { token: integer, done: boolean }>
}

--- The runtime switch: true, false, or nil when not set (the configuration decides).
function M.override()
  return H.override
end

function M.enable()
  H.override = true
  notify.info("autopilot enabled for this session")
  config.record("runtime", "set", "tools.autopilot.enabled", true, ":Flemma autopilot:enable")
end

function M.disable()
  H.override = false
  for bufnr in pairs(H.pending) do
    M.cancel({ bufnr = bufnr, quiet = true })
  end
  notify.info("autopilot disabled for this session: <C-]> continues by hand")
  config.record("runtime", "set", "tools.autopilot.enabled", false, ":Flemma autopilot:disable")
end

--- `:Flemma autopilot:status`: the switch and, from the host, each buffer's state.
function M.status(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  host.call("autopilot:status", { bufnr = bufnr }, function(err, report)
    if err then
      notify.warn("autopilot status: " .. tostring(err))
      return
    end
    notify.info(table.concat(report.lines or {}, "\n"), { key = "autopilot:status", report = true })
  end)
end

local function stop(entry)
  entry.done = true
end

--- Host → Lua: the host's timer continues `bufnr` after the resume delay; until it does (or says
--- `autopilot.cancel`), a change to the text cancels the continue: the host hears
--- `autopilot:cancelled` with the same token and `autopilot:resume-cancelled` fires.
function M.watch(params)
  local bufnr, token = params.bufnr, params.token
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return false
  end
  local previous = H.pending[bufnr]
  if previous then
    stop(previous)
  end
  local entry = { token = token, done = false }
  H.pending[bufnr] = entry
  -- Any change to the text from now on cancels; the callback detaches itself once done.
  vim.api.nvim_buf_attach(bufnr, false, {
    on_lines = function()
      if entry.done then
        return true
      end
      stop(entry)
      if H.pending[bufnr] == entry then
        H.pending[bufnr] = nil
      end
      vim.schedule(function()
        hooks.emit("autopilot:resume-cancelled", { bufnr = bufnr })
        host.notify("autopilot:cancelled", { bufnr = bufnr, token = token })
      end)
      return true
    end,
  })
  return true
end

--- Host → Lua (or the disable switch): drop a scheduled continue.
function M.cancel(params)
  local entry = H.pending[params.bufnr]
  if not entry then
    return false
  end
  stop(entry)
  H.pending[params.bufnr] = nil
  if not params.quiet then
    hooks.emit("autopilot:resume-cancelled", { bufnr = params.bufnr })
  end
  if not params.from_host then
    host.notify("autopilot:cancelled", { bufnr = params.bufnr, token = entry.token })
  end
  return true
end

return M
