--- flemma.rpc: the one entry point the host calls in Lua (`dispatch(method, params)`): the table of
--- host → Lua methods. The Lua → host calls waiting for an answer are kept by flemma.host.pending.
local log = require("flemma.host.log")
local pending = require("flemma.host.pending")
local lazy = require("flemma.util.lazy")
local chat = lazy.require("flemma.chat")
local flemma_chat_autopilot = lazy.require("flemma.chat.autopilot")
local buffer = lazy.require("flemma.chat.buffer")
local compact = lazy.require("flemma.chat.compact")
local cutoff = lazy.require("flemma.chat.cutoff")
local editing = lazy.require("flemma.chat.editing")
local files = lazy.require("flemma.chat.files")
local history = lazy.require("flemma.chat.history")
local tasks = lazy.require("flemma.tasks")
local editor_state = lazy.require("flemma.host.editor_state")
local flemma_chat_sink = lazy.require("flemma.chat.sink")
local config = lazy.require("flemma.config")
local flemma_config_trust = lazy.require("flemma.config.trust")
local frontmatter = lazy.require("flemma.frontmatter")
local hooks = lazy.require("flemma.hooks")
local redact = lazy.require("flemma.host.redact")
local notify = lazy.require("flemma.notify")
local sandbox = lazy.require("flemma.sandbox")
local slash = lazy.require("flemma.slash")
local secrets = lazy.require("flemma.secrets")
local templating = lazy.require("flemma.templating")
local tools = lazy.require("flemma.tools")
local approval = lazy.require("flemma.tools.approval")
local mcp = lazy.require("flemma.tools.mcp")
local tools_output = lazy.require("flemma.tools.output")
local tools_ui = lazy.require("flemma.tools.ui")
local attention = lazy.require("flemma.ui.attention")
local progress = lazy.require("flemma.ui.progress")
local usage = lazy.require("flemma.usage")
local acp = lazy.require("flemma.acp")
local acp_fs = lazy.require("flemma.acp_fs")

local M = {}

--- The configuration as plain data: a function becomes `{__function = true}`, and a table that
--- is both a list and a map (`tools`) keeps its list part under `__list` (msgpack has no such
--- value). `:Flemma autopilot:enable|disable` is applied.
local function snapshot()
  local function copy(value)
    if type(value) == "function" then
      return { __function = true }
    elseif type(value) ~= "table" then
      return value
    end
    local count = #value
    local mixed = false
    for k in pairs(value) do
      if type(k) ~= "number" then
        mixed = count > 0
        break
      end
    end
    local out = {}
    for k, v in pairs(value) do
      if not (mixed and type(k) == "number") then
        out[k] = copy(v)
      end
    end
    if mixed then
      local list = {}
      for i = 1, count do
        list[i] = copy(value[i])
      end
      out.__list = list
    end
    return out
  end
  local result = copy(config.get())
  -- `:Flemma autopilot:enable|disable` beats the configuration.
  local override = flemma_chat_autopilot.override()
  if override ~= nil and type(result.tools) == "table" then
    local autopilot = result.tools.autopilot
    if type(autopilot) ~= "table" then
      autopilot = { enabled = autopilot ~= false }
    end
    autopilot.enabled = override
    result.tools.autopilot = autopilot
  end
  return result
end

--- The configuration's generation, with the snapshot when `generation` (the one the host holds)
--- is another.
local function configuration(answer, generation)
  local current = config.generation()
  answer.generation = current
  if generation ~= current then
    answer.config = snapshot()
  end
  return answer
end

--- `editor.context`: the configuration (when the host's generation is not current), the editor's
--- facts about the buffer, the non-blank environment variables among `names`, the buffer's trust
--- decision (for the tree whose digest is `digest`), the chat's own `:Flemma switch` (`switched`)
--- and what the buffer's frontmatter sets (a Lua one runs here if the file is trusted; a JSON
--- one's operations are checked, each with its trust class).
function M.context(params)
  editor_state.asked(params.names)
  local env = editor_state.env()
  local trust = flemma_config_trust.state(params.bufnr, params.digest)
  local answer = configuration({
    facts = editor_state.facts(params),
    env = env,
    trust = trust,
  }, params.generation)
  if params.origins then
    answer.origins = config.origins(params.bufnr)
  end
  -- The chat's own `:Flemma switch`, which the host applies under the frontmatter.
  local switched = config.chat_ops(params.bufnr)
  if #switched > 0 then
    answer.switched = switched
  end
  if type(params.frontmatter) == "table" then
    answer.frontmatter = frontmatter.evaluate(params.bufnr, params.frontmatter, trust)
  else
    frontmatter.clear(params.bufnr)
  end
  return answer
end

--- Host → Lua methods, by name. Each receives the params table and returns a value or nil.
M.methods = {
  ["hooks.emit"] = function(params)
    hooks.emit(params.name, params.data)
  end,
  --- The host's write batch: every buffer's pending edits, then (`{batches, after}` form) the
  --- calls that were waiting for those edits, when no buffer asked to be retried. A notice
  --- (`{method, params, true}`) runs only when every edit was applied; else it is `held`.
  ["buffer.apply_batch"] = function(params)
    if params.batches == nil then
      return buffer.apply_batch(params)
    end
    local results = buffer.apply_batch(params.batches)
    local applied = true
    for _, result in ipairs(results) do
      if result.status == "retry" then
        return { results = results, after = vim.NIL }
      end
      applied = applied and result.status == "ok" and result.conflicts == nil
    end
    local after = {}
    for index, call in ipairs(params.after or {}) do
      if call[3] == true and not applied then
        after[index] = { ok = false, held = true }
      else
        local ok, value = pcall(M.dispatch, call[1], call[2])
        after[index] = ok and { ok = true, value = value == nil and vim.NIL or value }
          or { ok = false, error = tostring(value) }
      end
    end
    return { results = results, after = after }
  end,
  ["buffer.lock"] = function(params)
    return buffer.lock(params.bufnr, params.owner)
  end,
  ["buffer.unlock"] = function(params)
    return buffer.unlock(params.bufnr, params.owner)
  end,
  --- `editing.auto_write`: write the buffer (a reply or a batch of tool results is in it).
  ["buffer.write"] = function(params)
    return editing.write(params)
  end,
  ["sink.create"] = function(params)
    return flemma_chat_sink.create(params)
  end,
  ["sink.destroy"] = function(params)
    return flemma_chat_sink.destroy(params)
  end,
  ["progress.start"] = function(params)
    return progress.start(params)
  end,
  ["progress.update"] = function(params)
    return progress.update(params)
  end,
  ["progress.stop"] = function(params)
    return progress.stop(params)
  end,
  --- `{generation, config?}`: the snapshot only when `params.generation` is not current.
  ["config.snapshot"] = function(params)
    return configuration({}, params and params.generation)
  end,
  --- What the host keeps of a buffer, asked when it holds nothing or the frontmatter changed:
  --- the configuration, the editor's facts about the buffer, the values of the environment
  --- variables named in `names` (users may `:let $X = …`) and what the buffer's Lua frontmatter
  --- sets. Later changes are pushed (`flemma.host.editor_state`).
  ["editor.context"] = function(params)
    return M.context(params)
  end,
  --- The editor side of a send starting, in one round trip: the progress indicator on the
  --- `@Assistant:` row, the sink (`sink:created`), then `request:sending`.
  ["send.begin"] = function(params)
    progress.start({ bufnr = params.bufnr, row = params.row })
    cutoff.begin(params.bufnr, params.row, params.from)
    local sink = flemma_chat_sink.create({ name = params.sink_name })
    hooks.emit("request:sending", { bufnr = params.bufnr })
    return sink
  end,
  --- The editor side of a send ending: progress off, sink destroyed (`sink:destroyed`), buffer
  --- unlocked.
  ["send.finish"] = function(params)
    progress.stop({ bufnr = params.bufnr })
    cutoff.finish(params.bufnr)
    -- Deleting the sink buffer runs every BufDelete/BufWipeout listener: after the answer, which
    -- the host's next step waits for. Scheduled now, it still comes before `request:finished`.
    local sink = params.sink
    vim.schedule(function()
      flemma_chat_sink.destroy({ bufnr = sink })
    end)
    return { unlocked = buffer.unlock(params.bufnr, "request") }
  end,
  --- The first non-empty variable of `names` in Neovim's environment (users may `:let $X = …`).
  ["env.first"] = function(params)
    for _, name in ipairs(params.names or {}) do
      local value = vim.env[name]
      if type(value) == "string" and vim.trim(value) ~= "" then
        return { name = name, value = value }
      end
    end
    return vim.NIL
  end,
  --- The secret values the host knows (resolved credentials): the log redacts them too.
  ["log.secrets"] = function(params)
    redact.set_known(params and params.values)
  end,
  ["slash.resolve"] = function(params)
    return slash.resolve(params)
  end,
  ["frontmatter.diagnostics"] = function(params)
    return frontmatter.show_diagnostics(params)
  end,
  ["trust.confirm"] = function(params)
    return flemma_config_trust.confirm(params)
  end,
  --- The host used its held decision for a tree with a new digest: a trusted buffer records it.
  ["trust.seen"] = function(params)
    flemma_config_trust.state(params.bufnr, params.digest)
  end,
  ["template.render"] = function(params)
    return templating.render(params)
  end,
  ["secrets.resolve"] = function(params)
    return secrets.resolve(params)
  end,
  ["approval.resolve"] = function(params)
    return approval.resolve(params)
  end,
  ["approval.config_decision"] = function(params)
    return approval.config_decision(params)
  end,
  ["autopilot.watch"] = function(params)
    return flemma_chat_autopilot.watch(params)
  end,
  ["autopilot.cancel"] = function(params)
    return flemma_chat_autopilot.cancel(params)
  end,
  ["tools.execute"] = function(params)
    return tools.execute(params)
  end,
  ["tools.cancel"] = function(params)
    return tools.cancel(params)
  end,
  ["tools.require_approval"] = function(params)
    return tools.require_approval(params)
  end,
  ["tools.format_rejected"] = function(params)
    return tools.format_rejected(params)
  end,
  ["tools.cmd_string"] = function(params)
    return tools.cmd_string(params)
  end,
  ["tools.format_cancelled"] = function(params)
    return tools.format_cancelled(params)
  end,
  ["tools.facts"] = function(params)
    return editor_state.facts(params)
  end,
  ["tools.spinner"] = function(params)
    return tools_ui.spinner(params)
  end,
  ["tools.cursor"] = function(params)
    return tools_ui.cursor(params)
  end,
  ["tools.output"] = function(params)
    return tools_output.show(params)
  end,
  ["chat.step_ended"] = function(params)
    return chat.step_ended(params)
  end,
  ["tools.previews"] = function(params)
    return tools_ui.previews(params)
  end,
  ["sandbox.available"] = function(params)
    return sandbox.call_available(params)
  end,
  ["sandbox.wrap"] = function(params)
    return sandbox.call_wrap(params)
  end,
  ["sandbox.load"] = function(params)
    return sandbox.load(params)
  end,
  ["chat.structure"] = function(params)
    return chat.set_structure(params)
  end,
  ["usage.show"] = function(params)
    return usage.show(params)
  end,
  ["acp.permission"] = function(params)
    return acp.permission(params)
  end,
  ["acp.settled"] = function(params)
    return acp.settled(params)
  end,
  --- An agent's file request: the buffer showing the file, if any (flemma.acp_fs).
  ["acp.buffer"] = function(params)
    return acp_fs.buffer(params)
  end,
  ["usage.confirm"] = function(params)
    return usage.confirm(params)
  end,
  ["notify"] = function(params)
    local level = params.level or "info"
    local opts = { key = type(params.key) == "string" and params.key or nil, report = params.report == true }
    (notify[level] or notify.info)(params.message, opts)
  end,
  ["notify.retract"] = function(params)
    if type(params.key) == "string" then
      notify.retract(params.key)
    end
  end,
  ["mcp.catalog"] = function(params)
    mcp.set_catalog(params.servers)
  end,
  --- `:Flemma compact` wrote the new chat: open it (`{opened, bufnr?}`).
  ["compact.open"] = function(params)
    return compact.open(params)
  end,
  --- `:Flemma fork` / `rewind` / `retry`: open the fork, show a refusal's diff, read files again.
  ["history.show"] = function(params)
    return history.show(params)
  end,
  --- A chat held in a file was written by the host: a buffer showing it follows (docs/tasks.md).
  ["files.changed"] = function(params)
    files.changed(params)
  end,
  ["files.status"] = function(params)
    return files.status(params)
  end,
  --- `<M-CR>` on a `task` call whose child waits: the child's waiting call shown (flemma.tasks).
  ["tasks.show"] = function(params)
    tasks.show(params)
  end,
  --- A file chat's frontmatter (its bufnr is the host's own, no buffer's): evaluated as a
  --- buffer's is, with the trust its creator gave it.
  ["frontmatter.evaluate"] = function(params)
    return frontmatter.evaluate(params.bufnr, params.frontmatter, { trusted = params.trusted == true })
  end,
  ["attention.signal"] = function(params)
    attention.signal(params)
  end,
  ["rpc.reply"] = function(params)
    -- Not `ok and result or error`: a `false` result is a result.
    if params.ok then
      pending.settle(params.id, true, params.result)
    else
      pending.settle(params.id, false, params.error)
    end
  end,
}

--- Called by the host through `nvim_exec_lua`. Errors are logged here (a failed notification is
--- otherwise invisible) and raised again so that a waiting host request sees them.
function M.dispatch(method, params)
  local handler = M.methods[method]
  if not handler then
    local message = "unknown Lua method '" .. tostring(method) .. "'"
    log.write("error", message)
    error(message, 0)
  end
  if params == vim.NIL then
    params = nil
  end
  local ok, result = pcall(handler, params)
  if not ok then
    log.write("error", string.format("%s failed: %s", method, tostring(result)))
    error(result, 0)
  end
  return result
end

--- Several notifications from the host, in order (`{{method, params}, …}`); one failing does not
--- stop the others (each failure is logged by `dispatch`).
function M.dispatch_many(list)
  for _, item in ipairs(list) do
    pcall(M.dispatch, item[1], item[2])
  end
end

return M
