--- flemma.tools.context: the ExecutionContext a Lua tool receives (the fields and namespaces
--- of docs/tools.md, "The ExecutionContext": `path`, `sandbox`, `truncate`, `get_config`), and the coroutines its `execute` runs
--- in, so that what the context asks the host reads like a plain function call inside a tool.
local paths = require("flemma.util.path")
local lazy = require("flemma.util.lazy")
local config = lazy.require("flemma.config")
local host = lazy.require("flemma.host")
local M = {}

local H = {
  runs = {}, ---@type table<thread, function>  each running `execute`'s coroutine: how to resume it
}

--- A tool's path with its leading `~` expanded (the model's text reads no variables); an unknown
--- `~user` is the tool's error.
local function home_expanded(p)
  local expanded, err = paths.expand_home(p)
  if expanded == nil then
    error(err, 0)
  end
  return expanded
end

--- `path` is `root` or lies below it (`ctx.path.is_inside`; paths normalized, no links followed).
local function under(path, root)
  if path == root then
    return true
  end
  local prefix = root:sub(-1) == "/" and root or (root .. "/")
  return path:sub(1, #prefix) == prefix
end

-- ---------------------------------------------------------------------------------------------
-- What the context asks the host: truncation (`ctx.truncate`, src/core/tools/truncate.ts through
-- `tools:truncate` and `tools:format-size`) and the write policy
-- (`ctx.sandbox.is_path_writable`, src/core/tools/sandbox/paths.ts through `tools:writable`). A
-- tool's `execute` runs in a coroutine of its own, so that inside it these functions answer like
-- plain functions: the tool waits for the host, Neovim does not. Elsewhere (a callback of
-- `vim.system`, a timer) they take a callback as their last argument.

--- Ask the host for a Lua tool: `callback(result, err)` when given; else, inside `execute`, the
--- answer (the tool's coroutine waits for it); else an error that says to pass a callback.
function H.ask(what, method, params, callback)
  if callback ~= nil then
    host.call(method, params, function(err, result)
      if result == vim.NIL then
        result = nil
      end
      callback(result, err)
    end)
    return nil
  end
  local co = coroutine.running()
  local resume = co and H.runs[co]
  if not resume then
    error(
      string.format(
        "ctx.%s: outside a tool's execute, pass a callback: %s(…, function(result, err) … end)",
        what,
        what:match("[^.]+$")
      ),
      3
    )
  end
  local waiting, answered, err, result = false, false, nil, nil
  host.call(method, params, function(e, r)
    if waiting then
      resume(e, r)
    else
      answered, err, result = true, e, r
    end
  end)
  if not answered then
    waiting = true
    err, result = coroutine.yield()
  end
  if err then
    error(string.format("ctx.%s: %s", what, tostring(err)), 3)
  end
  return result
end

--- Text and limits as `tools:truncate` takes them (a non-string becomes its `tostring`).
local function truncate_params(from, text, opts)
  text = type(text) == "string" and text or tostring(text or "")
  opts = type(opts) == "table" and opts or {}
  return { text = text, from = from, max_lines = opts.max_lines, max_bytes = opts.max_bytes }
end

--- The `ctx.truncate` namespace; `limits` are the host's (`MAX_LINES`, `MAX_BYTES`, the markers).
function H.truncate_namespace(limits)
  limits = type(limits) == "table" and limits or {}
  return {
    MAX_LINES = limits.max_lines,
    MAX_BYTES = limits.max_bytes,
    HEAD_CUT_MARKER = limits.head_cut_marker,
    TAIL_CUT_MARKER = limits.tail_cut_marker,
    --- Keep the first lines (file reads, listings, search results).
    truncate_head = function(text, opts, callback)
      return H.ask("truncate.truncate_head", "tools:truncate", truncate_params("head", text, opts), callback)
    end,
    --- Keep the last lines (command output, where the end matters).
    truncate_tail = function(text, opts, callback)
      return H.ask("truncate.truncate_tail", "tools:truncate", truncate_params("tail", text, opts), callback)
    end,
    --- `12345` → `"12.1KB"`.
    format_size = function(bytes, callback)
      return H.ask("truncate.format_size", "tools:format-size", { bytes = bytes }, callback)
    end,
  }
end

--- The ExecutionContext a Lua tool receives (docs/tools.md, "The ExecutionContext").
function M.new(facts, tool_name)
  local bufnr = facts.bufnr
  local filename = vim.api.nvim_buf_is_valid(bufnr) and vim.api.nvim_buf_get_name(bufnr) or ""
  local ctx = {
    bufnr = bufnr,
    cwd = facts.cwd,
    timeout = facts.timeout,
    tool_id = facts.tool_id,
    __filename = filename ~= "" and filename or nil,
    __dirname = filename ~= "" and vim.fs.dirname(filename) or nil,
  }
  local base = ctx.__dirname or ctx.cwd
  local sandbox = facts.sandbox or {}
  local on_demand = {
    path = function()
      return {
        resolve = function(p)
          p = home_expanded(p)
          if p:sub(1, 1) == "/" then
            return vim.fs.normalize(p)
          end
          return vim.fs.normalize(vim.fs.joinpath(base, p))
        end,
        --- Whether `p` (resolved like `resolve`) lies inside `root` (compared by path component).
        is_inside = function(p, root)
          local function abs(x)
            x = home_expanded(x)
            return vim.fs.normalize(x:sub(1, 1) == "/" and x or vim.fs.joinpath(base, x))
          end
          return under(abs(p), abs(root or ctx.cwd))
        end,
      }
    end,
    sandbox = function()
      return {
        --- Whether writing `p` (relative to `__dirname`, else `cwd`) stays in the writable
        --- paths, symbolic links followed; always true when the sandbox is off.
        is_path_writable = function(p, callback)
          if not sandbox.enabled then
            if callback then
              callback(true)
              return nil
            end
            return true
          end
          local params = { path = p, base = base, rw_paths = sandbox.rw_paths or {} }
          return H.ask("sandbox.is_path_writable", "tools:writable", params, callback)
        end,
        wrap_command = function(argv)
          if not sandbox.enabled then
            return argv
          end
          if sandbox.wrap_error and sandbox.wrap_error ~= vim.NIL then
            return nil, sandbox.wrap_error
          end
          if not sandbox.wrap_prefix or sandbox.wrap_prefix == vim.NIL then
            return argv
          end
          local out = vim.list_extend({}, sandbox.wrap_prefix)
          return vim.list_extend(out, argv)
        end,
      }
    end,
    truncate = function()
      return H.truncate_namespace(facts.truncate)
    end,
  }
  ctx.get_config = function()
    local ok, cfg = pcall(function()
      return config.get().tools[tool_name]
    end)
    if not ok or type(cfg) ~= "table" then
      return nil
    end
    return vim.deepcopy(cfg)
  end
  -- The namespaces are built on first use.
  return setmetatable(ctx, {
    __index = function(t, key)
      local make = on_demand[key]
      if make then
        local value = make()
        rawset(t, key, value)
        return value
      end
    end,
  })
end

--- Run `fn(...)` in a coroutine of its own, through which the context can wait for the host
--- (`H.ask`); `done(ok, ret)` once it has returned or raised.
function M.run(fn, done, ...)
  local co = coroutine.create(fn)
  local function resume(...)
    local ok, ret = coroutine.resume(co, ...)
    if coroutine.status(co) == "dead" then
      H.runs[co] = nil
      done(ok, ret)
    end
  end
  H.runs[co] = resume
  resume(...)
end

return M
