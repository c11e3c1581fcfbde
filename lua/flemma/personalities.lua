--- flemma.personalities: system-prompt generators, used from a template as
--- `{{ include("urn:flemma:personality:<name>") }}`. Built in: `coding-assistant`.
---
--- A personality is `{ render = function(input) -> string, description? }`; `input` holds
--- `tools` (the tools sent with the request, sorted: `{name, snippet, guidelines}` as the tool
--- describes itself for this personality), `environment` (`cwd`, `file`, `filetype`,
--- `git_branch`, `date`, `time`) and `context_files` (`{path, content}` of the project's
--- instruction files).
local lazy = require("flemma.util.lazy")
local suggest = lazy.require("flemma.util.suggest")
local M = {}

local H = { registry = {}, frozen = {} }

--- The project's instruction files, in this order, looked for in the chat's directory.
local CONTEXT_FILES = {
  "AGENTS.md",
  "CLAUDE.md",
  ".claude/CLAUDE.md",
  ".cursorrules",
  ".github/copilot-instructions.md",
}

function M.register(name, personality)
  vim.validate({ name = { name, "string" }, personality = { personality, "table" } })
  if type(personality.render) ~= "function" then
    error("flemma.personalities.register: personality." .. name .. ".render must be a function", 2)
  end
  H.registry[name] = personality
end

function M.unregister(name)
  local had = H.registry[name] ~= nil
  H.registry[name] = nil
  return had
end

function M.get(name)
  return H.registry[name]
end

function M.names()
  local names = vim.tbl_keys(H.registry)
  table.sort(names)
  return names
end

--- Date and time, frozen per buffer: the system prompt stays byte-identical between turns, so
--- the provider's prompt cache keeps working.
function H.clock(bufnr)
  local frozen = H.frozen[bufnr]
  if frozen == nil then
    frozen = { date = os.date("%A, %B %d, %Y"), time = os.date("%I:%M %p") }
    H.frozen[bufnr] = frozen
  end
  return frozen
end

function M.forget(bufnr)
  H.frozen[bufnr] = nil
end

function H.git_branch(dir)
  local ok, out = pcall(vim.fn.systemlist, { "git", "-C", dir, "rev-parse", "--abbrev-ref", "HEAD" })
  if ok and vim.v.shell_error == 0 and type(out) == "table" and out[1] and out[1] ~= "" then
    return out[1]
  end
  return nil
end

function H.context_files(dir)
  local files, seen = {}, {}
  for _, relative in ipairs(CONTEXT_FILES) do
    local path = dir .. "/" .. relative
    if vim.fn.filereadable(path) == 1 then
      local content = table.concat(vim.fn.readfile(path), "\n")
      if not seen[content] then
        seen[content] = true
        files[#files + 1] = { path = relative, content = content }
      end
    end
  end
  return files
end

--- The input of a personality for buffer `bufnr`; `dir` is where the including file is; `path`:
--- the file of a chat the host runs in its file (`bufnr` is then the host's own, no buffer's).
function M.input(name, bufnr, dir, tools, path)
  local cwd = vim.fn.getcwd()
  local file = path or vim.api.nvim_buf_get_name(bufnr)
  local clock = H.clock(bufnr)
  local list = {}
  for _, tool in ipairs(tools or {}) do
    local part = type(tool.personalities) == "table" and tool.personalities[name] or nil
    list[#list + 1] = {
      name = tool.name,
      snippet = part and part.snippet or tool.snippet,
      guidelines = part and part.guidelines or {},
    }
  end
  return {
    tools = list,
    environment = {
      cwd = cwd,
      file = file ~= "" and vim.fn.fnamemodify(file, ":.") or nil,
      filetype = path and "chat" or vim.bo[bufnr].filetype,
      git_branch = H.git_branch(dir),
      date = clock.date,
      time = clock.time,
    },
    context_files = H.context_files(dir),
  }
end

--- Render personality `name` (called by templates' `include`); raises for an unknown one.
function M.render(name, bufnr, dir, tools, path)
  local personality = H.registry[name]
  if personality == nil then
    local guess = suggest.closest(name, M.names())
    error(
      string.format("unknown personality '%s'%s", name, guess and string.format(" (did you mean '%s'?)", guess) or ""),
      0
    )
  end
  return personality.render(M.input(name, bufnr, dir, tools, path))
end

--- The built-in `coding-assistant`.
M.register("coding-assistant", {
  description = "A coding assistant that works in the user's project with the tools it is given",
  render = function(input)
    local out = {
      "You are a coding assistant working in the user's project from Neovim. Be direct and precise; "
        .. "make the changes you are asked for, and say what you changed.",
    }
    if #input.tools > 0 then
      out[#out + 1] = ""
      out[#out + 1] = "## Available tools"
      for _, tool in ipairs(input.tools) do
        out[#out + 1] = string.format("- %s: %s", tool.name, tool.snippet or "")
      end
    end
    local guidelines = {
      "Look before you change: read the relevant code first.",
      "Keep changes small and focused; do not reformat code you did not change.",
    }
    for _, tool in ipairs(input.tools) do
      for _, line in ipairs(tool.guidelines or {}) do
        guidelines[#guidelines + 1] = line
      end
    end
    out[#out + 1] = ""
    out[#out + 1] = "## Guidelines"
    for _, line in ipairs(guidelines) do
      out[#out + 1] = "- " .. line
    end
    local env = input.environment
    out[#out + 1] = ""
    out[#out + 1] = "## Environment"
    out[#out + 1] = "- Working directory: " .. env.cwd
    if env.file then
      out[#out + 1] =
        string.format("- Current file: %s (%s)", env.file, env.filetype ~= "" and env.filetype or "no filetype")
    end
    if env.git_branch then
      out[#out + 1] = "- Git branch: " .. env.git_branch
    end
    out[#out + 1] = "- Date: " .. env.date
    out[#out + 1] = "- Time: " .. env.time
    if #input.context_files > 0 then
      out[#out + 1] = ""
      out[#out + 1] = "## Project Context"
      for _, item in ipairs(input.context_files) do
        out[#out + 1] = ""
        out[#out + 1] = "### " .. item.path
        out[#out + 1] = item.content
      end
    end
    return table.concat(out, "\n")
  end,
})

return M
