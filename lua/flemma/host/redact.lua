--- flemma.redact: what never reaches a log line, on the Lua side. The rules are the host's own
--- (`src/core/secrets/redact-rules.json`, read here at first use), so both sides redact the same
--- text the same way; see src/core/secrets/redact.ts for what they mean. Known secret values come
--- from Neovim's environment (variables whose names look secret) and from the host, which sends
--- every credential it resolved (`log.secrets`).
local M = {}

local H = {
  rules = nil,
  --- Known values, longest first.
  known = {},
  --- The host's values and the environment's, as sets.
  from_host = {},
  from_env = nil,
}

local function root()
  local source = debug.getinfo(1, "S").source:sub(2)
  return vim.fn.fnamemodify(source, ":p:h:h:h:h")
end

--- A pattern item matching `text` literally.
local function escape(text)
  return (text:gsub("%W", "%%%0"))
end

--- A class of the rules file (`{"A-Z", "_", "-"}`) as the inside of a Lua set.
local function class_body(items)
  local out = {}
  for _, item in ipairs(items) do
    if #item == 3 and item:sub(2, 2) == "-" then
      out[#out + 1] = item
    else
      out[#out + 1] = escape(item)
    end
  end
  return table.concat(out)
end

--- `word` matched in any case (`[Bb][Ee]…`).
local function any_case(word)
  return (word:gsub("%a", function(c)
    return "[" .. c:upper() .. c:lower() .. "]"
  end))
end

local function load_rules()
  local path = vim.fs.joinpath(root(), "src", "core", "secrets", "redact-rules.json")
  local file = io.open(path, "r")
  if not file then
    return nil
  end
  local text = file:read("*a")
  file:close()
  local ok, raw = pcall(vim.json.decode, text)
  if not ok or type(raw) ~= "table" then
    return nil
  end
  local rules = {
    marker = raw.marker,
    min_known = raw.min_known_length,
    tokens = {},
    anywhere = {},
    schemes = {},
    exact = {},
    suffixes = raw.names.suffixes,
    contains = raw.names.contains,
  }
  for _, token in ipairs(raw.tokens) do
    rules.tokens[#rules.tokens + 1] = {
      pattern = "%f[A-Za-z0-9]" .. escape(token.prefix) .. "[" .. class_body(raw.classes[token.class]) .. "]+",
      length = #token.prefix + token.min,
    }
  end
  local scheme_class = "[" .. class_body(raw.classes.scheme) .. "]+"
  for _, word in ipairs(raw.schemes_anywhere) do
    rules.anywhere[#rules.anywhere + 1] = "%f[A-Za-z0-9](" .. any_case(word) .. "[ \t]+)(" .. scheme_class .. ")"
  end
  rules.scheme_min = raw.scheme_min
  for _, word in ipairs(raw.schemes) do
    rules.schemes[word] = true
  end
  for _, name in ipairs(raw.names.exact) do
    rules.exact[name] = true
  end
  return rules
end

local function rules()
  if H.rules == nil then
    local ok, loaded = pcall(load_rules)
    H.rules = ok and loaded or false
  end
  return H.rules or nil
end

--- Whether a key, header or variable name looks like it holds a secret.
function M.is_secret_name(name)
  local r = rules()
  if not r then
    return false
  end
  local lower = name:lower()
  if r.exact[lower] then
    return true
  end
  for _, suffix in ipairs(r.suffixes) do
    if #lower >= #suffix and lower:sub(-#suffix) == suffix then
      return true
    end
  end
  for _, part in ipairs(r.contains) do
    if lower:find(part, 1, true) then
      return true
    end
  end
  return false
end

local function add_forms(set, value, min)
  if type(value) ~= "string" then
    return
  end
  local forms = { value, vim.trim(value) }
  local ok, encoded = pcall(vim.json.encode, value)
  if ok then
    forms[#forms + 1] = encoded:sub(2, -2)
  end
  for _, form in ipairs(forms) do
    if #form >= min then
      set[form] = true
    end
  end
end

local function rebuild()
  local all = {}
  for value in pairs(H.from_env or {}) do
    all[value] = true
  end
  for value in pairs(H.from_host) do
    all[value] = true
  end
  local list = vim.tbl_keys(all)
  table.sort(list, function(a, b)
    return #a > #b
  end)
  H.known = list
end

local function environment()
  if H.from_env == nil then
    local r = rules()
    H.from_env = {}
    if r then
      local ok, env = pcall(vim.fn.environ)
      for name, value in pairs(ok and env or {}) do
        if M.is_secret_name(name) then
          add_forms(H.from_env, value, r.min_known)
        end
      end
    end
    rebuild()
  end
end

--- The host's known values (`log.secrets`): they replace the previous list from the host.
function M.set_known(values)
  local r = rules()
  H.from_host = {}
  for _, value in ipairs(type(values) == "table" and values or {}) do
    add_forms(H.from_host, value, r and r.min_known or 8)
  end
  environment()
  rebuild()
end

--- `text` with every value after a secret-looking name replaced (see redact.ts).
local function named_values(text, r)
  local out = {}
  local copied = 1
  local init = 1
  while true do
    local s, e, name = text:find("%f[A-Za-z0-9_%.%-]([A-Za-z0-9_%.%-]+)\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?", init)
    if not s then
      break
    end
    init = e + 1
    if M.is_secret_name(name) then
      local at = e + 1
      local word, gap = text:match("^(%a+)([ \t]+)", at)
      if word and r.schemes[word:lower()] then
        at = at + #word + #gap
      end
      local value = text:match("^[^%s\"'`\\,;&|%(%)%[%]{}<>=]+", at)
      if value then
        out[#out + 1] = text:sub(copied, at - 1)
        out[#out + 1] = r.marker
        copied = at + #value
        init = copied
      end
    end
  end
  if copied == 1 then
    return text
  end
  out[#out + 1] = text:sub(copied)
  return table.concat(out)
end

--- `text` as it may be logged.
function M.text(text)
  local r = rules()
  if not r or type(text) ~= "string" then
    return text
  end
  environment()
  for _, secret in ipairs(H.known) do
    if text:find(secret, 1, true) then
      local parts = vim.split(text, secret, { plain = true })
      text = table.concat(parts, r.marker)
    end
  end
  text = named_values(text, r)
  for _, pattern in ipairs(r.anywhere) do
    text = text:gsub(pattern, function(word, value)
      if #value >= r.scheme_min then
        return word .. r.marker
      end
    end)
  end
  for _, token in ipairs(r.tokens) do
    text = text:gsub(token.pattern, function(found)
      if #found >= token.length then
        return r.marker
      end
    end)
  end
  return text
end

return M
