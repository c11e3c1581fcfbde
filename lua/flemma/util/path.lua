--- Path expansion on the Lua side, by the same rules as the host's (src/core/util/expand-path.ts;
--- docs/configuration.md, "Paths"):
--- - `~` is the home directory and `~/x` lies in it; `~user`, `~user/x` that user's home (the
---   current user's is the home directory; another's is looked up in /etc/passwd). An unknown
---   user is an error. A `~` anywhere else is literal.
--- - `$VAR`, `${VAR}`, `${VAR:-default}` anywhere (configuration paths only): an unset or empty
---   variable (with no default, or an empty one) drops the whole path. Variables first, then a
---   leading `~` of the result.
--- - Nothing else: no `%`, `#`, `<cfile>` or wildcards (as `vim.fn.expand` would).
local M = {}

local function passwd_home(user)
  local file = io.open("/etc/passwd", "r")
  if not file then
    return nil
  end
  local found
  for line in file:lines() do
    local name, dir = line:match("^([^:]*):[^:]*:[^:]*:[^:]*:[^:]*:([^:]*)")
    if name == user and dir ~= "" then
      found = dir
      break
    end
  end
  file:close()
  return found
end

local function home_of(user)
  local me = vim.uv.os_get_passwd()
  if user == "" or (me and me.username == user) then
    return vim.uv.os_homedir()
  end
  return passwd_home(user)
end

--- Whether `path` starts at a home directory (`~`, `~/…`, `~user`, `~user/…`).
---@param path string
---@return boolean
function M.names_home(path)
  local user = path:match("^~([%w._-]*)")
  if user == nil then
    return false
  end
  local rest = path:sub(#user + 2)
  return rest == "" or rest:sub(1, 1) == "/"
end

--- `path` with a leading `~` or `~user` expanded; nil and the reason for an unknown user.
---@param path string
---@return string|nil, string|nil
function M.expand_home(path)
  if not M.names_home(path) then
    return path
  end
  local user = path:match("^~([%w._-]*)")
  local dir = home_of(user)
  if dir == nil then
    return nil, string.format("No user '%s' for the path '%s'", user, path)
  end
  local rest = path:sub(#user + 2)
  if rest == "" then
    return dir
  end
  return (dir:sub(-1) == "/" and dir .. rest:sub(2)) or dir .. rest
end

--- `$VAR`, `${VAR}`, `${VAR:-default}` replaced from `env` (default: Neovim's environment); nil
--- and the reason when one is unset or empty.
---@param path string
---@param env? table<string, string>
---@return string|nil, string|nil
function M.expand_variables(path, env)
  local missing
  local function value(name, fallback)
    local v
    if env then
      v = env[name]
    else
      v = vim.env[name]
    end
    if v ~= nil and v ~= "" then
      return v
    end
    if fallback ~= nil and fallback ~= "" then
      return fallback
    end
    missing = missing or name
    return ""
  end
  -- One pass, as the host's: a default's own `$` is not read again.
  local out, i = {}, 1
  while i <= #path do
    local dollar = path:find("$", i, true)
    if dollar == nil then
      out[#out + 1] = path:sub(i)
      break
    end
    out[#out + 1] = path:sub(i, dollar - 1)
    local _, stop, name, fallback = path:find("^{([%a_][%w_]*):%-([^}]*)}", dollar + 1)
    if stop == nil then
      _, stop, name = path:find("^{([%a_][%w_]*)}", dollar + 1)
    end
    if stop == nil then
      _, stop, name = path:find("^([%a_][%w_]*)", dollar + 1)
    end
    if stop == nil then
      out[#out + 1] = "$"
      i = dollar + 1
    else
      out[#out + 1] = value(name, fallback)
      i = stop + 1
    end
  end
  if missing then
    return nil, string.format("the variable %s in '%s' is not set", missing, path)
  end
  return table.concat(out)
end

--- A path from the configuration: variables, then a leading `~`; nil and the reason when it
--- cannot be expanded.
---@param path string
---@param env? table<string, string>
---@return string|nil, string|nil
function M.expand(path, env)
  local expanded, err = M.expand_variables(path, env)
  if expanded == nil then
    return nil, err
  end
  return M.expand_home(expanded)
end

return M
