--- flemma.commands: the `:Flemma <command> [args]` registry: dispatch, completion, listing and
--- "did you mean" for typos. Command names use `:` between levels (`host:restart`, `log:open`).
local notify = require("flemma.notify")
local suggest = require("flemma.util.suggest")
local lazy = require("flemma.util.lazy")
local builtin = lazy.require("flemma.commands.builtin")
local host = lazy.require("flemma.host")
local log = lazy.require("flemma.host.log")
local scratch = lazy.require("flemma.ui.scratch")

local M = {}

---@class flemma.commands.Spec
---@field run fun(args: string[], ctx: table)
---@field desc string|nil
---@field complete (fun(arglead: string, args: string[]): string[]|nil)|nil
---@field starts_host boolean|nil  false for commands that must not start the host (default true)

local H = {
  commands = {}, ---@type table<string, flemma.commands.Spec>
  builtin_added = false,
}

local NAME_PATTERN = "^[%w_%-]+$"

--- Add (or replace) a command. `name` is `word` or `group:sub` (any depth).
---@param name string
---@param spec flemma.commands.Spec
function M.register(name, spec)
  if type(name) ~= "string" or name == "" then
    error("flemma.commands.register: the name must be a non-empty string", 2)
  end
  for part in (name .. ":"):gmatch("(.-):") do
    if not part:match(NAME_PATTERN) then
      error(string.format("flemma.commands.register: invalid command name '%s'", name), 2)
    end
  end
  if type(spec) ~= "table" or type(spec.run) ~= "function" then
    error(string.format("flemma.commands.register: '%s' needs a `run` function", name), 2)
  end
  if spec.complete ~= nil and type(spec.complete) ~= "function" then
    error(string.format("flemma.commands.register: '%s': `complete` must be a function", name), 2)
  end
  H.commands[name] = { run = spec.run, desc = spec.desc, complete = spec.complete, starts_host = spec.starts_host }
end

--- The built-in commands (flemma.commands.builtin) join the registry when it is first read, not
--- at start-up; a command registered before then keeps its place, as it would have replaced the
--- built-in one registered at start-up.
function H.ensure()
  if H.builtin_added then
    return
  end
  H.builtin_added = true
  for name, spec in pairs(builtin.commands) do
    if H.commands[name] == nil then
      M.register(name, spec)
    end
  end
end

--- Remove a command; returns whether it existed.
---@param name string
---@return boolean
function M.unregister(name)
  H.ensure()
  local existed = H.commands[name] ~= nil
  H.commands[name] = nil
  return existed
end

--- Every registered command name, sorted.
---@return string[]
function M.names()
  H.ensure()
  local names = vim.tbl_keys(H.commands)
  table.sort(names)
  return names
end

--- Run `:Flemma` with these arguments (`fargs[1]` is the command name). `ctx` is passed to the
--- command as is (the user command's callback table when called from `:Flemma`).
---@param fargs string[]
---@param ctx table|nil
function M.run(fargs, ctx)
  H.ensure()
  fargs = fargs or {}
  ctx = ctx or {}
  local name = fargs[1]
  if name == nil or name == "" then
    H.show_overview()
    return
  end
  name, ctx = H.bang(name, ctx)
  local spec = H.commands[name]
  if spec then
    if spec.starts_host ~= false then
      -- The host starts lazily: with the first chat buffer or the first :Flemma command.
      host.ensure()
    end
    H.call(name, spec, { unpack(fargs, 2) }, ctx)
    return
  end
  local children = H.children(name)
  if #children > 0 then
    H.show_list(children, string.format("Flemma %s commands", name))
    return
  end
  local guess = suggest.closest(name, H.candidates())
  local message = string.format("Flemma: unknown command '%s'", name)
  if guess then
    message = message .. string.format(" (did you mean '%s'?)", guess)
  else
    message = message .. " (run :Flemma for the list)"
  end
  notify.error(message)
end

--- Completion for the `:Flemma` user command (`complete = M.complete`).
---@param arglead string
---@param cmdline string
---@param cursorpos integer
---@return string[]
function M.complete(arglead, cmdline, cursorpos)
  H.ensure()
  arglead = arglead or ""
  local args = H.arguments((cmdline or ""):sub(1, cursorpos or #(cmdline or "")))
  -- `args` holds the finished arguments; the one being typed is `arglead`.
  if #args == 0 then
    return vim.tbl_filter(function(name)
      return vim.startswith(name, arglead)
    end, M.names())
  end
  local spec = H.commands[(H.bang(args[1], {}))]
  if not spec or not spec.complete then
    return {}
  end
  local ok, items = pcall(spec.complete, arglead, { unpack(args, 2) })
  if not ok then
    log.write("warn", string.format("completion for '%s' failed: %s", args[1], tostring(items)))
    return {}
  end
  if type(items) ~= "table" then
    return {}
  end
  local result = {}
  for _, item in ipairs(items) do
    if type(item) == "string" and vim.startswith(item, arglead) then
      result[#result + 1] = item
    end
  end
  return result
end

--- `switch!` is `switch` with `ctx.bang` set (as `:Flemma! switch` is), when `switch` is a command.
---@return string name
---@return table ctx
function H.bang(name, ctx)
  local base = name:match("^(.+)!$")
  if base == nil or H.commands[base] == nil then
    return name, ctx
  end
  return base, vim.tbl_extend("force", ctx, { bang = true })
end

--- Create the `:Flemma` user command (safe to call more than once: it replaces itself).
function M.setup()
  vim.api.nvim_create_user_command("Flemma", function(opts)
    M.run(opts.fargs, opts)
  end, {
    nargs = "*",
    -- `:Flemma! switch` (or `:Flemma switch!`): the command's wider form, where it has one.
    bang = true,
    -- A range is for the commands that take one (`:'<,'>Flemma review`); the others ignore it.
    range = true,
    complete = function(arglead, cmdline, cursorpos)
      return M.complete(arglead, cmdline, cursorpos)
    end,
    desc = "Flemma: run a command (no arguments lists them)",
  })
end

--- Run one command, turning any error it raises into a single notification.
function H.call(name, spec, args, ctx)
  local trace
  local ok, err = xpcall(function()
    spec.run(args, ctx)
  end, function(e)
    trace = debug.traceback(tostring(e), 2)
    return e
  end)
  if ok then
    return
  end
  log.write("error", string.format(":Flemma %s failed: %s", name, trace or tostring(err)))
  notify.error(string.format("Flemma: %s: %s", name, H.clean_error(err)))
end

--- The text of an error without Lua's `file.lua:12: ` position prefix.
function H.clean_error(err)
  if type(err) == "table" and type(err.message) == "string" then
    err = err.message
  end
  local text = type(err) == "string" and err or vim.inspect(err)
  text = text:gsub("^[^\n]-%.lua:%d+: ", "", 1)
  text = text:gsub('^%[string "[^"]*"%]:%d+: ', "", 1)
  return text
end

--- The words after the command name in a `:Flemma …` command line (typed part only). When the
--- line does not end in whitespace, the last word is the argument being typed and is dropped.
function H.arguments(line)
  local words = vim.split(line, "%s+", { trimempty = true })
  -- Skip ranges and modifiers: everything up to the word naming the command itself.
  local start = 1
  for index, word in ipairs(words) do
    local bare = word:gsub("^[^%a]*", ""):gsub("!$", "")
    if #bare >= 2 and bare:sub(1, 1) == "F" and vim.startswith("Flemma", bare) then
      start = index
      break
    end
  end
  local args = { unpack(words, start + 1) }
  if not line:match("%s$") then
    table.remove(args)
  end
  return args
end

--- Registered names directly or indirectly under the group `prefix` (`host` → `host:…`).
function H.children(prefix)
  return vim.tbl_filter(function(name)
    return vim.startswith(name, prefix .. ":")
  end, M.names())
end

--- Commands and their groups, for "did you mean".
function H.candidates()
  local seen, result = {}, {}
  for _, name in ipairs(M.names()) do
    local parts = vim.split(name, ":", { plain = true })
    for depth = 1, #parts do
      local candidate = table.concat(parts, ":", 1, depth)
      if not seen[candidate] then
        seen[candidate] = true
        result[#result + 1] = candidate
      end
    end
  end
  table.sort(result)
  return result
end

--- `:Flemma`: every command, with groups of three or more (`tool:…`) folded into one row that
--- names its members, so the list fits a screen; `:Flemma <group>` lists a group in full.
--- The overview's rows: a group of at least `collapse` commands as one row, others one each.
function H.overview_rows(collapse)
  local groups, order = {}, {}
  for _, name in ipairs(M.names()) do
    local group = name:match("^([^:]+):")
    local key = group or name
    if not groups[key] then
      groups[key] = {}
      order[#order + 1] = key
    end
    table.insert(groups[key], name)
  end
  local rows = {}
  for _, key in ipairs(order) do
    local members = groups[key]
    if #members >= collapse then
      local short = vim.tbl_map(function(member)
        return member:sub(#key + 2)
      end, members)
      rows[#rows + 1] = {
        name = key .. ":…",
        desc = string.format("%d commands (:Flemma %s): %s", #members, key, table.concat(short, ", ")),
      }
    else
      for _, member in ipairs(members) do
        rows[#rows + 1] = { name = member, desc = H.commands[member].desc or "" }
      end
    end
  end
  return rows
end

function H.show_overview()
  local rows = H.overview_rows(3)
  -- The header and the rows on the screen without the pager: groups of two become one row too
  -- when that is what it takes; when even that does not fit, the full list opens in a scratch
  -- buffer (`q` closes it) rather than behind the pager.
  local room = vim.o.lines - 2
  if #rows > room then
    local fewer = H.overview_rows(2)
    if #fewer > room then
      H.scratch_rows(H.overview_rows(math.huge), "Flemma commands")
      return
    end
    rows = fewer
  end
  H.echo_rows(rows, "Flemma commands")
end

--- The rows as text (`name  description`, aligned) in the scratch buffer `flemma://commands`.
function H.scratch_rows(rows, header)
  local width = 0
  for _, row in ipairs(rows) do
    width = math.max(width, vim.fn.strdisplaywidth(row.name))
  end
  local lines = { header .. " (:help flemma-commands; q closes)", "" }
  for _, row in ipairs(rows) do
    lines[#lines + 1] = row.name .. string.rep(" ", width - vim.fn.strdisplaywidth(row.name) + 2) .. row.desc
  end
  scratch.show("flemma://commands", lines)
end

--- One `nvim_echo` call: a header, then `name  description` rows with aligned columns.
function H.show_list(names, header)
  H.echo_rows(
    vim.tbl_map(function(name)
      return { name = name, desc = H.commands[name].desc or "" }
    end, names),
    header
  )
end

--- `text` cut to `room` display cells, ending in "…" when it was longer.
function H.fit(text, room)
  if vim.fn.strdisplaywidth(text) <= room then
    return text
  end
  local chars = vim.fn.strchars(text)
  local keep = math.min(chars, room - 1)
  while keep > 0 and vim.fn.strdisplaywidth(vim.fn.strcharpart(text, 0, keep)) > room - 1 do
    keep = keep - 1
  end
  return vim.fn.strcharpart(text, 0, keep) .. "…"
end

function H.echo_rows(rows, header)
  local names = vim.tbl_map(function(row)
    return row.name
  end, rows)
  local width = 0
  for _, name in ipairs(names) do
    width = math.max(width, vim.fn.strdisplaywidth(name))
  end
  local chunks = { { header, "Title" } }
  if #names == 0 then
    chunks[#chunks + 1] = { "\n  (none registered)", "Comment" }
  end
  -- One screen line per command, so that the list never needs the pager on a small screen: a
  -- longer description is cut (the whole one is in `:help flemma-commands`).
  local room = math.max(vim.o.columns - 1 - (width + 4), 10)
  for i, name in ipairs(names) do
    local desc = H.fit(rows[i].desc, room)
    local pad = string.rep(" ", width - vim.fn.strdisplaywidth(name) + 2)
    chunks[#chunks + 1] = { "\n  " .. name, "Identifier" }
    chunks[#chunks + 1] = { pad .. desc }
  end
  vim.api.nvim_echo(chunks, true, {})
end

return M
