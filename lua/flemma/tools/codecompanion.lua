--- flemma.tools.codecompanion: CodeCompanion-style tool tables as Flemma Lua tools.
---
--- A CodeCompanion tool (`schema` in OpenAI's function format, `cmds`, `env`, `handlers`,
--- `output`, `opts`, `system_prompt`) is turned into an ordinary Lua tool definition: `execute`
--- runs the `cmds` chain, `format_preview` shows `output.prompt`, and the approval default, the
--- rejection text and the system prompt travel to the host with the rest of the definition.
---
--- Decisions (docs/tools.md, "CodeCompanion-style tools"):
--- - `cmds` run one after another. A command (an argv table, `{ cmd = argv }`, or a string run by
---   'shell') runs with `vim.system` in the tool's working directory (through the sandbox when
---   one is active), `${var}` taken from `env(args, self)`; a variable `env` does not define is an
---   error. A function `(self, args, input, output_handler)` gets the previous step's output as
---   `input` and either returns `{ status, data }` or calls `output_handler` once (later calls, and
---   a return after a call, are ignored).
--- - The first failing step stops the chain: `output.error(self, cmd, stderr, stdout, meta)` runs
---   once; a string it returns is the error text, else the step's own (a command's exit code and
---   stderr, a function's `data`).
--- - After every successful step `output.success(self, cmd, stdout, meta)` runs (`stdout`: every
---   step's output so far); the last string it returned is the result. Otherwise the result is
---   built as the chain runs: a command's stdout is added on a new line, a function's `data`
---   replaces what came before (it received that as `input` and answers for the chain so far).
--- - `opts.timeout` (milliseconds) bounds each command; a command past it is killed and the error
---   says `Command timed out after <N>ms and was terminated`.
--- - `handlers.setup(self)` runs before the first step (it may set `self.cmds`), `handlers.on_exit`
---   after the last, whatever happened.
local log = require("flemma.host.log")

local M = {}

--- Whether `def` is a CodeCompanion tool table rather than a Flemma definition.
---@param def table
---@return boolean
function M.is_codecompanion(def)
  if type(def) ~= "table" or def.execute ~= nil then
    return false
  end
  if def.cmds ~= nil then
    return true
  end
  local schema = def.schema
  return type(schema) == "table" and schema.type == "function" and type(schema["function"]) == "table"
end

--- `opts.requires_approval`, or its newer name `require_approval_before`.
local function approval_option(tool)
  local opts = type(tool.opts) == "table" and tool.opts or {}
  if opts.require_approval_before ~= nil then
    return opts.require_approval_before
  end
  return opts.requires_approval
end

--- A per-call instance of the tool: its fields, plus the call's arguments.
local function instance(tool, name, args, ctx)
  local self = setmetatable({
    name = name,
    args = args,
    request = { name = name, args = args, action = args },
    ctx = ctx,
    bufnr = ctx and ctx.bufnr or nil,
  }, { __index = tool })
  if type(tool.cmds) == "table" then
    self.cmds = vim.list_extend({}, tool.cmds)
  end
  return self
end

local function as_text(value)
  if value == nil or value == vim.NIL then
    return ""
  end
  if type(value) == "string" then
    return value
  end
  if type(value) == "table" then
    local ok, encoded = pcall(vim.json.encode, value)
    return ok and encoded or vim.inspect(value)
  end
  return tostring(value)
end

local function chomp(text)
  return (text or ""):gsub("\n+$", "")
end

--- `${var}` in `text` from `env`; an undefined variable is an error.
local function substitute(text, env)
  local missing
  local out = text:gsub("%${([%w_]+)}", function(var)
    local value = env[var]
    if value == nil then
      missing = missing or var
      return nil
    end
    return as_text(value)
  end)
  if missing then
    return nil, string.format("${%s} is not defined by the tool's env()", missing)
  end
  return out
end

--- The argv of a command step, `${var}` substituted; nil and a message when it cannot be built.
local function argv_of(step, env)
  local cmd = step
  if type(step) == "table" and step.cmd ~= nil then
    cmd = step.cmd
  end
  if type(cmd) == "string" then
    local text, err = substitute(cmd, env)
    if not text then
      return nil, err
    end
    return { vim.o.shell, vim.o.shellcmdflag, text }
  end
  if type(cmd) ~= "table" or #cmd == 0 then
    return nil, "a command must be a non-empty list of arguments or a string"
  end
  local argv = {}
  for i, arg in ipairs(cmd) do
    local text, err = substitute(as_text(arg), env)
    if not text then
      return nil, err
    end
    argv[i] = text
  end
  return argv
end

--- How a command is shown in messages: its argv joined by spaces.
local function show_cmd(step)
  local cmd = type(step) == "table" and step.cmd ~= nil and step.cmd or step
  if type(cmd) == "table" then
    return table.concat(vim.tbl_map(as_text, cmd), " ")
  end
  return as_text(cmd)
end

--- Call a user function, logging (and returning nil for) an error.
local function try(label, fn, ...)
  if type(fn) ~= "function" then
    return nil
  end
  local ok, value = pcall(fn, ...)
  if not ok then
    log.write("warn", string.format("%s failed: %s", label, tostring(value)))
    return nil, tostring(value)
  end
  return value
end

--- Run the tool for one call: `callback(result)` once; returns a cancel function.
---@param tool table the CodeCompanion table
---@param name string
---@param args table the call's arguments
---@param ctx table Flemma's ExecutionContext
---@param callback fun(result: table)
function M.run(tool, name, args, ctx, callback)
  local self = instance(tool, name, args, ctx)
  local handlers = type(tool.handlers) == "table" and tool.handlers or {}
  local output = type(tool.output) == "table" and tool.output or {}
  local opts = type(tool.opts) == "table" and tool.opts or {}
  local state = { finished = false, cancelled = false, process = nil }
  local stdout, stderr = {}, {}
  local reported -- the last string output.success returned
  local shown = {} -- the default result, built as the steps run

  local function finish(result)
    if state.finished then
      return
    end
    state.finished = true
    try(name .. ": handlers.on_exit", handlers.on_exit, self)
    callback(result)
  end

  local function fail(step, index, text)
    stderr[#stderr + 1] = text
    local meta = { index = index, cmd = step }
    local custom = try(name .. ": output.error", output.error, self, step, stderr, stdout, meta)
    finish({ success = false, error = type(custom) == "string" and custom or text })
  end

  local _, setup_err = try(name .. ": handlers.setup", handlers.setup, self)
  if setup_err then
    finish({ success = false, error = "handlers.setup failed: " .. setup_err })
    return function() end
  end
  local cmds = type(self.cmds) == "table" and self.cmds or {}
  if #cmds == 0 then
    finish({ success = false, error = string.format("Tool %s has no cmds to run", name) })
    return function() end
  end
  local env = {}
  if type(tool.env) == "function" then
    local value, env_err = try(name .. ": env", tool.env, args, self)
    if env_err then
      finish({ success = false, error = "env() failed: " .. env_err })
      return function() end
    end
    env = type(value) == "table" and value or {}
  end

  local step_next
  local previous -- the output the next function receives as `input`

  local function succeed(step, index, data)
    if state.finished or state.cancelled then
      return
    end
    stdout[#stdout + 1] = data
    if type(step) == "function" then
      shown = { as_text(data) }
    elseif as_text(data) ~= "" then
      shown[#shown + 1] = as_text(data)
    end
    previous = data
    local meta = { index = index, cmd = step }
    local custom = try(name .. ": output.success", output.success, self, step, stdout, meta)
    if type(custom) == "string" then
      reported = custom
    end
    step_next(index + 1)
  end

  local function run_function(step, index)
    local answered = false
    local function handle(result)
      if answered or state.finished or state.cancelled then
        return
      end
      answered = true
      if type(result) ~= "table" then
        fail(step, index, "the function returned no { status, data } result")
      elseif result.status == "error" then
        fail(step, index, as_text(result.data))
      else
        succeed(step, index, result.data)
      end
    end
    local output_handler = vim.schedule_wrap(handle)
    local ok, ret = pcall(step, self, args, previous, output_handler)
    if not ok then
      handle({ status = "error", data = tostring(ret) })
    elseif ret ~= nil then
      handle(ret)
    end
  end

  local function run_command(step, index)
    local argv, err = argv_of(step, env)
    if not argv then
      fail(step, index, string.format("cmds[%d]: %s", index, err))
      return
    end
    local wrapped, wrap_err = ctx.sandbox.wrap_command(argv)
    if not wrapped then
      fail(step, index, "sandbox: " .. tostring(wrap_err))
      return
    end
    local timeout = tonumber(opts.timeout)
    local command = show_cmd(step)
    local ok, process = pcall(
      vim.system,
      wrapped,
      { cwd = ctx.cwd, text = true, timeout = timeout },
      vim.schedule_wrap(function(res)
        state.process = nil
        if state.finished or state.cancelled then
          return
        end
        if timeout and res.code == 124 then
          fail(step, index, string.format("Command timed out after %dms and was terminated", timeout))
        elseif res.code ~= 0 or (res.signal and res.signal ~= 0) then
          local text = string.format("Command `%s` failed with exit code %d", command, res.code)
          local err_text = chomp(res.stderr)
          if err_text ~= "" then
            text = text .. ":\n" .. err_text
          end
          fail(step, index, text)
        else
          succeed(step, index, chomp(res.stdout))
        end
      end)
    )
    if not ok then
      fail(step, index, string.format("Command `%s` could not start: %s", command, tostring(process)))
      return
    end
    state.process = process
  end

  step_next = function(index)
    if state.finished or state.cancelled then
      return
    end
    local step = cmds[index]
    if step == nil then
      local text = reported
      if text == nil then
        text = table.concat(shown, "\n")
      end
      finish({ success = true, output = text })
    elseif type(step) == "function" then
      run_function(step, index)
    else
      run_command(step, index)
    end
  end

  step_next(1)
  return function()
    state.cancelled = true
    if state.process then
      pcall(state.process.kill, state.process, 15)
    end
    if not state.finished then
      state.finished = true
      try(name .. ": handlers.on_exit", handlers.on_exit, self)
    end
  end
end

--- The text of `system_prompt` (a string, or a function of the schema); nil when there is none.
local function system_prompt(tool, name)
  local value = tool.system_prompt
  if type(value) == "function" then
    local text = try(name .. ": system_prompt", value, tool.schema)
    value = text
  end
  if type(value) == "string" and vim.trim(value) ~= "" then
    return value
  end
  return nil
end

--- The Flemma definition for a CodeCompanion tool table.
---@param name string|nil the name it is registered under (else the schema's)
---@param tool table
---@return string name, table definition
function M.adapt(name, tool)
  local schema = type(tool.schema) == "table" and tool.schema or {}
  local fn = type(schema["function"]) == "table" and schema["function"] or {}
  name = name or tool.name or fn.name
  local parameters = fn.parameters
  if type(parameters) ~= "table" then
    parameters = { type = "object", properties = vim.empty_dict() }
  end
  local approval = approval_option(tool)
  local def = {
    name = name,
    description = fn.description or tool.description or ("The " .. tostring(name) .. " tool"),
    input_schema = parameters,
    strict = fn.strict,
    async = true,
    label = tool.label,
    enabled = tool.enabled,
    codecompanion = tool,
    system_prompt = system_prompt(tool, tostring(name)),
    execute = function(input, ctx, callback)
      return M.run(tool, name, input, ctx, callback)
    end,
    format_preview = function(input)
      return M.prompt(tool, name, input)
    end,
  }
  if type(approval) == "boolean" or type(approval) == "function" then
    def.require_approval = approval
  end
  def.format_rejected = function(reason, input)
    return M.rejected(tool, name, input, reason)
  end
  -- Session approvals (docs/approval.md): "always" per command, YOLO opt-out, cancel text.
  local opts = type(tool.opts) == "table" and tool.opts or {}
  local output = type(tool.output) == "table" and tool.output or {}
  def.require_cmd_approval = opts.require_cmd_approval == true or nil
  def.never_auto_approve = opts.allowed_in_yolo_mode == false or nil
  if type(output.cmd_string) == "function" then
    def.cmd_string = function(input)
      return try(name .. ": output.cmd_string", output.cmd_string, instance(tool, name, input, nil), input)
    end
  end
  def.format_cancelled = function(input)
    return M.cancelled(tool, name, input)
  end
  return name, def
end

--- The approval message (`output.prompt(self, args)`), or `Run the "<name>" tool?`.
function M.prompt(tool, name, input)
  local output = type(tool.output) == "table" and tool.output or {}
  if type(output.prompt) == "function" then
    local text = try(name .. ": output.prompt", output.prompt, instance(tool, name, input, nil), input)
    if type(text) == "string" and text ~= "" then
      return text
    end
  end
  return string.format('Run the "%s" tool?', name)
end

--- The text the model gets when the user cancels a call (`output.cancelled(self)`).
function M.cancelled(tool, name, input)
  local output = type(tool.output) == "table" and tool.output or {}
  if type(output.cancelled) == "function" then
    local text = try(name .. ": output.cancelled", output.cancelled, instance(tool, name, input, nil), input)
    if type(text) == "string" and text ~= "" then
      return text
    end
  end
  return string.format("The user cancelled the execution of the %s tool", name)
end

--- The text the model gets when the user rejects a call (`output.rejected(self, reason)`).
function M.rejected(tool, name, input, reason)
  local output = type(tool.output) == "table" and tool.output or {}
  if type(output.rejected) == "function" then
    local text = try(name .. ": output.rejected", output.rejected, instance(tool, name, input, nil), reason)
    if type(text) == "string" and text ~= "" then
      return text
    end
  end
  if reason ~= nil and vim.trim(reason) ~= "" then
    return string.format('The user rejected the execution of the %s tool: "%s"', name, vim.trim(reason))
  end
  return string.format("The user rejected the execution of the %s tool", name)
end

return M
