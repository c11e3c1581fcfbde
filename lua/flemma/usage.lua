--- flemma.usage: what requests cost. The host sends each completed request (`usage.show`); this
--- module keeps the latest one per buffer, its input against its model's context window, and the
--- session's totals (`last()`, `context()`, `session()`), and shows the usage bar: a one-line
--- floating window over the chat's window, never over the cursor's line, that goes at the next key
--- typed or after `ui.usage.timeout`.
local lazy = require("flemma.util.lazy")
local flemma_config = lazy.require("flemma.config")
local hooks = lazy.require("flemma.hooks")
local host = lazy.require("flemma.host")
local notify = lazy.require("flemma.notify")
local M = {}

local H = {
  ns = vim.api.nvim_create_namespace("flemma.usage"),
  --- The `vim.on_key` listener of the bars shown.
  key_ns = vim.api.nvim_create_namespace("flemma.usage.keys"),
  --- Bars drawn so far (each bar remembers its number as `render`).
  renders = 0,
  --- Per buffer: its latest request, the session's totals as they were then, and the request's
  --- input against its model's context window (the context meter; nil from an older host).
  ---@type table<integer, { request: table, session: table, min_cache_tokens: integer|nil, context: table|nil }>
  last = {},
  session = { requests = 0, cost = 0, input_tokens = 0, output_tokens = 0 },
  ---@type table<integer, { win: integer, buf: integer, target: integer, timer: uv.uv_timer_t|nil, group: integer, render: integer }>
  bars = {},
  subscribed = false,
}

-- ---------------------------------------------------------------------------------------------
-- Figures
-- ---------------------------------------------------------------------------------------------

--- 950 → "950", 9000 → "9k", 12345 → "12.3k", 2500000 → "2.5M".
function H.tokens(n)
  n = tonumber(n) or 0
  if n < 1000 then
    return tostring(math.floor(n))
  end
  local value, suffix = n / 1000, "k"
  if n >= 999950 then
    value, suffix = n / 1e6, "M"
  end
  local text = string.format("%.1f", value):gsub("%.0$", "")
  return text .. suffix
end

--- USD: four decimals below a dollar (requests are cheap), two above.
function H.dollars(value)
  return string.format(value < 1 and "$%.4f" or "$%.2f", value)
end

local function number(value)
  return tonumber(value) or 0
end

--- The bar's pieces, in order: groups of `{text, hl?, priority}` (higher priority stays longer
--- when the window is narrow).
---@param entry { request: table, min_cache_tokens: integer|nil, context: table|nil }
---@param session { requests: number, cost: number, input_tokens: number, output_tokens: number }
function H.segments(entry, session)
  local r = entry.request
  local cache_read = number(r.cache_read_input_tokens)
  local total_input = number(r.input_tokens) + cache_read + number(r.cache_creation_input_tokens)
  local thoughts = number(r.thoughts_tokens)

  local model = { { text = string.format("%s (%s)", r.model or "?", r.provider or "?"), priority = 70 } }

  local request = {}
  if type(r.cost) == "number" then
    request[#request + 1] = { text = H.dollars(r.cost), hl = "FlemmaUsageCost", priority = 100 }
  elseif r.reported_by == "agent" then
    -- An agent that did not say what its turn cost: unknown (never priced from our table).
    request[#request + 1] = { text = "cost unknown", hl = "FlemmaUsageCost", priority = 100 }
  end
  local percent = total_input > 0 and math.floor(cache_read / total_input * 100) or 0
  -- 0 % means nothing when the prompt is too short to be cached (or its minimum is unknown).
  local minimum = entry.min_cache_tokens
  if percent > 0 or (minimum ~= nil and total_input >= minimum) then
    request[#request + 1] = {
      text = string.format("%d%% cached", percent),
      hl = percent > 50 and "FlemmaUsageCacheGood" or nil,
      priority = 50,
    }
  end
  request[#request + 1] = { text = "↑" .. H.tokens(total_input), priority = 75 }
  -- The context meter: the input against the window of the model the request went to. A piece of
  -- its own, so that a narrow bar keeps the count and drops the window first.
  local context = entry.context
  if type(context) == "table" and number(context.window) > 0 then
    request[#request + 1] = {
      text = string.format("/ %s (%d%%)", H.tokens(context.window), number(context.percent)),
      hl = context.warn and "FlemmaUsageContextHigh" or nil,
      priority = 60,
    }
  end
  request[#request + 1] = { text = "↓" .. H.tokens(r.output_tokens), priority = 80 }
  if thoughts > 0 then
    request[#request + 1] = { text = "⁂" .. H.tokens(thoughts), priority = 30 }
  end

  -- The count stays with the session's cost, so that the two costs are never confused.
  local count = "Σ" .. tostring(number(session.requests))
  if type(r.cost) == "number" or number(session.cost) > 0 then
    count = count .. " " .. H.dollars(number(session.cost))
  end
  local totals = { { text = count, hl = "FlemmaUsageSession", priority = 90 } }
  totals[#totals + 1] = { text = "↑" .. H.tokens(session.input_tokens), priority = 35 }
  totals[#totals + 1] = { text = "↓" .. H.tokens(session.output_tokens), priority = 40 }

  return { model, request, totals }
end

--- The bar's text within `max_width` display cells, dropping the lowest-priority pieces (the
--- later one of equal priority first); returns the text and the highlighted byte ranges.
---@return string text
---@return { hl: string, from: integer, to: integer }[] highlights
function H.layout(groups, max_width)
  local kept = {}
  for g, group in ipairs(groups) do
    for _, item in ipairs(group) do
      kept[#kept + 1] = { group = g, item = item }
    end
  end
  local function render()
    local highlights = {}
    local text = " "
    local last_group
    for _, piece in ipairs(kept) do
      if last_group ~= nil then
        text = text .. (piece.group ~= last_group and " │ " or " ")
      end
      last_group = piece.group
      if piece.item.hl then
        highlights[#highlights + 1] = { hl = piece.item.hl, from = #text, to = #text + #piece.item.text }
      end
      text = text .. piece.item.text
    end
    return text .. " ", highlights
  end
  local text, highlights = render()
  while vim.fn.strdisplaywidth(text) > max_width and #kept > 1 do
    local drop = 1
    for i, piece in ipairs(kept) do
      if piece.item.priority <= kept[drop].item.priority then
        drop = i
      end
    end
    table.remove(kept, drop)
    text, highlights = render()
  end
  return text, highlights
end

-- ---------------------------------------------------------------------------------------------
-- The bar
-- ---------------------------------------------------------------------------------------------

local function options()
  local ok, config = pcall(function()
    return flemma_config.get().ui.usage
  end)
  if ok and type(config) == "table" then
    return config
  end
  return { enabled = true, timeout = 10000, position = "top", highlight = "PmenuSel" }
end

--- `ui.usage.highlight` names groups to try in order ("@text.note,PmenuSel"): the first that is
--- defined colours the bar.
local function define_highlights(spec)
  local chosen = "PmenuSel"
  for name in tostring(spec or ""):gmatch("[^,%s]+") do
    local ok, found = pcall(vim.api.nvim_get_hl, 0, { name = name })
    if ok and type(found) == "table" and next(found) ~= nil then
      chosen = name
      break
    end
  end
  vim.api.nvim_set_hl(0, "FlemmaUsageBar", { link = chosen })
  vim.api.nvim_set_hl(0, "FlemmaUsageCost", { link = "FlemmaUsageBar", default = true })
  vim.api.nvim_set_hl(0, "FlemmaUsageSession", { link = "FlemmaUsageBar", default = true })
  vim.api.nvim_set_hl(0, "FlemmaUsageCacheGood", { link = "DiagnosticOk", default = true })
  vim.api.nvim_set_hl(0, "FlemmaUsageContextHigh", { link = "DiagnosticWarn", default = true })
end

--- The window that shows `bufnr` in this tab page, the current one first.
local function window_of(bufnr)
  local current = vim.api.nvim_get_current_win()
  if vim.api.nvim_win_get_buf(current) == bufnr then
    return current
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == bufnr and vim.api.nvim_win_get_config(win).relative == "" then
      return win
    end
  end
  return nil
end

--- The 0-based screen row of the cursor in `win`.
function H.cursor_row(win)
  return vim.api.nvim_win_call(win, vim.fn.winline) - 1
end

--- Every bar goes at the next key the user types (a bar says what a request cost; the text under
--- it is what the user came for).
function H.dismiss_on_key()
  vim.on_key(function(_, typed)
    if typed == "" then
      -- A key of a mapping's expansion, not one typed.
      return
    end
    vim.on_key(nil, H.key_ns)
    -- Scheduled (no window closes inside the key's handling): by then, the keys typed after it
    -- may have shown a bar again (`:Flemma usage:recall`), which stays.
    local upto = H.renders
    vim.schedule(function()
      for bufnr, bar in pairs(H.bars) do
        if bar.render <= upto then
          M.dismiss(bufnr)
        end
      end
    end)
  end, H.key_ns)
end

--- Close the bar of a buffer, if one is shown.
function M.dismiss(bufnr)
  local bar = H.bars[bufnr]
  if not bar then
    return false
  end
  H.bars[bufnr] = nil
  if next(H.bars) == nil then
    vim.on_key(nil, H.key_ns)
  end
  if bar.timer then
    pcall(function()
      bar.timer:stop()
      bar.timer:close()
    end)
  end
  pcall(vim.api.nvim_del_augroup_by_id, bar.group)
  if vim.api.nvim_win_is_valid(bar.win) then
    pcall(vim.api.nvim_win_close, bar.win, true)
  end
  return true
end

--- Put the bar's text in its buffer (made once per bar: a new buffer and filetype per request
--- would make Neovim search the runtimepath for the filetype's plugins each time).
function H.fill(buf, text, highlights)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { text })
  vim.bo[buf].modifiable = false
  vim.api.nvim_buf_clear_namespace(buf, H.ns, 0, -1)
  for _, h in ipairs(highlights) do
    vim.api.nvim_buf_set_extmark(buf, H.ns, 0, h.from, { end_col = h.to, hl_group = h.hl })
  end
end

--- Show the bar of `entry` over the window of `bufnr` (one bar per buffer: a new one replaces it,
--- in the same floating window when it is still over the same window).
function H.render(bufnr, entry)
  local opts = options()
  local target = window_of(bufnr)
  if not target then
    M.dismiss(bufnr)
    return false
  end
  define_highlights(opts.highlight)
  local win_width = vim.api.nvim_win_get_width(target)
  local text, highlights = H.layout(H.segments(entry, entry.session), math.max(win_width, 1))
  local width = math.min(vim.fn.strdisplaywidth(text), win_width)

  local position = opts.position or "top"
  local height = vim.api.nvim_win_get_height(target)
  local row = position:match("^bottom") and math.max(height - 1, 0) or 0
  -- Never over the line the cursor is on: the other edge of the window then.
  if row == H.cursor_row(target) then
    row = row == 0 and math.max(height - 1, 0) or 0
  end
  local col = math.floor((win_width - width) / 2)
  if position:match("left$") then
    col = 0
  elseif position:match("right$") then
    col = win_width - width
  end
  local placement = {
    relative = "win",
    win = target,
    row = row,
    col = math.max(col, 0),
    width = math.max(width, 1),
    height = 1,
  }

  local bar = H.bars[bufnr]
  if
    bar
    and bar.target == target
    and vim.api.nvim_win_is_valid(bar.win)
    and vim.api.nvim_buf_is_valid(bar.buf)
    and vim.api.nvim_win_get_buf(bar.win) == bar.buf
  then
    if bar.timer then
      pcall(function()
        bar.timer:stop()
        bar.timer:close()
      end)
      bar.timer = nil
    end
    H.fill(bar.buf, text, highlights)
    vim.api.nvim_win_set_config(bar.win, placement)
  else
    M.dismiss(bufnr)
    local buf = vim.api.nvim_create_buf(false, true)
    vim.bo[buf].bufhidden = "wipe"
    H.fill(buf, text, highlights)
    vim.bo[buf].filetype = "flemma_usage"
    local config = vim.tbl_extend("force", placement, {
      style = "minimal",
      focusable = false,
      noautocmd = true,
      zindex = 60,
    })
    local win = vim.api.nvim_open_win(buf, false, config)
    vim.wo[win].winhighlight = "Normal:FlemmaUsageBar,NormalFloat:FlemmaUsageBar"

    bar = {
      win = win,
      buf = buf,
      target = target,
      group = vim.api.nvim_create_augroup("flemma.usage." .. bufnr, { clear = true }),
    }
    H.bars[bufnr] = bar
    -- The bar belongs to the chat's window: it goes with it, and when the chat leaves it.
    vim.api.nvim_create_autocmd("WinClosed", {
      group = bar.group,
      pattern = tostring(target),
      once = true,
      callback = function()
        M.dismiss(bufnr)
      end,
    })
    vim.api.nvim_create_autocmd("BufWinLeave", {
      group = bar.group,
      buffer = bufnr,
      once = true,
      callback = function()
        M.dismiss(bufnr)
      end,
    })
    -- The cursor moved under it (a result written, the reply followed): it goes.
    vim.api.nvim_create_autocmd({ "CursorMoved", "CursorMovedI", "WinScrolled" }, {
      group = bar.group,
      callback = function()
        if vim.api.nvim_win_is_valid(bar.win) and vim.api.nvim_win_get_config(bar.win).row == H.cursor_row(target) then
          M.dismiss(bufnr)
        end
      end,
    })
  end
  H.renders = H.renders + 1
  bar.render = H.renders
  H.dismiss_on_key()
  local timeout = tonumber(opts.timeout) or 0
  if timeout > 0 then
    local timer = vim.uv.new_timer()
    bar.timer = timer
    timer:start(timeout, 0, function()
      vim.schedule(function()
        if H.bars[bufnr] == bar and bar.timer == timer then
          M.dismiss(bufnr)
        end
      end)
    end)
  end
  return true
end

-- ---------------------------------------------------------------------------------------------
-- From the host
-- ---------------------------------------------------------------------------------------------

function H.subscribe()
  if H.subscribed then
    return
  end
  H.subscribed = true
  -- A new host has a new session.
  hooks.on("host:started", function()
    H.session = { requests = 0, cost = 0, input_tokens = 0, output_tokens = 0 }
    H.last = {}
  end)
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = vim.api.nvim_create_augroup("flemma.usage", { clear = true }),
    desc = "Flemma: forget a buffer's usage",
    callback = function(ev)
      M.dismiss(ev.buf)
      H.last[ev.buf] = nil
    end,
  })
end

--- `usage.show {bufnr, request, session, min_cache_tokens?, context?}`: a request completed.
function M.show(params)
  H.subscribe()
  local bufnr = params.bufnr
  if type(params.session) == "table" then
    H.session = {
      requests = number(params.session.requests),
      cost = number(params.session.cost),
      input_tokens = number(params.session.input_tokens),
      output_tokens = number(params.session.output_tokens),
    }
  end
  local entry = {
    request = params.request,
    session = vim.deepcopy(H.session),
    min_cache_tokens = params.min_cache_tokens,
    context = type(params.context) == "table" and params.context or nil,
  }
  H.last[bufnr] = entry
  if options().enabled == false then
    return false
  end
  -- Drawn on the next tick: the events that follow this call (`request:finished`) go first.
  vim.schedule(function()
    if H.last[bufnr] == entry and vim.api.nvim_buf_is_valid(bufnr) then
      H.render(bufnr, entry)
    end
  end)
  return true
end

--- `usage.confirm {bufnr, cost, limit, message}`: the spend cap was reached and the user asked
--- to send; a yes sends with `over_limit`.
function M.confirm(params)
  local yes, no = "Send anyway", "Do not send"
  -- Scheduled: a picker plugin may open windows, which is better not done inside an RPC call.
  vim.schedule(function()
    vim.ui.select({ yes, no }, { prompt = params.message }, function(choice)
      if choice == yes then
        host.notify("chat:send", { bufnr = params.bufnr, over_limit = true })
      else
        notify.info("Not sent (limits.max_session_cost).")
      end
    end)
  end)
end

-- ---------------------------------------------------------------------------------------------
-- For users and other modules
-- ---------------------------------------------------------------------------------------------

--- `:Flemma usage:recall`: the last bar of the buffer again.
function M.recall(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local entry = H.last[bufnr]
  if not entry then
    notify.info("No request of this buffer has completed yet")
    return false
  end
  return H.render(bufnr, entry)
end

--- The session's totals: `{ requests, cost, input_tokens, output_tokens }` (cost in USD, input
--- tokens including cache reads and writes).
function M.session()
  return vim.deepcopy(H.session)
end

--- The latest completed request of a buffer (the host's record: provider, model, token counts,
--- prices, cost, …), or nil.
---@param bufnr integer|nil  0 or nil: the current buffer
function M.last(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local entry = H.last[bufnr]
  return entry and vim.deepcopy(entry.request) or nil
end

--- The context meter of a buffer: its latest completed request's input (uncached, cache reads
--- and cache writes) against the context window of the model that request went to, or nil.
--- `{ tokens, window, percent, text = "48.2k / 200k (24%)", warn, source, provider, model }`;
--- `warn` is true at or over `context.warn_at` of the window.
---@param bufnr integer|nil  0 or nil: the current buffer
function M.context(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local entry = H.last[bufnr]
  return entry and entry.context and vim.deepcopy(entry.context) or nil
end

--- The bar shown over a buffer's window, `{ win, buf }`, or nil.
function M.bar(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local bar = H.bars[bufnr]
  if bar and vim.api.nvim_win_is_valid(bar.win) then
    return { win = bar.win, buf = bar.buf }
  end
  return nil
end

return M
