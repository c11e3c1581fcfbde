--- What `doc/flemma.txt` must document, and what it is missing. Loaded with `dofile()` by
--- test/nvim/help.test.ts inside the Neovim under test. The rule for option paths is written in
--- docs/testing.md ("The help file").
local M = {}

local H = {}

--- Every help tag of a vimdoc file (`*tag*`).
---@param lines string[]
---@return table<string, integer[]>  tag → line numbers
function M.tags(lines)
  local found = {}
  -- As `:helptags` reads them: in every line, `*` after a blank or the line start, no blank or
  -- `|` inside, and a blank or the line end after the closing `*`.
  for lnum, line in ipairs(lines) do
    for tag in (" " .. line .. " "):gmatch("%s%*([^%s*|]+)%*%f[%s]") do
      found[tag] = found[tag] or {}
      table.insert(found[tag], lnum)
    end
  end
  return found
end

--- Every `|link|` outside examples, with its line number.
---@param lines string[]
---@return { link: string, lnum: integer }[]
function M.links(lines)
  local found = {}
  H.each_text_line(lines, function(line, lnum)
    -- Code spans (`a|b`) are not links; drop them first.
    local text = line:gsub("`[^`]*`", "")
    for link in text:gmatch("|([^%s|]+)|") do
      found[#found + 1] = { link = link, lnum = lnum }
    end
  end)
  return found
end

--- Lines outside examples that are wider than `width` display cells.
---@param lines string[]
---@param width integer
---@return string[]  "line N (W): text"
function M.long_lines(lines, width)
  local found = {}
  H.each_text_line(lines, function(line, lnum)
    local cells = vim.fn.strdisplaywidth(line)
    if cells > width then
      found[#found + 1] = string.format("line %d (%d): %s", lnum, cells, line)
    end
  end)
  return found
end

--- Where Neovim's vimdoc parser (tree-sitter) fails on a help buffer: ERROR and MISSING nodes,
--- as "line N: text" (an unclosed code span or a lone `|` shows up here). Nil when the parser
--- is not available.
---@param bufnr integer
---@return string[]|nil
function M.parse_errors(bufnr)
  local ok, parser = pcall(vim.treesitter.get_parser, bufnr, "vimdoc")
  if not ok or not parser then
    return nil
  end
  local found = {}
  local function walk(node)
    if node:missing() or node:type() == "ERROR" then
      local row = node:range()
      local text = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
      found[#found + 1] = string.format("line %d: %s", row + 1, text)
    end
    for child in node:iter_children() do
      if child:has_error() then
        walk(child)
      end
    end
  end
  walk(parser:parse()[1]:root())
  return found
end

--- Calls `fn(line, lnum)` for each line that is not inside an example block (`>` at the end of
--- a line opens one, `<` at the start of a line or a line that is not indented closes it).
function H.each_text_line(lines, fn)
  local in_example = false
  for lnum, line in ipairs(lines) do
    if in_example then
      if line:match("^<") then
        in_example = false
        fn(line:sub(2), lnum)
      elseif line ~= "" and not line:match("^%s") then
        in_example = false
        fn(line, lnum)
      end
    else
      fn(line, lnum)
    end
    if not in_example and (line:match("%s>%a*$") or line:match("^>%a*$")) then
      in_example = true
    end
  end
end

--- The option paths of the `setup()` schema that need documentation, sorted:
--- - an object's fields are options (`a.b`), walked down to their leaves;
--- - a union with a table form is an option itself, and the fields of that form are too
---   (`tools.autopilot` and `tools.autopilot.max_turns`);
--- - a table of user-chosen names (`mcp.servers`) is an option; the fields of its values are
---   options under `{name}` (`mcp.servers.{name}.command`);
--- - a list is one option: its items are described with it (`sandbox.roots`);
--- - an object's list part is the object's own path (`tools`), its free-form extra keys are
---   `{name}` (`tools.{name}`, `secrets.{name}`);
--- - fields every `parameters.<provider>` table has are documented once as
---   `parameters.{provider}.<field>`; the other fields of a provider table by their own path;
--- - aliases (`thinking`, `tools.approve`) need documentation too.
---@param root flemma.schema.Node|nil  default: the schema of `setup()`
---@return string[]
function M.option_paths(root)
  root = root or require("flemma.config.schema").options
  local seen = {}
  local function add(path)
    seen[path] = true
  end
  local walk

  local function object_fields(node, path)
    for name, field in pairs(node.fields) do
      walk(field, path == "" and name or path .. "." .. name)
    end
  end

  local function table_form(node)
    if node.kind == "object" then
      return node
    elseif node.kind == "union" then
      for _, member in ipairs(node.members) do
        if member.kind == "object" then
          return member
        end
      end
    end
    return nil
  end

  walk = function(node, path)
    local kind = node.kind
    if kind == "object" then
      if path == "parameters" then
        H.parameters(node, walk, add)
      else
        object_fields(node, path)
      end
      if node.list and path ~= "" then
        add(path)
      end
      if node.extra then
        add(path == "" and "{name}" or path .. ".{name}")
      end
      for alias in pairs(node.aliases or {}) do
        add(path == "" and alias or path .. "." .. alias)
      end
    elseif kind == "union" then
      add(path)
      local form = table_form(node)
      if form then
        object_fields(form, path)
      end
    elseif kind == "map" then
      add(path)
      local form = table_form(node.value)
      if form then
        object_fields(form, path .. ".{name}")
      end
    else
      add(path)
    end
  end

  walk(root, "")
  local paths = vim.tbl_keys(seen)
  table.sort(paths)
  return paths
end

--- `parameters`: general fields as they are; provider tables (its object fields) with their
--- common fields under `{provider}`.
function H.parameters(node, walk, add)
  local providers = {}
  for name, field in pairs(node.fields) do
    if field.kind == "object" then
      providers[name] = field
    else
      walk(field, "parameters." .. name)
    end
  end
  local common = nil
  for _, provider in pairs(providers) do
    if common == nil then
      common = vim.deepcopy(vim.tbl_keys(provider.fields))
    else
      common = vim.tbl_filter(function(name)
        return provider.fields[name] ~= nil
      end, common)
    end
  end
  local is_common = {}
  for _, name in ipairs(common or {}) do
    is_common[name] = true
  end
  for provider_name, provider in pairs(providers) do
    for name, field in pairs(provider.fields) do
      if is_common[name] then
        walk(field, "parameters.{provider}." .. name)
      else
        walk(field, "parameters." .. provider_name .. "." .. name)
      end
    end
  end
  if next(providers) then
    add("parameters.{provider}")
  end
end

--- What the help file lacks: registered commands without a `*:Flemma-<name>*` tag, option paths
--- without a `*flemma-opt-<path>*` tag, duplicate tags, and links that resolve to no help tag.
---@param file string  path of the vimdoc file
---@return { commands: string[], options: string[], duplicates: string[], links: string[] }
function M.check(file)
  local lines = vim.fn.readfile(file)
  local tags = M.tags(lines)
  local result = { commands = {}, options = {}, duplicates = {}, links = {} }
  for _, name in ipairs(require("flemma.commands").names()) do
    if not tags[":Flemma-" .. name] then
      table.insert(result.commands, name)
    end
  end
  for _, path in ipairs(M.option_paths()) do
    if not tags["flemma-opt-" .. path] then
      table.insert(result.options, path)
    end
  end
  for tag, where in pairs(tags) do
    if #where > 1 then
      table.insert(result.duplicates, string.format("%s (lines %s)", tag, table.concat(where, ", ")))
    end
  end
  table.sort(result.duplicates)
  -- Every tag Neovim knows: its own help, this file's and any other on the runtimepath.
  local known = vim.deepcopy(tags)
  for _, tagfile in ipairs(vim.api.nvim_get_runtime_file("doc/tags", true)) do
    for _, entry in ipairs(vim.fn.readfile(tagfile)) do
      known[entry:match("^[^\t]+")] = true
    end
  end
  for _, item in ipairs(M.links(lines)) do
    if not known[item.link] then
      table.insert(result.links, string.format("|%s| (line %d)", item.link, item.lnum))
    end
  end
  return result
end

--- Every option path of the schema (`option_paths`) with its trust class
--- (`flemma.frontmatter.option_class`): `{ { path, class }, … }`; a `{provider}` or `{name}` in a
--- path stands for any name.
function M.option_classes()
  local out = {}
  for _, path in ipairs(M.option_paths()) do
    local concrete = path:gsub("{provider}", "anthropic"):gsub("{name}", "zz_any_name")
    local class, err = require("flemma.frontmatter").option_class(vim.split(concrete, ".", { plain = true }))
    out[#out + 1] = { path, class or ("error: " .. tostring(err)) }
  end
  return out
end

return M
