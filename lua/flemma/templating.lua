--- flemma.templating: renders the `{{ expression }}` and `{% code %}` parts of `@System:` and
--- `@You:` messages, in Lua, with the buffer's frontmatter variables. The host sends the parts
--- (already split, with their buffer lines); an error names the line.
local lazy = require("flemma.util.lazy")
local trust = lazy.require("flemma.config.trust")
local frontmatter = lazy.require("flemma.frontmatter")
local personalities = lazy.require("flemma.personalities")
local restricted = lazy.require("flemma.util.restricted")
local M = {}

local H = {
  --- name → function(env) that adds globals to every template's environment
  populators = {},
}

--- Add globals to every template (`fn(env)` sets keys of `env`); replaces one of the same name.
function M.register_populator(name, fn)
  vim.validate({ name = { name, "string" }, fn = { fn, "function" } })
  H.populators[name] = fn
end

function M.unregister_populator(name)
  local had = H.populators[name] ~= nil
  H.populators[name] = nil
  return had
end

--- Split template text (an included file) into the segments the host would send.
function H.split(text)
  local segments = {}
  local pos, line = 1, 1
  local function push_text(s)
    if s ~= "" then
      segments[#segments + 1] = { kind = "text", text = s }
    end
  end
  while true do
    local open_at, _, opener = text:find("([{][{%%])", pos)
    if not open_at then
      push_text(text:sub(pos))
      break
    end
    local closer = opener == "{{" and "}}" or "%}"
    local close_at, close_end = text:find(closer, open_at + 2, true)
    if not close_at then
      push_text(text:sub(pos))
      break
    end
    local before = text:sub(pos, open_at - 1)
    local inner = text:sub(open_at + 2, close_at - 1)
    local trim_before = inner:sub(1, 1) == "-"
    local trim_after = inner:sub(-1) == "-"
    if trim_before then
      inner = inner:sub(2)
      before = before:gsub("%s+$", "")
    end
    if trim_after then
      inner = inner:sub(1, -2)
    end
    line = line + select(2, text:sub(pos, open_at - 1):gsub("\n", ""))
    push_text(before)
    segments[#segments + 1] = { kind = opener == "{{" and "expression" or "code", code = inner, line = line }
    line = line + select(2, inner:gsub("\n", ""))
    pos = close_end + 1
    if trim_after then
      local rest = text:sub(pos)
      local skipped = rest:match("^%s*")
      line = line + select(2, skipped:gsub("\n", ""))
      pos = pos + #skipped
    end
  end
  return segments
end

--- Compile segments into a function; answers it, or nil and the error, and the map from the
--- chunk's lines to the segments' lines.
function H.compile(segments, chunkname, env, spliced)
  local src = { "local __o, __t, __s = {}, ..." }
  local map = {}
  local texts = {}
  local function add(code, line)
    local first = #src + 1
    for piece in (code .. "\n"):gmatch("(.-)\n") do
      src[#src + 1] = piece
    end
    for i = first, #src do
      map[i] = line and (line + i - first) or nil
    end
  end
  for _, segment in ipairs(segments) do
    if segment.kind == "text" then
      texts[#texts + 1] = segment.text
      add(string.format("__o[#__o+1] = __t[%d]", #texts), nil)
    elseif segment.kind == "expression" then
      add("__o[#__o+1] = __s(" .. segment.code .. "\n)", segment.line)
      -- The closing line (after the code, so that a `--` comment cannot swallow it) belongs to
      -- the code's last line.
      map[#src] = map[#src - 1]
    else
      add(segment.code, segment.line)
    end
  end
  -- A spliced job (expressions only) answers the values; the host puts them in its text.
  src[#src + 1] = spliced and "return __o" or "return table.concat(__o)"
  local fn, err = load(table.concat(src, "\n"), "=" .. chunkname, "t", env)
  return fn, err, map, texts
end

--- Compile expression-only jobs into one function answering, per job, the list of its values.
function H.compile_spliced(jobs, chunkname, env)
  local src = { "local __r, __s = {}, ..." }
  local map = {}
  for j, job in ipairs(jobs) do
    src[#src + 1] = string.format("__r[%d] = {}", j)
    for _, segment in ipairs(job.segments or {}) do
      local first = #src + 1
      local code = string.format("__r[%d][#__r[%d]+1] = __s(", j, j) .. segment.code .. "\n)"
      for piece in (code .. "\n"):gmatch("(.-)\n") do
        src[#src + 1] = piece
      end
      for i = first, #src do
        map[i] = segment.line + i - first
      end
      map[#src] = map[#src - 1]
    end
  end
  src[#src + 1] = "return __r"
  local fn, err = load(table.concat(src, "\n"), "=" .. chunkname, "t", env)
  return fn, err, map
end

--- "template:12: message" → "line 40: message" with the map.
function H.describe(message, chunkname, map, where)
  message = tostring(message)
  local escaped = vim.pesc(chunkname)
  local n, rest = message:match("^" .. escaped .. ":(%d+): (.*)$")
  if n then
    local line = map[tonumber(n)]
    if line then
      return string.format("%sline %d: %s", where, line, rest)
    end
    return where .. rest
  end
  return message
end

local function tostr(value)
  if value == nil then
    return ""
  end
  return tostring(value)
end

--- The environment of one render: variables, the restricted globals (flemma.util.restricted),
--- populators, `include`.
function H.environment(variables, base_dir, stack, render)
  local vars = {}
  for key, value in pairs(variables or {}) do
    vars[key] = value
  end
  local safe = restricted.globals()
  for _, populate in pairs(H.populators) do
    pcall(populate, safe)
  end
  local env = restricted.environment(vars, safe, { strict = true })
  --- `include(path)`: the file (relative to the chat's directory) rendered as a template.
  safe.include = function(path)
    if type(path) ~= "string" then
      error("include() takes a path", 2)
    end
    local personality = path:match("^urn:flemma:personality:(.+)$")
    if personality then
      local ok, text = pcall(personalities.render, personality, render.bufnr, base_dir, render.tools, render.path)
      if not ok then
        error(tostring(text), 2)
      end
      return text
    end
    local normalized = vim.fs.normalize(path)
    local full = vim.fn.fnamemodify(normalized:sub(1, 1) == "/" and normalized or (base_dir .. "/" .. normalized), ":p")
    for _, seen in ipairs(stack) do
      if seen == full then
        local chain = vim.list_extend(vim.deepcopy(stack), { full })
        error("include cycle: " .. table.concat(
          vim.tbl_map(function(p)
            return vim.fn.fnamemodify(p, ":~:.")
          end, chain),
          " → "
        ), 2)
      end
    end
    local ok, lines = pcall(vim.fn.readfile, full)
    if not ok or vim.fn.filereadable(full) == 0 then
      error(string.format("include(%q): no such file", path), 2)
    end
    local text = table.concat(lines, "\n")
    -- An included file is part of what the chat was trusted with (docs/security.md, "Trust").
    local changed = render.path == nil and trust.included(render.bufnr, vim.uv.fs_realpath(full) or full, text)
    if changed then
      render.untrusted = changed
      error(changed, 0)
    end
    local inner_stack = vim.list_extend(vim.deepcopy(stack), { full })
    local chunk = "include:" .. vim.fn.fnamemodify(full, ":~:.")
    local inner_env = H.environment(vars, vim.fn.fnamemodify(full, ":h"), inner_stack, render)
    local fn, err, map, texts = H.compile(H.split(text), chunk, inner_env)
    if not fn then
      error(H.describe(err, chunk, map, chunk .. " "), 0)
    end
    local ran, result = pcall(fn, texts, tostr)
    if not ran then
      error(H.describe(result, chunk, map, chunk .. " "), 0)
    end
    return result
  end
  return env
end

--- The trust of the chat being rendered: a buffer's decision, or a file chat's given one
--- (`file = {path, trusted}`: the host runs that chat, no buffer holds it), and why not.
function H.trusted(params)
  local file = params.file
  if type(file) ~= "table" then
    local state = trust.state(params.bufnr, params.digest)
    return state.trusted, not state.trusted and trust.message(params.bufnr, state, "templates") or nil
  end
  local name = vim.fn.fnamemodify(file.path, ":t")
  return file.trusted == true, string.format("%s is not trusted: its templates do not run", name)
end

--- Host → Lua (`template.render`): `{bufnr, digest, variables, jobs = {{segment, …}, …}, file?}`
--- → `{texts}`, `{error}` (naming the buffer line) or `{untrusted}` (`digest` as for
--- `flemma.trust.state`).
function M.render(params)
  local bufnr = params.bufnr
  local trusted, why = H.trusted(params)
  if not trusted then
    return { untrusted = why }
  end
  local variables = {}
  local json = params.variables
  if type(json) == "table" then
    for key, value in pairs(json) do
      variables[key] = value
    end
  end
  -- The Lua frontmatter's values (functions and tables too), under the strings the host holds:
  -- the host fills `{{ name }}` from those alone (src/core/chat/splice.ts), and both must agree.
  for key, value in pairs(frontmatter.variables_for(bufnr) or {}) do
    if type(variables[key]) ~= "string" then
      variables[key] = value
    end
  end
  local path = type(params.file) == "table" and params.file.path or nil
  local name = path or vim.api.nvim_buf_get_name(bufnr)
  local base_dir = name ~= "" and vim.fn.fnamemodify(name, ":p:h") or vim.fn.getcwd()
  local texts = {}
  -- One environment for the whole prompt: `{% x = … %}` in one message is seen by the next.
  local render = { bufnr = bufnr, path = path, tools = type(params.tools) == "table" and params.tools or {} }
  local env = H.environment(variables, base_dir, { name ~= "" and vim.fn.fnamemodify(name, ":p") or nil }, render)
  local jobs = params.jobs or {}
  local chunk = "template"
  local index = 1
  while index <= #jobs do
    local job = jobs[index]
    if job.spliced then
      -- Consecutive expression-only jobs are compiled as one chunk (a long chat has hundreds).
      local group = {}
      while jobs[index] and jobs[index].spliced do
        group[#group + 1] = jobs[index]
        index = index + 1
      end
      local fn, err, map = H.compile_spliced(group, chunk, env)
      if not fn then
        return { error = H.describe(err, chunk, map, "") }
      end
      local ok, results = pcall(fn, tostr)
      if not ok then
        return render.untrusted and { untrusted = render.untrusted } or { error = H.describe(results, chunk, map, "") }
      end
      for offset, values in ipairs(results) do
        texts[index - #group + offset - 1] = values
      end
    else
      local fn, err, map, literal = H.compile(job.segments or {}, chunk, env, false)
      if not fn then
        return { error = H.describe(err, chunk, map, "") }
      end
      local ok, result = pcall(fn, literal, tostr)
      if not ok then
        return render.untrusted and { untrusted = render.untrusted } or { error = H.describe(result, chunk, map, "") }
      end
      texts[index] = result
      index = index + 1
    end
  end
  return { texts = texts }
end

return M
