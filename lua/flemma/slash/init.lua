--- flemma.slash: slash commands in `@You:` messages (docs/slash-commands.md): the registry of the
--- built-in commands (`flemma:thinking`, …) and the user's (`require("flemma.slash").register`),
--- the lookup of a name (full, or short when one command has it), what the host asks before a
--- send (`slash.resolve`: each command's rewrite, options or action), completion, and the
--- diagnostics of unknown names. The grammar of a command line is read by flemma.ui.scan; the
--- host's parser reads the same (src/core/chat/slash.ts). Options are checked against the schema
--- as a frontmatter's are (flemma.frontmatter), and judged by trust on the host.
local scan = require("flemma.ui.scan")
local suggest = require("flemma.util.suggest")
local lazy = require("flemma.util.lazy")
local config = lazy.require("flemma.config")
local schema = lazy.require("flemma.config.schema")
local frontmatter = lazy.require("flemma.frontmatter")
local log = lazy.require("flemma.host.log")
local notify = lazy.require("flemma.notify")
local switch = lazy.require("flemma.commands.switch")

local M = {}

---@class flemma.slash.Spec
---@field description string|nil
---@field complete (string[]|fun(ctx: table): string[])|nil  the arguments offered after the name
---@field rewrite (string|fun(ctx: table): string|nil)|nil  the text the line stands for ($ARGUMENTS: the arguments)
---@field options (table|fun(ctx: table): table)|nil  options for this request, as a frontmatter sets them
---@field action (string|fun(ctx: table))|nil  a `:Flemma` command (or a function) run instead of the send

local H = {
  user = {}, ---@type table<string, flemma.slash.Spec>
  ns = vim.api.nvim_create_namespace("flemma.slash"),
  diagnosed = {}, ---@type table<integer, true>  buffers whose slash diagnostics are not empty
}

--- The thinking levels `/thinking` takes: `off`, then the schema's levels.
local function thinking_levels()
  local node = schema.options.fields.parameters.fields.thinking
  for _, member in ipairs(node.members or {}) do
    if member.kind == "enum" then
      return vim.list_extend({ "off" }, member.values)
    end
  end
  return { "off" }
end

--- `/thinking off` is `false`; a number is a budget; a level is itself.
local function thinking_value(args)
  if args == "off" or args == "false" or args == "none" then
    return false
  end
  return tonumber(args) or args
end

--- The one provider (other than the chat's) whose known models hold `model`, if any.
local function provider_of(model, current)
  local found
  for _, provider in ipairs(switch.providers()) do
    if provider ~= current and vim.tbl_contains(switch.models(provider), model) then
      if found then
        return nil
      end
      found = provider
    end
  end
  return found
end

--- `/model name` or `/model provider/name` (a provider the schema knows). A name the chat's
--- provider does not know but exactly one other provider does (`/model gpt-5.5` in a chat with
--- Anthropic) goes to that provider.
local function model_options(ctx)
  local provider, model = ctx.args:match("^([%w_%-]+)/(.+)$")
  if provider and vim.tbl_contains(switch.providers(), provider) then
    return { provider = provider, model = model }
  end
  if ctx.args == "" then
    error("/model needs a model name", 0)
  end
  local ok, values = pcall(config.get, ctx.bufnr)
  local current = ok and values.provider or nil
  if current and not vim.tbl_contains(switch.models(current), ctx.args) then
    local other = provider_of(ctx.args, current)
    if other then
      return { provider = other, model = ctx.args }
    end
  end
  return { model = ctx.args }
end

--- `/tools -bash +read`: each word removes (`-`) or adds (`+`, or no sign) a tool, in order.
local function tools_options(ctx)
  local list = {}
  for word in ctx.args:gmatch("%S+") do
    local sign, name = word:match("^([+-]?)(.+)$")
    list[#list + 1] = { tools = { [sign == "-" and "$remove" or "$append"] = name } }
  end
  if #list == 0 then
    error("/tools needs tool names, each with - (remove) or + (add)", 0)
  end
  return list
end

--- The tools a buffer has (for completion): its configured list.
local function tool_names(ctx)
  local names = {}
  local ok, values = pcall(config.get, ctx.bufnr)
  for _, name in ipairs(ok and type(values.tools) == "table" and values.tools or {}) do
    if type(name) == "string" then
      names[#names + 1] = "-" .. name
      names[#names + 1] = "+" .. name
    end
  end
  return names
end

local function model_names(ctx)
  local ok, values = pcall(config.get, ctx.bufnr)
  local current = ok and values.provider or nil
  local names = current and vim.deepcopy(switch.models(current)) or {}
  for _, provider in ipairs(switch.providers()) do
    if provider ~= current then
      for _, model in ipairs(switch.models(provider)) do
        names[#names + 1] = provider .. "/" .. model
      end
    end
  end
  return names
end

--- The built-in commands, by their short name (their full name is `flemma:<name>`).
local BUILTIN = {
  thinking = {
    description = "thinking for this request: off, a level or a token budget",
    complete = thinking_levels,
    options = function(ctx)
      if ctx.args == "" then
        error("/thinking needs a level: " .. table.concat(thinking_levels(), ", "), 0)
      end
      return { thinking = thinking_value(ctx.args) }
    end,
  },
  model = {
    description = "the model (or provider/model) of this request",
    complete = model_names,
    options = model_options,
  },
  tools = {
    description = "tools offered in this request: -name removes, +name adds",
    complete = tool_names,
    options = tools_options,
  },
  compact = { description = "start a new chat from a summary (:Flemma compact)", action = "compact" },
  fork = { description = "fork the chat (:Flemma fork)", action = "fork" },
  retry = { description = "send the last request again (:Flemma retry)", action = "retry" },
}

--- Add (or replace) a user command. `name` is `word` (it becomes `user:word`) or `space:word`;
--- the `flemma:` namespace is the built-ins'.
---@param name string
---@param spec flemma.slash.Spec
function M.register(name, spec)
  if type(name) ~= "string" then
    error("flemma.slash.register: the name must be a string", 2)
  end
  local full = name:find(":", 1, true) and name or ("user:" .. name)
  -- A name is one that a command line can hold (flemma.ui.scan reads them).
  if scan.slash_command("/" .. full) ~= full or not full:find(":", 1, true) then
    error(string.format("flemma.slash.register: invalid name '%s' (letters, digits, _ and -)", name), 2)
  end
  if vim.startswith(full, "flemma:") then
    error("flemma.slash.register: the flemma: namespace is for the built-in commands", 2)
  end
  if type(spec) ~= "table" then
    error(string.format("flemma.slash.register: '%s' needs a spec table", name), 2)
  end
  local kinds = (spec.rewrite ~= nil and 1 or 0) + (spec.options ~= nil and 1 or 0) + (spec.action ~= nil and 1 or 0)
  if kinds ~= 1 then
    error(string.format("flemma.slash.register: '%s' needs one of rewrite, options or action", name), 2)
  end
  H.user[full] = spec
end

--- Remove a user command; answers whether it existed.
function M.unregister(name)
  local full = name:find(":", 1, true) and name or ("user:" .. name)
  local existed = H.user[full] ~= nil
  H.user[full] = nil
  return existed
end

--- Every command by its full name.
function H.all()
  local all = {}
  for short, spec in pairs(BUILTIN) do
    all["flemma:" .. short] = spec
  end
  for full, spec in pairs(H.user) do
    all[full] = spec
  end
  return all
end

--- Every full name, sorted.
function M.names()
  local names = vim.tbl_keys(H.all())
  table.sort(names)
  return names
end

--- The command a name means: its full name and spec, or nil and what is wrong (unknown, with a
--- "did you mean"; or ambiguous, with the choices).
---@param name string
function M.lookup(name)
  local all = H.all()
  if name:find(":", 1, true) then
    if all[name] then
      return name, all[name]
    end
  else
    local found = {}
    for _, full in ipairs(M.names()) do
      if full:match(":(.*)$") == name then
        found[#found + 1] = full
      end
    end
    if #found == 1 then
      return found[1], all[found[1]]
    elseif #found > 1 then
      return nil, nil, string.format("/%s is ambiguous: /%s", name, table.concat(found, ", /"))
    end
  end
  local shorts = {}
  for _, full in ipairs(M.names()) do
    shorts[#shorts + 1] = full
    shorts[#shorts + 1] = full:match(":(.*)$")
  end
  local guess = suggest.closest(name, shorts)
  return nil,
    nil,
    string.format("unknown slash command /%s%s", name, guess and string.format(" (did you mean /%s?)", guess) or "")
end

--- The context a command's functions get.
local function context_of(bufnr, command, full)
  return { bufnr = bufnr, name = full, args = command.args or "", line = command.line }
end

--- One command's options as checked operations, or an error.
local function options_of(spec, ctx)
  local value = spec.options
  if type(value) == "function" then
    value = value(ctx)
  end
  if type(value) ~= "table" then
    error("options must be a table of options", 0)
  end
  local list = vim.islist(value) and value or { value }
  local ops = {}
  for _, options in ipairs(list) do
    local checked = frontmatter.options_ops(options, ctx.line)
    if checked.error then
      error(checked.error, 0)
    end
    vim.list_extend(ops, checked.ops)
  end
  return ops
end

--- What one command is for this send.
local function resolve_one(bufnr, command)
  local full, spec, problem = M.lookup(command.name)
  if not full then
    return { kind = "error", message = problem }
  end
  local ctx = context_of(bufnr, command, full)
  local ok, result = pcall(function()
    if spec.action ~= nil then
      return { kind = "action", command = type(spec.action) == "string" and spec.action or full }
    elseif spec.rewrite ~= nil then
      local text = spec.rewrite
      if type(text) == "function" then
        text = text(ctx)
      else
        text = text:gsub("%$ARGUMENTS", function()
          return ctx.args
        end)
      end
      return { kind = "rewrite", text = type(text) == "string" and text or "" }
    end
    -- Options count only in the message being sent: an earlier one's were for its own request.
    return { kind = "options", ops = command.last and options_of(spec, ctx) or {} }
  end)
  if not ok then
    log.write("warn", string.format("slash command /%s failed: %s", full, tostring(result)))
    return { kind = "error", message = string.format("/%s: %s", command.name, tostring(result)) }
  end
  return result
end

--- Host → Lua (`slash.resolve`): each command of a chat, in order.
---@param params { bufnr: integer, commands: { name: string, args: string, line: integer, last: boolean }[] }
function M.resolve(params)
  local results = {}
  for index, command in ipairs(params.commands or {}) do
    results[index] = resolve_one(params.bufnr, command)
  end
  return { results = results }
end

--- The slash command blocks of a structure (flemma.ui.scan), each with its message.
local function commands_of(structure)
  local list = {}
  for _, block in ipairs(structure.blocks) do
    if block.kind == "slash" then
      list[#list + 1] = block
    end
  end
  return list
end

--- The diagnostics of a chat's slash commands: an unknown or ambiguous name is an error on its
--- line (nothing is sent while it is there).
---@param bufnr integer
---@param structure table flemma.ui.scan's structure of the buffer
function M.diagnose(bufnr, structure)
  local items = {}
  for _, block in ipairs(commands_of(structure)) do
    local full, _, problem = M.lookup(block.name)
    if not full then
      items[#items + 1] = {
        lnum = block.row,
        col = 0,
        end_col = block.name_end,
        severity = vim.diagnostic.severity.ERROR,
        message = problem,
        source = "flemma",
        code = "slash-command",
      }
    end
  end
  if #items > 0 or H.diagnosed[bufnr] then
    vim.diagnostic.set(H.ns, bufnr, items)
    H.diagnosed[bufnr] = #items > 0 or nil
  end
end

--- The `:Flemma` command an action names exists (the registry lists it as `:Flemma`'s own
--- completion does: flemma.commands requires the chat module, which requires this one).
local function flemma_command_exists(name)
  return vim.tbl_contains(vim.fn.getcompletion("Flemma " .. name, "cmdline"), name)
end

--- Run the action of the command on `block` of `bufnr` (the message being sent): its line
--- leaves the buffer (one undo step), then the action runs for that buffer. A `:Flemma` command
--- that does not exist is an error, and the line stays.
local function run_action(bufnr, block, full, spec)
  local ctx = context_of(bufnr, { args = block.args, line = block.row + 1 }, full)
  if type(spec.action) == "string" and not flemma_command_exists(spec.action) then
    notify.error(string.format("/%s: :Flemma %s does not exist here; nothing sent", block.name, spec.action))
    return
  end
  local ok, err = pcall(vim.api.nvim_buf_set_lines, bufnr, block.row, block.row + 1, false, {})
  if not ok then
    notify.error(string.format("/%s: the line could not be removed (%s); nothing sent", block.name, tostring(err)))
    return
  end
  vim.api.nvim_buf_call(bufnr, function()
    if type(spec.action) == "string" then
      vim.cmd({ cmd = "Flemma", args = { spec.action } })
    else
      spec.action(ctx)
    end
  end)
end

--- Before `<C-]>` or `:Flemma send` goes to the host: an unknown command anywhere is refused
--- (with its line), and an action command in the chat's last message (a `@You:` one) runs
--- instead of the send. Answers true when the send must not go.
---@param bufnr integer
---@param structure table flemma.ui.scan's structure of the buffer
function M.before_send(bufnr, structure)
  local last = structure.messages[#structure.messages]
  for _, block in ipairs(commands_of(structure)) do
    local full, spec, problem = M.lookup(block.name)
    if not full then
      notify.error(string.format("Nothing sent: line %d: %s", block.row + 1, problem))
      return true
    end
    if spec.action ~= nil and last and last.role == "You" and block.msg == #structure.messages then
      run_action(bufnr, block, full, spec)
      return true
    end
  end
  return false
end

--- The arguments a command offers, as strings.
local function argument_words(spec, ctx)
  local complete = spec.complete
  if type(complete) == "function" then
    local ok, words = pcall(complete, ctx)
    return ok and type(words) == "table" and words or {}
  end
  return type(complete) == "table" and complete or {}
end

--- Completion of slash commands at the cursor: `ctx` is `{bufnr, line, col}` (`col` the 0-based
--- byte column of the cursor in `line`). Answers Vim complete-items and the 0-based byte column
--- where the completed word starts; no items (and `col`) when the cursor is not in one.
---@param ctx { bufnr: integer, line: string, col: integer }
---@return table[] items
---@return integer start_col
function M.complete(ctx)
  local what, name, rest = scan.slash_typed(ctx.line:sub(1, ctx.col))
  if what == "name" then
    local items, all = {}, H.all()
    for _, full in ipairs(M.names()) do
      local short = full:match(":(.*)$")
      local spec = all[full]
      local kind = spec.action and "action" or spec.rewrite and "rewrite" or "options"
      -- The short form only where it is unambiguous.
      for _, word in ipairs(M.lookup(short) == full and { short, full } or { full }) do
        if vim.startswith(word, name) then
          items[#items + 1] =
            { word = "/" .. word, abbr = "/" .. word, kind = kind, menu = "[slash]", info = spec.description }
        end
      end
    end
    return items, 0
  end
  local full, spec = nil, nil
  if what == "args" then
    full, spec = M.lookup(name)
  end
  if not spec then
    return {}, ctx.col
  end
  local lead = rest:match("(%S*)$")
  local items = {}
  for _, word in ipairs(argument_words(spec, context_of(ctx.bufnr, { args = rest, line = 0 }, full))) do
    if vim.startswith(word, lead) then
      items[#items + 1] = { word = word, kind = "arg", menu = "[/" .. full .. "]" }
    end
  end
  return items, ctx.col - #lead
end

return M
