--- flemma.commands.builtin: the built-in `:Flemma` subcommands, as one table of data (name →
--- `desc`, `run`, `complete`, `starts_host`; see flemma.commands.Spec), and the scratch views
--- some of them open. `flemma.commands` adds them to its registry when it is first read, and
--- dispatches, completes, lists and suggests for them as for a user's own commands.
local lazy = require("flemma.util.lazy")
local flemma_chat = lazy.require("flemma.chat")
local turn = lazy.require("flemma.chat.turn")
local autopilot = lazy.require("flemma.chat.autopilot")
local compact = lazy.require("flemma.chat.compact")
local add = lazy.require("flemma.chat.add")
local start = lazy.require("flemma.chat.start")
local files = lazy.require("flemma.chat.files")
local history = lazy.require("flemma.chat.history")
local guard = lazy.require("flemma.chat.guard")
local switch = lazy.require("flemma.commands.switch")
local host = lazy.require("flemma.host")
local log = lazy.require("flemma.host.log")
local notify = lazy.require("flemma.notify")
local review = lazy.require("flemma.review")
local diff = lazy.require("flemma.review.diff")
local sandbox = lazy.require("flemma.sandbox")
local scratch = lazy.require("flemma.ui.scratch")
local tasks = lazy.require("flemma.tasks")
local chats = lazy.require("flemma.chats")
local approval = lazy.require("flemma.tools.approval")
local usage = lazy.require("flemma.usage")
local acp = lazy.require("flemma.acp")
local M = {}

local H = {}

local function ms(value)
  return value and string.format("%d ms", value) or "?"
end

local function describe_uptime(value)
  if not value then
    return "?"
  end
  if value < 10000 then
    return string.format("%.1f s", value / 1000)
  end
  return string.format("%d s", math.floor(value / 1000))
end

--- `:Flemma host:status`: starts the host if needed and reports it once it answers.
function H.host_status()
  host.ensure()
  local sent = vim.uv.hrtime()
  host.call("host:info", nil, function(err, info)
    local status = host.status()
    local lines = {}
    if err then
      lines[#lines + 1] = string.format("host: %s (%s)", status.state, err)
    else
      local answered = math.floor((vim.uv.hrtime() - sent) / 1e6)
      lines[#lines + 1] = string.format(
        "host: running, pid %d, up %s, answered in %s",
        info.pid,
        describe_uptime(info.uptime_ms),
        ms(answered)
      )
      lines[#lines + 1] =
        string.format("  node %s, flemma %s (source %s)", info.node, info.version, info.source_hash:sub(1, 12))
    end
    lines[#lines + 1] = string.format(
      "  starts: %d, crashes in the last %d s: %d",
      status.starts,
      math.floor(status.crash_window_ms / 1000),
      status.recent_crashes
    )
    if status.last_exit then
      lines[#lines + 1] = string.format(
        "  last exit: code %d%s",
        status.last_exit.code,
        status.last_exit.intended and " (stopped)" or " (crashed)"
      )
    end
    lines[#lines + 1] = "  log: " .. status.log
    if err then
      notify.warn(table.concat(lines, "\n"), { key = "host:status", report = true })
    else
      notify.info(table.concat(lines, "\n"), { key = "host:status", report = true })
    end
  end, 5000)
end

--- A `run` that calls `fn` of `module` (loaded then) without the command's arguments.
local function calls(module, fn)
  return function()
    module[fn]()
  end
end

--- A `run` that calls `fn` of `module` with the command's arguments and context.
local function passes(module, fn)
  return function(args, ctx)
    module[fn](args, ctx)
  end
end

--- A `run` that asks the host `method` about the call under the cursor; a failure is a warning.
--- `ticket`: the action ends a turn, and the host says when (flemma.chat.turn).
local function on_call_under_cursor(method, ticket)
  return function()
    local params = { bufnr = vim.api.nvim_get_current_buf(), row = vim.api.nvim_win_get_cursor(0)[1] - 1 }
    if ticket then
      params.ticket = turn.ticket(params.bufnr)
    end
    host.call(method, params, function(err)
      if err then
        notify.warn(method .. ": " .. tostring(err))
      end
    end)
  end
end

--- Approving or rejecting writes into the reply; not while it is still being written.
local function unless_streaming(run)
  return function(args)
    if not guard.refuse(vim.api.nvim_get_current_buf()) then
      run(args)
    end
  end
end

--- In a diff tab (`tool:diff`), approving and rejecting act on the call shown there.
--- A command that first answers an agent's permission request waiting in the current buffer
--- (docs/agents.md), else runs `run`.
local function or_agent_answer(answer, run)
  return function(args)
    if not acp.answer(vim.api.nvim_get_current_buf(), answer) then
      run(args)
    end
  end
end

local function in_diff()
  return diff.owner(vim.api.nvim_get_current_buf()) ~= nil
end

--- The chat and row of the call an entry of `:Flemma review` stands for (in the quickfix window
--- or in the file it opened); an error when the cursor is on none.
local function review_entry()
  local chat, tool_id = review.current_entry()
  local row = chat and vim.api.nvim_buf_is_valid(chat) and review.call_row(chat, tool_id)
  if not row then
    error("not on a tool call of a chat, nor on a :Flemma review entry")
  end
  return chat, row
end

--- A fixed completion list (a fresh copy each time: the caller may filter it in place).
local function words(...)
  local list = { ... }
  return function()
    return vim.list_extend({}, list)
  end
end

function H.tool_approve(args)
  if in_diff() then
    return diff.approve()
  end
  if acp.answer(vim.api.nvim_get_current_buf(), "allow") then
    return
  end
  unless_streaming(on_call_under_cursor("tool:approve", true))(args)
end

function H.tool_diff()
  if in_diff() then
    return
  end
  if vim.bo.filetype ~= "chat" then
    -- From an entry of `:Flemma review`: what the call's file held before it, beside it now.
    return diff.request(review_entry())
  end
  -- An agent's waiting `edit` under the cursor (docs/agents.md): its diff view.
  if acp.diff(vim.api.nvim_get_current_buf()) then
    return
  end
  diff.request()
end

function H.tool_reject(args)
  if in_diff() then
    return diff.reject()
  end
  local params = {
    bufnr = vim.api.nvim_get_current_buf(),
    row = vim.api.nvim_win_get_cursor(0)[1] - 1,
    message = table.concat(args or {}, " "),
  }
  params.ticket = turn.ticket(params.bufnr)
  host.call("tool:reject", params, function(err)
    if err then
      notify.warn("tool:reject: " .. tostring(err))
    end
  end)
end

function H.tool_yolo(args)
  local mode = args and args[1] or "toggle"
  if mode ~= "on" and mode ~= "off" and mode ~= "toggle" then
    error(string.format("expected on, off or toggle, got '%s'", mode))
  end
  approval.yolo(nil, mode)
end

function H.status(args)
  local verbose = args and args[1] == "verbose"
  local bufnr = vim.api.nvim_get_current_buf()
  host.call("chat:status", { bufnr = bufnr, verbose = verbose }, function(err, result)
    if err then
      notify.warn("status: " .. tostring(err))
      return
    end
    H.show_status(result.lines)
  end)
end

function H.tool_undo()
  local params = { bufnr = vim.api.nvim_get_current_buf(), row = vim.api.nvim_win_get_cursor(0)[1] - 1 }
  if vim.bo.filetype ~= "chat" then
    -- From an entry of `:Flemma review` (in the quickfix window or in the file it opened).
    local chat, row = review_entry()
    params = { bufnr = chat, row = row }
  end
  if guard.refuse(params.bufnr) then
    return
  end
  host.call("tool:undo", params, function(err, answer)
    if err then
      notify.warn("tool:undo: " .. tostring(err))
    elseif answer and answer.ok then
      -- Buffers showing a restored file read it again, as after any outside change.
      pcall(vim.cmd.checktime)
    end
  end)
end

function H.tool_list()
  host.call("tool:list", vim.NIL, function(err, list)
    if err then
      notify.warn("tool:list: " .. tostring(err))
      return
    end
    if #list == 0 then
      notify.info("No tool is running", { key = "tool:list", report = true })
      return
    end
    local lines = {}
    for _, run in ipairs(list) do
      lines[#lines + 1] = string.format(
        "%s %s (buffer %d) %.1f s%s",
        run.name,
        run.id,
        run.bufnr,
        run.age_ms / 1000,
        run.background and string.format(" [background job %d]", run.job_id) or ""
      )
    end
    notify.info(table.concat(lines, "\n"), { key = "tool:list", report = true })
  end)
end

--- `:Flemma tool:output`: what the call under the cursor printed so far (or its saved output).
function H.tool_output()
  local params = { bufnr = vim.api.nvim_get_current_buf(), row = vim.api.nvim_win_get_cursor(0)[1] - 1 }
  -- The host says why there is nothing to show.
  host.call("tool:output", params, function(err, answer)
    if err then
      notify.warn("tool:output: " .. tostring(err))
    elseif answer and answer.lines then
      scratch.show("flemma://tool-output", answer.lines)
    end
  end)
end

function H.usage_estimate()
  -- The host shows the count (or why there is none); only a failed call is reported here.
  host.call("usage:estimate", { bufnr = vim.api.nvim_get_current_buf() }, function(err)
    if err then
      notify.warn("usage:estimate: " .. tostring(err))
    end
  end, 90000)
end

function H.context()
  local bufnr = vim.api.nvim_get_current_buf()
  -- The host builds the request as a send would; the answer comes back when it is ready.
  host.call("chat:context", { bufnr = bufnr }, function(err, result)
    if err then
      notify.warn("context: " .. tostring(err))
    elseif type(result) == "table" and type(result.lines) == "table" then
      scratch.show("flemma://context", result.lines)
    end
  end, 90000)
end

--- One line of `:Flemma keys`: modes, key, what it does.
local function key_line(modes, lhs, desc)
  modes = type(modes) == "table" and table.concat(modes, " ") or modes
  return string.format("  %-4s %-10s %s", modes, lhs, desc)
end

--- `:Flemma keys`: the keys Flemma maps in a chat buffer and in a diff tab, as configured.
function H.keys()
  local lines = { "chat buffer (keymaps.normal, keymaps.insert, keymaps.text_object):" }
  local bindings = flemma_chat.bindings(vim.api.nvim_get_current_buf())
  if not bindings then
    lines[#lines + 1] = "  none: keymaps.enabled is false"
  end
  for _, b in ipairs(bindings or {}) do
    lines[#lines + 1] = key_line(b.modes, b.lhs, b.desc .. (b.wait and " (waits for longer maps)" or ""))
  end
  lines[#lines + 1] = "diff tab of a pending write or edit, :Flemma tool:diff (keymaps.diff):"
  local k = diff.keys()
  for _, entry in ipairs({ { k.approve, diff.APPROVE }, { k.reject, diff.REJECT } }) do
    if entry[1] then
      lines[#lines + 1] = key_line("n", entry[1], entry[2])
    end
  end
  vim.list_extend(lines, {
    "reports (flemma://status, flemma://context, flemma://keys, ...):",
    key_line("n", "q", "close"),
    "",
    "Every key acts at once (nowait) unless marked. :help flemma-keymaps",
  })
  scratch.show("flemma://keys", lines)
end

function H.host_restart()
  if host.restart() then
    notify.info("host restarted (pid " .. tostring(host.status().pid) .. ")")
  end
end

function H.host_stop()
  if not host.stop() then
    notify.info("the host is not running")
  end
end

local LOG_LEVELS = { "debug", "info", "warn", "error" }

function H.log_level(args)
  local level = args[1]
  if not vim.tbl_contains(LOG_LEVELS, level) then
    error("expected one of debug, info, warn, error", 0)
  end
  log.set_level(level)
  if host.channel() then
    host.notify("log:level", { level = level })
  end
  notify.info("log level: " .. level)
end

--- The built-in subcommands: name → flemma.commands.Spec.
---@type table<string, flemma.commands.Spec>
M.commands = {
  send = { desc = "Send the conversation in this chat buffer", run = calls(flemma_chat, "send") },
  compact = {
    desc = "Summarise this chat with its model into a new chat file beside it, and open that",
    run = calls(compact, "run"),
  },
  -- Fork, rewind, retry (docs/history.md).
  fork = {
    desc = "Write a new chat beside this one with the conversation up to the message under the cursor, and open it",
    run = calls(history, "fork"),
  },
  rewind = {
    desc = "Go back to the message under the cursor: later file changes undone, later messages moved to a sibling file",
    run = calls(history, "rewind"),
  },
  retry = {
    desc = "Send the last request again; the new reply replaces the last one (kept in a sibling file)",
    run = calls(history, "retry"),
  },
  run = {
    desc = "Run this chat's file in the background (autopilot, auto-approved tools); the buffer follows it",
    run = calls(files, "run"),
  },
  cancel = {
    desc = "Cancel the running request of this chat buffer",
    starts_host = false,
    run = calls(flemma_chat, "cancel"),
  },
  ["tool:execute"] = {
    desc = "Run the tool call under the cursor (whatever its approval status)",
    run = calls(flemma_chat, "execute_tool"),
  },
  ["tool:cancel"] = {
    desc = "Cancel the running tool under the cursor (or the oldest one)",
    run = on_call_under_cursor("tool:cancel"),
  },
  ["tool:cancel-all"] = { desc = "Cancel every running tool", run = on_call_under_cursor("tool:cancel-all") },
  ["tool:background"] = {
    desc = "Move the running tool under the cursor (or the oldest) to the background",
    run = on_call_under_cursor("tool:background"),
  },
  ["tool:approve"] = {
    desc = "Approve the tool call under the cursor (status=approved); in a diff tab, run what its proposed side shows",
    run = H.tool_approve,
  },
  ["tool:diff"] = {
    desc = "Show the pending write or edit under the cursor as a diff (approve, edit or reject it there), or what a call that ran changed",
    run = H.tool_diff,
  },
  ["tool:reject"] = {
    desc = "Reject the tool call under the cursor; the rest of the line is the reason (in a diff tab: asked for)",
    run = or_agent_answer("reject", unless_streaming(H.tool_reject)),
  },
  -- Session approvals (docs/approval.md, "Always and YOLO").
  ["tool:approve-always"] = {
    desc = "Approve the tool call under the cursor and keep approving that tool (or command) in this buffer",
    run = or_agent_answer("allow_always", unless_streaming(calls(approval, "approve_always"))),
  },
  ["tool:always"] = {
    desc = 'List what is approved "always" in this buffer, and whether YOLO mode is on',
    run = calls(approval, "always"),
  },
  ["tool:forget-always"] = {
    desc = 'Forget this buffer\'s "always" approvals (only those of [tool] when given)',
    run = function(args)
      approval.forget_always(nil, args and args[1] or nil)
    end,
  },
  ["tool:yolo"] = {
    desc = "YOLO mode in this buffer: approve every tool call except bash and other never-auto-approve tools: yolo [on|off|toggle]",
    complete = words("on", "off", "toggle"),
    run = H.tool_yolo,
  },
  ["tool:cancel-pending"] = {
    desc = "Cancel every tool call waiting for approval in this buffer (none runs; the model is told)",
    run = calls(approval, "cancel_pending"),
  },
  status = {
    desc = "Show this buffer's provider, model, parameters, tools, approval, autopilot and sandbox, each with the layer that set it ('verbose': every option)",
    complete = words("verbose"),
    run = H.status,
  },
  ["tool:undo"] = {
    desc = "Undo the file changes of the tool call under the cursor (refused if a file changed since)",
    run = H.tool_undo,
  },
  review = {
    desc = "Put the file changes of the last turn's tool calls in the quickfix list, one entry per hunk ('all': the whole chat; with a range: those messages)",
    complete = words("all"),
    run = function(args, ctx)
      review.run(args, ctx)
    end,
  },
  ["tool:why"] = {
    desc = "Say which approval resolver decided the tool call under the cursor",
    run = on_call_under_cursor("tool:why"),
  },
  switch = {
    starts_host = false,
    desc = "Switch this chat's provider, model and parameters: switch <provider|$preset> [model] [key=value …]; switch! or switch global: every chat",
    run = function(args, ctx)
      switch.run(args, ctx)
    end,
    complete = function(arglead, args)
      return switch.complete(arglead, args)
    end,
  },
  ["autopilot:enable"] = {
    starts_host = false,
    desc = "Turn autopilot on for this session",
    run = calls(autopilot, "enable"),
  },
  ["autopilot:disable"] = {
    starts_host = false,
    desc = "Turn autopilot off for this session",
    run = calls(autopilot, "disable"),
  },
  ["autopilot:status"] = { desc = "Show autopilot's state in this buffer", run = calls(autopilot, "status") },
  ["tool:list"] = { desc = "List the running tools", run = H.tool_list },
  tasks = {
    desc = "List this chat's tasks (running, waiting, done, failed) in a scratch buffer; <CR> or tasks <n> opens one",
    run = function(args)
      tasks.list(args)
    end,
  },
  chats = {
    desc = "Pick a chat (the chat directory, chats.search and this project) and open it",
    run = calls(chats, "pick"),
  },
  ["task:return"] = {
    desc = "Send this task's latest answer back to its parent chat (a note its next send carries)",
    run = calls(tasks, "send_back"),
  },
  ["tool:output"] = {
    desc = "Show what the tool call under the cursor printed so far (or its whole saved output) in a scratch buffer",
    run = H.tool_output,
  },
  ["sandbox:enable"] = {
    starts_host = false,
    desc = "Enable the sandbox for this session",
    run = calls(sandbox, "enable"),
  },
  ["sandbox:disable"] = {
    starts_host = false,
    desc = "Disable the sandbox for this session",
    run = calls(sandbox, "disable"),
  },
  ["sandbox:status"] = { desc = "Show how the sandbox applies to this buffer", run = calls(sandbox, "status") },
  ["usage:recall"] = {
    starts_host = false,
    desc = "Show the usage bar of this buffer's last request again",
    run = calls(usage, "recall"),
  },
  ["usage:estimate"] = {
    desc = "Count the input tokens of this buffer's next request (with the provider) and its input cost",
    run = H.usage_estimate,
  },
  context = {
    desc = "Estimate this buffer's next request against the model's context window, with what it is made of (nothing is sent)",
    run = H.context,
  },
  keys = {
    starts_host = false,
    desc = "List the keys Flemma maps in a chat buffer and in a diff tab",
    run = H.keys,
  },
  ["host:status"] = { desc = "Show the host process: pid, uptime, version, crashes, log file", run = H.host_status },
  ["host:restart"] = { starts_host = false, desc = "Restart the host process now", run = H.host_restart },
  ["host:stop"] = {
    starts_host = false,
    desc = "Stop the host process (it starts again on next use)",
    run = H.host_stop,
  },
  ["log:open"] = { starts_host = false, desc = "Open the log file (host and plugin)", run = calls(log, "open") },
  ["log:level"] = {
    starts_host = false,
    desc = "Set the log level: debug, info, warn or error",
    complete = words(unpack(LOG_LEVELS)),
    run = H.log_level,
  },
  -- A new chat from anywhere (docs/chats.md, "Starting chats").
  new = {
    starts_host = false,
    desc = "Open a new chat (chats.directory, ui.new_chat.layout): new [name]; with a range, the lines in it; new %: the current file",
    complete = words("%"),
    run = passes(add, "new"),
  },
  add = {
    starts_host = false,
    desc = "Put the selected lines (:'<,'>Flemma add) or the current file (add %) into the last used chat",
    complete = words("%"),
    run = passes(add, "add"),
  },
  toggle = {
    starts_host = false,
    desc = "Show or hide the side chat (the last used chat, or a new one)",
    run = calls(start, "toggle"),
  },
  health = {
    starts_host = false,
    desc = "Run :checkhealth flemma",
    run = function()
      vim.cmd("checkhealth flemma")
    end,
  },
}

--- The report of `:Flemma status` in a scratch buffer below (`q` closes it), reused when open.
--- Messages that were shortened to fit the command line end it, in full.
function H.show_status(lines)
  local recent = notify.recent()
  if #recent > 0 then
    lines = vim.list_extend({}, lines)
    vim.list_extend(lines, { "", "messages shortened on the command line, in full:" })
    for _, item in ipairs(recent) do
      local text = item.text:gsub("\n", "\n           ")
      vim.list_extend(lines, vim.split(string.format("  %s %s", os.date("%H:%M:%S", item.time), text), "\n"))
    end
  end
  scratch.show("flemma://status", lines)
end

return M
