--- flemma.switch: `:Flemma switch` — change the provider, the model and parameters of the current
--- chat, or with `:Flemma switch!` / `:Flemma switch global` of every chat, directly or through a
--- named preset (`presets = { ["$fast"] = … }`).
---
--- `switch <provider> [model] [key=value …]` and `switch $preset [model] [key=value …]`. General
--- parameters (`max_tokens`, `temperature`, `thinking`, …) go to `parameters.<key>`, others to
--- `parameters.<provider>.<key>`; `key=` clears one. A preset's `auto_approve` replaces
--- `tools.auto_approve`. A chat's switch is its own layer over the global values, under its
--- frontmatter (flemma.config `apply_chat`); a global one is a run-time layer over `setup()`.
--- `:Flemma status` shows either; cached credentials are forgotten, and `config:updated` fires.
local lazy = require("flemma.util.lazy")
local config = lazy.require("flemma.config")
local schema = lazy.require("flemma.config.schema")
local host = lazy.require("flemma.host")
local notify = lazy.require("flemma.notify")
local secrets = lazy.require("flemma.secrets")
local suggest = lazy.require("flemma.util.suggest")
local M = {}

local H = {}

local SOURCE = ":Flemma switch"

function H.schema()
  return schema.options
end

--- Parameter nodes: the general ones, and each provider's (a provider is an object with base_url).
function H.parameter_nodes()
  local fields = H.schema().fields.parameters.fields
  local general, providers = {}, {}
  for key, node in pairs(fields) do
    if node.kind == "object" and node.fields and node.fields.base_url then
      providers[key] = node.fields
    else
      general[key] = node
    end
  end
  return general, providers
end

--- The providers the host knows, sorted.
function M.providers()
  local _, providers = H.parameter_nodes()
  local names = vim.tbl_keys(providers)
  table.sort(names)
  return names
end

--- Known model ids of a provider, from the pricing data the host uses (newest first where the
--- file lists them so); empty when the file cannot be read.
function M.models(provider)
  local data = H.pricing()
  local entry = data and (data.providers or data)[provider]
  if type(entry) ~= "table" or type(entry.models) ~= "table" then
    return {}
  end
  local names = vim.tbl_keys(entry.models)
  table.sort(names)
  return names
end

function H.pricing()
  if H.pricing_cache ~= nil then
    return H.pricing_cache or nil
  end
  local source = debug.getinfo(1, "S").source:sub(2)
  local root = vim.fn.fnamemodify(source, ":p:h:h:h:h")
  local ok, data = pcall(function()
    return vim.json.decode(table.concat(vim.fn.readfile(root .. "/src/core/usage/pricing.json"), "\n"))
  end)
  H.pricing_cache = ok and type(data) == "table" and data or false
  return H.pricing_cache or nil
end

--- `"0.3"` → 0.3, `"true"`/`"false"` → booleans, `""`/`"nil"` → clear (vim.NIL), else the string.
function H.value(text)
  if text == "" or text == "nil" then
    return vim.NIL
  end
  if text == "true" then
    return true
  elseif text == "false" then
    return false
  end
  local number = tonumber(text)
  if number ~= nil and text:match("^%-?[%d.]+$") then
    return number
  end
  return text
end

--- Split `args` into positionals and `key=value` pairs (in order).
function H.split(args)
  local positional, pairs_ = {}, {}
  for _, arg in ipairs(args) do
    local key, value = arg:match("^([%w_%.]+)=(.*)$")
    if key then
      pairs_[#pairs_ + 1] = { key = key, value = H.value(value) }
    else
      positional[#positional + 1] = arg
    end
  end
  return positional, pairs_
end

--- What a preset stands for: `{provider?, model?, parameters = {k = v}, auto_approve?}`.
function H.preset(name)
  local presets = config.get().presets or {}
  local preset = presets[name]
  if preset == nil then
    local names = vim.tbl_keys(presets)
    table.sort(names)
    local hint = #names > 0 and (" (presets: " .. table.concat(names, ", ") .. ")")
      or ' (none is configured: presets = { ["$name"] = … })'
    return nil, string.format("unknown preset '%s'%s", name, hint)
  end
  if type(preset) == "string" then
    local positional, params = H.split(vim.split(vim.trim(preset), "%s+"))
    local out = { provider = positional[1], model = positional[2], parameters = {} }
    for _, pair in ipairs(params) do
      out.parameters[pair.key] = pair.value
    end
    if out.provider == nil or out.model == nil then
      return nil, string.format("preset '%s' must read '<provider> <model> [key=value …]'", name)
    end
    return out
  end
  local out = { provider = preset.provider, model = preset.model, parameters = {}, auto_approve = preset.auto_approve }
  for key, value in pairs(preset) do
    if key == "parameters" and type(value) == "table" then
      for k, v in pairs(value) do
        out.parameters[k] = v
      end
    elseif key ~= "provider" and key ~= "model" and key ~= "auto_approve" then
      out.parameters[key] = value
    end
  end
  if out.auto_approve ~= nil and type(out.auto_approve) ~= "table" then
    return nil, string.format("preset '%s': auto_approve must be a list of tool names", name)
  end
  return out
end

--- The operations a switch makes: `{ path = {…}, value = v|vim.NIL }`, or nil and an error.
--- `bufnr`: the chat switched (its own switch names the provider parameters are checked for).
function M.plan(args, bufnr)
  local positional, params = H.split(args or {})
  local target = { parameters = {} }
  local first = positional[1]
  local rest = 2
  if first ~= nil and first:sub(1, 1) == "$" then
    local preset, err = H.preset(first)
    if not preset then
      return nil, err
    end
    target = preset
    -- `switch $preset <model>` overrides the preset's model.
    if positional[2] ~= nil then
      target.model = positional[2]
      rest = 3
    end
  elseif first ~= nil then
    target.provider = first
    target.model = positional[2]
    rest = 3
    if target.model == nil then
      target.model = vim.NIL
    end
  end
  if positional[rest] ~= nil then
    return nil, string.format("unexpected '%s' (use key=value for parameters)", positional[rest])
  end
  for _, pair in ipairs(params) do
    target.parameters[pair.key] = pair.value
  end
  local general, providers = H.parameter_nodes()
  local provider = target.provider or config.get(bufnr).provider
  if providers[provider] == nil then
    local suggestion = suggest.closest(provider, M.providers())
    return nil,
      string.format(
        "unknown provider '%s'%s (available: %s)",
        tostring(provider),
        suggestion and (", did you mean '" .. suggestion .. "'?") or "",
        table.concat(M.providers(), ", ")
      )
  end
  local ops = {}
  if target.provider ~= nil then
    ops[#ops + 1] = { path = { "provider" }, value = target.provider }
  end
  if target.model ~= nil then
    ops[#ops + 1] = { path = { "model" }, value = target.model }
  end
  local keys = vim.tbl_keys(target.parameters)
  table.sort(keys)
  for _, key in ipairs(keys) do
    local value = target.parameters[key]
    local node, path
    if general[key] then
      node, path = general[key], { "parameters", key }
    elseif providers[provider][key] then
      node, path = providers[provider][key], { "parameters", provider, key }
    else
      local known = vim.list_extend(vim.tbl_keys(general), vim.tbl_keys(providers[provider]))
      table.sort(known)
      local suggestion = suggest.closest(key, known)
      return nil,
        string.format(
          "unknown parameter '%s' for %s%s",
          key,
          provider,
          suggestion and (" (did you mean '" .. suggestion .. "'?)") or ""
        )
    end
    if value ~= vim.NIL then
      local err = node:check(value, table.concat(path, "."))
      if err then
        return nil, err
      end
    end
    ops[#ops + 1] = { path = path, value = value }
  end
  if target.auto_approve ~= nil then
    ops[#ops + 1] = { path = { "tools", "auto_approve" }, value = vim.deepcopy(target.auto_approve) }
  end
  return ops
end

--- Which chats a switch is for: `bufnr` (the current chat), or nil for every chat (`switch!`,
--- `switch global …`, or no chat in the current window); and the arguments after `global`.
function H.scope(args, ctx)
  local global = (ctx and ctx.bang) == true
  if args[1] == "global" then
    global = true
    args = { unpack(args, 2) }
  end
  local bufnr = vim.api.nvim_get_current_buf()
  if global or vim.bo[bufnr].filetype ~= "chat" then
    return nil, args
  end
  return bufnr, args
end

--- Apply a planned switch and say what it did, and for which chats.
function M.run(args, ctx)
  local bufnr
  bufnr, args = H.scope(args or {}, ctx)
  if #args == 0 then
    M.pick(bufnr)
    return
  end
  local ops, err = M.plan(args, bufnr)
  if not ops then
    notify.error("switch: " .. err)
    return
  end
  local source = SOURCE .. (bufnr == nil and "! " or " ") .. table.concat(args, " ")
  if bufnr == nil then
    config.apply_runtime(ops, source)
  else
    config.apply_chat(bufnr, ops, source)
  end
  -- Another provider (or key) may need another credential: resolve afresh.
  secrets.invalidate_all()
  local values = config.get(bufnr)
  local parts = {}
  for _, op in ipairs(ops) do
    local path = table.concat(op.path, ".")
    if path ~= "provider" and path ~= "model" then
      parts[#parts + 1] = path:gsub("^parameters%.", "")
        .. "="
        .. (op.value == vim.NIL and "(default)" or vim.inspect(op.value))
    end
  end
  local message = string.format(
    "switched %s to %s %s%s",
    bufnr == nil and "every chat" or "this chat",
    values.provider,
    values.model or "(its default model)",
    #parts > 0 and (" · " .. table.concat(parts, ", ")) or ""
  )
  H.tell(message, ops, bufnr or H.current_chat())
  H.warn_price(values.provider, values.model)
end

--- The current buffer when it is a chat.
function H.current_chat()
  local bufnr = vim.api.nvim_get_current_buf()
  return vim.bo[bufnr].filetype == "chat" and bufnr or nil
end

--- What the switch set that chat `bufnr`'s frontmatter sets otherwise (the frontmatter wins):
--- `this buffer uses '<value>' (frontmatter line N)` for each, from the host's `used`.
function H.overridden(ops, used)
  local notes = {}
  for _, op in ipairs(ops) do
    local key = #op.path == 1 and op.path[1] or nil
    local setting = key and used[key]
    if type(setting) == "table" and tostring(setting.layer):match("^frontmatter") and setting.value ~= op.value then
      notes[#notes + 1] = string.format("this buffer uses '%s' (%s)", tostring(setting.value), setting.layer)
    end
  end
  return notes
end

--- Say what the switch did; where chat `bufnr`'s frontmatter overrides it, say that instead of
--- staying silent (the host knows what the frontmatter applies; it is asked only while running).
function H.tell(message, ops, bufnr)
  if bufnr == nil or not host.channel() then
    notify.info(message)
    return
  end
  host.call("chat:status", { bufnr = bufnr }, function(err, answer)
    local notes = (not err and type(answer) == "table" and type(answer.used) == "table")
        and H.overridden(ops, answer.used)
      or {}
    if #notes == 0 then
      notify.info(message)
    else
      notify.warn(message .. "; " .. table.concat(notes, ", "))
    end
  end)
end

--- Warn when the model's input + output price (per million tokens) is above the threshold.
function H.warn_price(provider, model)
  local ui = config.get().ui or {}
  local pricing = ui.pricing or {}
  if pricing.enabled == false or model == nil then
    return
  end
  local data = H.pricing()
  local entry = data and (data.providers or data)[provider]
  local price = entry and entry.models and entry.models[model]
  if type(price) ~= "table" or type(price.input) ~= "number" or type(price.output) ~= "number" then
    return
  end
  local threshold = pricing.high_cost_threshold or 30
  if price.input + price.output > threshold then
    notify.warn(
      string.format(
        "%s is expensive: $%.2f input + $%.2f output per million tokens\n(above ui.pricing.high_cost_threshold = %s)",
        model,
        price.input,
        price.output,
        tostring(threshold)
      )
    )
  end
end

--- No arguments: pick a provider, then a model, for chat `bufnr` (nil: every chat).
function M.pick(bufnr)
  local function run(args)
    if bufnr == nil then
      table.insert(args, 1, "global")
    end
    M.run(args)
  end
  vim.ui.select(M.providers(), { prompt = "Provider" }, function(provider)
    if not provider then
      return
    end
    local models = M.models(provider)
    if #models == 0 then
      run({ provider })
      return
    end
    vim.ui.select(models, { prompt = "Model (" .. provider .. ")" }, function(model)
      if model then
        run({ provider, model })
      end
    end)
  end)
end

--- Completion: providers and presets, then models, then `key=` for the provider's parameters.
function M.complete(arglead, args)
  -- `args` are the finished arguments; `arglead` is the one being typed.
  local first = args[1] == nil
  local bufnr = vim.api.nvim_get_current_buf()
  if args[1] == "global" then
    args = { unpack(args, 2) }
    bufnr = nil
  end
  local position = #args + 1
  local candidates = {}
  if arglead:find("=") == nil and position <= 1 then
    candidates = M.providers()
    -- Sorted: a table's order is not the same from one Neovim to the next.
    local presets = vim.tbl_keys(config.get().presets or {})
    table.sort(presets)
    vim.list_extend(candidates, presets)
    if first then
      candidates[#candidates + 1] = "global"
    end
  elseif position == 2 and args[1] and args[1]:sub(1, 1) ~= "$" then
    candidates = M.models(args[1])
  end
  if position >= 2 then
    local general, providers = H.parameter_nodes()
    local provider = args[1]
    if provider and provider:sub(1, 1) == "$" then
      local preset = H.preset(provider)
      provider = preset and preset.provider
    end
    provider = provider or config.get(bufnr).provider
    -- Once each: a provider has its own `max_tokens`, `temperature`, `thinking`, … as well.
    local set = vim.tbl_extend("force", {}, general, providers[provider] or {})
    local keys = vim.tbl_keys(set)
    table.sort(keys)
    for _, key in ipairs(keys) do
      candidates[#candidates + 1] = key .. "="
    end
  end
  return vim.tbl_filter(function(item)
    return vim.startswith(item, arglead)
  end, candidates)
end

return M
