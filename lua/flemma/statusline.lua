--- flemma.statusline: a short text about a `chat` buffer for any statusline: the model, the
--- thinking level, the session's requests and cost, how full the context window was at the last
--- request, and whether a request or tools are running.
--- `get()` runs on every redraw, so it answers from a per-buffer cache; the cache is dropped when
--- something it shows changes (lifecycle events, buffer locks, configuration), and the statuslines
--- are redrawn then.
local locks = require("flemma.chat.locks")
local lazy = require("flemma.util.lazy")
local buffer = lazy.require("flemma.chat.buffer")
local flemma_config = lazy.require("flemma.config")
local hooks = lazy.require("flemma.hooks")
local log = lazy.require("flemma.host.log")
local notify = lazy.require("flemma.notify")
local M = {}

local H = {
  cache = {}, ---@type table<integer, { text: string, escaped: string|nil, busy: string|nil, booting: boolean, config: table }>
  booting = false, -- the host started and has not announced `boot:complete` yet
  redraw_pending = false,
  formats = {}, ---@type table<string, { fn: function|nil, err: string|nil }>
  asked = {}, ---@type table<integer, { provider: string, model: string|nil }>  the configuration at the last request's end
  reported = {}, ---@type table<string, true>  format errors already shown
  bootstrapped = false,
}

local BUSY_HL = "FlemmaStatuslineBusy"

-- ---------------------------------------------------------------------------------------------
-- State
-- ---------------------------------------------------------------------------------------------

--- What holds the buffer: "request" while a request runs, "tools" while tools run, else nil.
---@param bufnr integer
---@return "request"|"tools"|nil
function H.busy(bufnr)
  local owners = buffer.lock_owners(bufnr)
  if not owners then
    return nil
  end
  if owners.request then
    return "request"
  elseif owners.tools then
    return "tools"
  end
  return nil
end

local function is_chat(bufnr)
  return vim.api.nvim_buf_is_valid(bufnr) and vim.api.nvim_get_option_value("filetype", { buf = bufnr }) == "chat"
end

local function resolve(bufnr)
  if bufnr == nil or bufnr == 0 then
    return vim.api.nvim_get_current_buf()
  end
  return bufnr
end

--- The thinking level in effect for `provider`: a level name, a token budget, or nil (off).
local function thinking_level(parameters, provider)
  local value = parameters.thinking
  -- The provider's own setting wins, `false` (off) included.
  if type(parameters[provider]) == "table" and parameters[provider].thinking ~= nil then
    value = parameters[provider].thinking
  end
  if type(value) == "table" then
    value = value.level
  end
  if type(value) == "string" or type(value) == "number" then
    return value
  end
  return nil
end

--- The usage module's figures; zeros (and no last request or context) when it is missing or fails.
local function usage_figures(bufnr)
  local session = { requests = 0, cost = 0, input_tokens = 0, output_tokens = 0 }
  local last, context = nil, nil
  local ok, usage = pcall(require, "flemma.usage")
  if not ok or type(usage) ~= "table" then
    return session, last, context
  end
  if type(usage.session) == "function" then
    local got, value = pcall(usage.session)
    if got and type(value) == "table" then
      for key in pairs(session) do
        session[key] = tonumber(value[key]) or 0
      end
    end
  end
  if type(usage.last) == "function" then
    local got, value = pcall(usage.last, bufnr)
    if got and type(value) == "table" then
      last = value
    end
  end
  if type(usage.context) == "function" then
    local got, value = pcall(usage.context, bufnr)
    if got and type(value) == "table" then
      context = value
    end
  end
  return session, last, context
end

--- The variables a format sees (see docs/integrations.md): a fresh table on every call.
---@param bufnr integer|nil  0 or nil: the current buffer
---@return table
function M.variables(bufnr)
  bufnr = resolve(bufnr)
  -- The chat's own `:Flemma switch` included.
  local config = flemma_config.get(bufnr)
  local session, last, context = usage_figures(bufnr)
  local provider = config.provider
  local model = config.model
  -- The last request knows what the buffer really uses (its frontmatter may set another model),
  -- unless the configured provider or model changed since (`:Flemma switch`, `setup()`).
  local asked = H.asked[bufnr]
  if last and (asked == nil or (asked.provider == provider and asked.model == model)) then
    provider = type(last.provider) == "string" and last.provider or provider
    model = type(last.model) == "string" and last.model or model
  end
  return {
    bufnr = bufnr,
    model = { name = model, provider = provider },
    thinking = { level = thinking_level(config.parameters or {}, provider) },
    session = session,
    last = last,
    -- The last request against its model's window: it stays with the model it went to.
    context = context,
    busy = H.busy(bufnr),
    booting = H.booting,
  }
end

--- The busy state of a buffer: `busy` ("request", "tools" or nil) and `booting`.
---@param bufnr integer|nil
---@return "request"|"tools"|nil busy
---@return boolean booting
function M.state(bufnr)
  return H.busy(resolve(bufnr)), H.booting
end

-- ---------------------------------------------------------------------------------------------
-- The format: `{{ expression }}` and `{% code %}`, as in `.chat` templates
-- ---------------------------------------------------------------------------------------------

--- Safe globals of a format, besides its variables.
local GLOBALS = {
  string = string,
  math = math,
  table = table,
  tostring = tostring,
  tonumber = tonumber,
  type = type,
  pairs = pairs,
  ipairs = ipairs,
  select = select,
  os = { date = os.date, time = os.time },
}

--- The variables of the render in progress (formats are compiled once and read them from here).
H.current = {}
H.scratch = {}

H.env = setmetatable({}, {
  __index = function(_, key)
    local value = H.scratch[key]
    if value == nil then
      value = H.current[key]
    end
    if value == nil then
      value = GLOBALS[key]
    end
    return value
  end,
  __newindex = function(_, key, value)
    H.scratch[key] = value
  end,
})

--- Compile a format string into a function returning the text.
function H.compile(source)
  local code = { "local __o, __t, __s = {}, ..." }
  local texts = {}
  local function text(s)
    if s ~= "" then
      texts[#texts + 1] = s
      code[#code + 1] = string.format("__o[#__o+1] = __t[%d]", #texts)
    end
  end
  local pos = 1
  while true do
    local open_at, _, opener = source:find("([{][{%%])", pos)
    if not open_at then
      break
    end
    local closer = opener == "{{" and "}}" or "%}"
    local close_at, close_end = source:find(closer, open_at + 2, true)
    if not close_at then
      break
    end
    local before = source:sub(pos, open_at - 1)
    local inner = source:sub(open_at + 2, close_at - 1)
    -- `{%-` / `{{-` trims the whitespace before the tag, `-%}` / `-}}` the whitespace after it.
    if inner:sub(1, 1) == "-" then
      inner = inner:sub(2)
      before = before:gsub("%s+$", "")
    end
    local trim_after = inner:sub(-1) == "-"
    if trim_after then
      inner = inner:sub(1, -2)
    end
    text(before)
    if opener == "{{" then
      code[#code + 1] = "__o[#__o+1] = __s(" .. inner .. "\n)"
    else
      code[#code + 1] = inner
    end
    pos = close_end + 1
    if trim_after then
      pos = pos + #source:sub(pos):match("^%s*")
    end
  end
  text(source:sub(pos))
  code[#code + 1] = "return table.concat(__o)"
  local fn, err = load(table.concat(code, "\n"), "=statusline format", "t", H.env)
  if not fn then
    return nil, err
  end
  return function()
    -- nil and false print nothing: `{{ busy and "busy" }}` needs no `or ""`.
    return fn(texts, function(value)
      if value == nil or value == false then
        return ""
      end
      return tostring(value)
    end)
  end
end

--- Show a format error once (scheduled: formats run while the statusline is drawn).
function H.report(err)
  local message = "ui.statusline.format: " .. tostring(err)
  if H.reported[message] then
    return
  end
  H.reported[message] = true
  vim.schedule(function()
    log.write("warn", message)
    notify.warn(message)
  end)
end

--- Render the format with the buffer's variables; a failing format shows a short marker.
function H.render(bufnr, format)
  local variables = M.variables(bufnr)
  local ok, result
  if type(format) == "function" then
    ok, result = pcall(format, variables)
  else
    local compiled = H.formats[format]
    if not compiled then
      local fn, err = H.compile(format)
      compiled = { fn = fn, err = err }
      H.formats[format] = compiled
    end
    if not compiled.fn then
      ok, result = false, compiled.err
    else
      H.current, H.scratch = variables, {}
      ok, result = pcall(compiled.fn)
      H.current, H.scratch = {}, {}
    end
  end
  if not ok then
    H.report(result)
    return "flemma: format error"
  end
  if result == nil then
    return ""
  end
  -- One line: a newline would show as ^@ in a statusline.
  return (tostring(result):gsub("[\r\n]+", " "))
end

-- ---------------------------------------------------------------------------------------------
-- API
-- ---------------------------------------------------------------------------------------------

--- The statusline text of a `chat` buffer ("" for any other buffer). Cheap: answered from a cache
--- that lifecycle events, buffer locks and configuration changes invalidate.
--- `opts.escape`: double every `%`, for places that read statusline syntax (lualine, heirline…).
---@param bufnr integer|nil  0 or nil: the current buffer
---@param opts { escape: boolean|nil }|nil
---@return string
function M.get(bufnr, opts)
  -- Someone shows the text: from now on, changes redraw the statuslines.
  H.shown = true
  bufnr = resolve(bufnr)
  if not is_chat(bufnr) then
    return ""
  end
  local busy = H.busy(bufnr)
  local config = flemma_config.get()
  local entry = H.cache[bufnr]
  if not entry or entry.busy ~= busy or entry.booting ~= H.booting or entry.config ~= config then
    local statusline = type(config.ui) == "table" and config.ui.statusline or nil
    local format = type(statusline) == "table" and statusline.format or "{{ model.name or model.provider }}"
    entry = { text = H.render(bufnr, format), busy = busy, booting = H.booting, config = config }
    H.cache[bufnr] = entry
  end
  if opts and opts.escape then
    entry.escaped = entry.escaped or (entry.text:gsub("%%", "%%%%"))
    return entry.escaped
  end
  return entry.text
end

--- Drop the cached text of one buffer (or of all) and redraw the statuslines soon. Call it after
--- changing something a function format reads. `force`: redraw even when no statusline shows
--- Flemma's text (see the lock's release below).
---@param bufnr integer|nil
---@param force boolean|nil
function M.refresh(bufnr, force)
  if bufnr then
    H.cache[bufnr] = nil
  else
    H.cache = {}
  end
  -- NOTE: no redraw until some statusline has asked for the text. A forced redraw is real work
  -- in Neovim's main loop, and a <C-c> typed while it runs is taken as an interrupt and dropped
  -- (the cancel key would be lost right as a request starts).
  if H.redraw_pending or not (H.shown or force) then
    return
  end
  H.redraw_pending = true
  vim.schedule(function()
    H.redraw_pending = false
    pcall(vim.cmd.redrawstatus, { bang = true })
    -- lualine draws from its own timer; ask it for a fresh line now.
    local lualine = package.loaded["lualine"]
    if type(lualine) == "table" and type(lualine.refresh) == "function" then
      pcall(lualine.refresh, { place = { "statusline" } })
    end
  end)
end

--- Define `FlemmaStatuslineBusy` (the busy indicator of the lualine component) from
--- `highlights.busy`, as a default definition a colorscheme or the user may override. Run by
--- `bootstrap()`, `setup()`, after every `:colorscheme` and when the lualine component loads.
function M.define_highlight()
  local ok, value = pcall(function()
    return flemma_config.get().highlights.busy
  end)
  value = ok and value or "DiagnosticWarn"
  if type(value) == "table" and (value.dark ~= nil or value.light ~= nil) then
    value = value[vim.o.background] or value.dark or value.light
  end
  local spec
  if type(value) == "string" then
    -- A group name, or an expression such as "DiagnosticWarn+bg:#000000": its group.
    spec = { link = value:match("^%s*([%w_.@]+)") or "DiagnosticWarn" }
  elseif type(value) == "table" then
    spec = vim.deepcopy(value)
  else
    spec = { link = "DiagnosticWarn" }
  end
  spec.default = true
  -- A default definition does not replace an existing one: our own earlier one (from a previous
  -- setup) is replaced explicitly, anybody else's is left alone.
  local current = vim.api.nvim_get_hl(0, { name = BUSY_HL, link = true })
  spec.force = H.hl_applied ~= nil and vim.deep_equal(current, H.hl_applied) or nil
  if not pcall(vim.api.nvim_set_hl, 0, BUSY_HL, spec) then
    vim.api.nvim_set_hl(0, BUSY_HL, { link = "DiagnosticWarn", default = true, force = spec.force })
  end
  local now = vim.api.nvim_get_hl(0, { name = BUSY_HL, link = true })
  H.hl_applied = now.default and now or nil
end

--- Follow the events that change what the statusline shows; run once from `flemma.bootstrap()`.
function M.bootstrap()
  if H.bootstrapped then
    return
  end
  H.bootstrapped = true
  hooks.on("host:started", function()
    H.booting = true
    M.refresh()
  end)
  hooks.on("boot:complete", function()
    H.booting = false
    M.refresh()
  end)
  hooks.on("host:exited", function()
    H.booting = false
    M.refresh()
  end)
  hooks.on("request:finished", function(data)
    if type(data.bufnr) == "number" then
      local config = flemma_config.get(data.bufnr)
      H.asked[data.bufnr] = { provider = config.provider, model = config.model }
    end
  end)
  -- Locks tell `busy` (see flemma.buffer); these events also change the session's figures.
  for _, name in ipairs({
    "request:sending",
    "request:finished",
    "tool:executing",
    "tool:completed",
    "usage:estimated",
    "config:updated",
  }) do
    hooks.on(name, function()
      M.refresh()
    end)
  end
  local group = vim.api.nvim_create_augroup("flemma.statusline", { clear = true })
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    desc = "Flemma: forget the buffer's statusline text",
    callback = function(ev)
      H.cache[ev.buf] = nil
      H.asked[ev.buf] = nil
    end,
  })
  M.define_highlight()
  vim.api.nvim_create_autocmd("ColorScheme", {
    group = group,
    desc = "Flemma: define FlemmaStatuslineBusy again",
    callback = function()
      M.define_highlight()
    end,
  })
end

-- A lock taken or released changes what the statusline shows. A release also makes the buffer
-- modifiable again, which any statusline may show (Neovim's own `%m`: "[+-]" while locked, "[+]"
-- after); released from a callback (a host that crashed), Neovim 0.12 does not redraw it by itself.
locks.subscribe({
  changed = M.refresh,
  released = function(bufnr)
    M.refresh(bufnr, true)
  end,
})

return M
