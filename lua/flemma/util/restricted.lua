--- flemma.util.restricted: the restricted environment user Lua runs in — a chat's Lua frontmatter
--- and its templates (`{{ … }}`, `{% … %}`, included files). Plain Lua helpers, copies of
--- `string`, `table` and `math` (code that assigns `string.upper` changes its own copy, not
--- Neovim's), a few `os` functions that read the clock and the environment, and some pure `vim`
--- helpers; no files, processes or editor state. See docs/frontmatter.md and docs/chat-format.md
--- (docs/chat-format.md §9, templates).
local M = {}

--- The `vim` helpers every restricted environment has.
local VIM_COMMON = { "inspect", "split", "trim", "tbl_keys" }

--- What the frontmatter has beyond them (templates do not: they only format values).
M.FRONTMATTER_VIM = {
  "deepcopy",
  "startswith",
  "endswith",
  "tbl_contains",
  "tbl_extend",
  "tbl_deep_extend",
  "tbl_values",
  "tbl_map",
  "tbl_filter",
  "list_extend",
}

--- Fresh globals for one run; the caller may add its own (`include`, `flemma`) to the table.
---@param opts? { vim?: string[] } more `vim` helpers, by name
---@return table
function M.globals(opts)
  local vim_helpers = { json = { encode = vim.json.encode, decode = vim.json.decode } }
  for _, list in ipairs({ VIM_COMMON, opts and opts.vim or {} }) do
    for _, name in ipairs(list) do
      vim_helpers[name] = vim[name]
    end
  end
  return {
    assert = assert,
    error = error,
    ipairs = ipairs,
    next = next,
    pairs = pairs,
    pcall = pcall,
    select = select,
    tonumber = tonumber,
    tostring = tostring,
    type = type,
    unpack = unpack,
    string = vim.deepcopy(string),
    table = vim.deepcopy(table),
    math = vim.deepcopy(math),
    os = { date = os.date, time = os.time, clock = os.clock, getenv = os.getenv },
    vim = vim_helpers,
  }
end

--- The environment a chunk runs in: a name is looked up in `variables`, then in `globals`; an
--- assignment goes to `variables`. With `strict`, reading a name neither holds raises
--- `undefined variable '<name>'` (templates); otherwise it is nil (frontmatter).
---@param variables table
---@param globals table
---@param opts? { strict?: boolean }
---@return table
function M.environment(variables, globals, opts)
  local strict = opts ~= nil and opts.strict == true
  return setmetatable({}, {
    __index = function(_, key)
      local value = variables[key]
      if value ~= nil then
        return value
      end
      value = globals[key]
      if value ~= nil or not strict then
        return value
      end
      error(string.format("undefined variable '%s'", tostring(key)), 2)
    end,
    __newindex = function(_, key, value)
      variables[key] = value
    end,
  })
end

return M
