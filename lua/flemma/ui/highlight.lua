--- flemma.ui.highlight: the `Flemma*` highlight groups and what each line of a chat buffer is
--- drawn with. Drawing happens in a decoration provider (flemma.ui), for the rows on screen
--- only, with ephemeral extmarks: the cost follows the window's height, not the chat's length,
--- and nothing is stored in the buffer.
local style = require("flemma.ui.style")
local scan = require("flemma.ui.scan")

local M = {}

M.ns = vim.api.nvim_create_namespace("flemma.ui.highlight")

local PRIORITY = 110 -- above tree-sitter (100) and syntax

--- group name → { option key under `highlights`, fallback link }
local GROUPS = {
  FlemmaSystem = { "system", "Special" },
  FlemmaUser = { "user", "Normal" },
  FlemmaAssistant = { "assistant", "Normal" },
  FlemmaLuaExpression = { "lua_expression", "PreProc" },
  FlemmaLuaCodeBlock = { "lua_code_block", "PreProc" },
  FlemmaLuaDelimiter = { "lua_delimiter", "FlemmaLuaExpression" },
  FlemmaUserFileReference = { "user_file_reference", "Include" },
  FlemmaThinkingTag = { "thinking_tag", "Comment" },
  FlemmaThinkingBlock = { "thinking_block", "Comment" },
  FlemmaToolUseTitle = { "tool_use_title", "Function" },
  FlemmaToolIcon = { "tool_icon", "FlemmaToolUseTitle" },
  FlemmaToolName = { "tool_name", "Function" },
  FlemmaToolResultTitle = { "tool_result_title", "Function" },
  FlemmaToolResultError = { "tool_result_error", "DiagnosticError" },
  FlemmaToolResultDenied = { "tool_result_denied", "DiagnosticError" },
  FlemmaToolResultAborted = { "tool_result_aborted", "DiagnosticError" },
  FlemmaToolResultPending = { "tool_result_pending", "DiagnosticInfo" },
  FlemmaToolResultApproved = { "tool_result_approved", "DiagnosticOk" },
  FlemmaToolResultRejected = { "tool_result_rejected", "DiagnosticWarn" },
  FlemmaToolDetail = { "tool_detail", "Comment" },
  FlemmaFoldPreview = { "fold_preview", "Comment" },
  FlemmaFoldMeta = { "fold_meta", "Comment" },
}

--- Groups with no option of their own: name → fallback links (first defined wins).
local FIXED = {
  FlemmaFrontmatterDelimiter = "Comment",
  FlemmaAborted = "DiagnosticWarn",
  FlemmaMarkdownHeading = "@markup.heading,Title",
  FlemmaMarkdownStrong = "@markup.strong,Bold",
  FlemmaMarkdownItalic = "@markup.italic,Italic",
  FlemmaMarkdownCode = "@markup.raw,String",
  FlemmaMarkdownCodeBlock = "@markup.raw.block,@markup.raw,String",
  FlemmaMarkdownFence = "@markup.raw.delimiter,@punctuation.delimiter,Comment",
  FlemmaMarkdownLink = "@markup.link.url,Underlined",
  FlemmaMarkdownList = "@markup.list,Special",
  FlemmaMarkdownQuote = "@markup.quote,Comment",
  FlemmaSlashCommand = "@keyword.directive,PreProc",
  FlemmaSlashArgs = "@variable.parameter,Identifier",
}

local ROLE_GROUPS = { System = "FlemmaSystem", You = "FlemmaUser", Assistant = "FlemmaAssistant" }
local ROLE_MARKERS = { System = "FlemmaRoleSystem", You = "FlemmaRoleUser", Assistant = "FlemmaRoleAssistant" }
local LINE_GROUPS = {
  System = "FlemmaLineSystem",
  You = "FlemmaLineUser",
  Assistant = "FlemmaLineAssistant",
}
local STATUS_GROUPS = {
  pending = "FlemmaToolResultPending",
  approved = "FlemmaToolResultApproved",
  denied = "FlemmaToolResultDenied",
  rejected = "FlemmaToolResultRejected",
  aborted = "FlemmaToolResultAborted",
  error = "FlemmaToolResultError",
}

local H = {
  cfg = {}, -- the `highlights`, `line_highlights` and `ruler` sections
}

local function set(name, attrs)
  if not pcall(vim.api.nvim_set_hl, 0, name, attrs) then
    vim.api.nvim_set_hl(0, name, { link = "Normal" })
  end
end

--- Define every group from the configuration (again after a colorscheme change).
function M.define()
  local highlights = H.cfg.highlights or {}
  local defaults = highlights.defaults
  for name, spec in pairs(FIXED) do
    set(name, style.resolve(spec, defaults, "Normal"))
  end
  -- Groups others link to come first.
  local order = vim.tbl_keys(GROUPS)
  table.sort(order, function(a, b)
    local la, lb = GROUPS[a][2]:match("^Flemma") ~= nil, GROUPS[b][2]:match("^Flemma") ~= nil
    if la ~= lb then
      return not la
    end
    return a < b
  end)
  for _, name in ipairs(order) do
    local key, fallback = GROUPS[name][1], GROUPS[name][2]
    local value = highlights[key]
    set(name, style.resolve(value == nil and fallback or value, defaults, fallback))
  end
  -- Role markers: the role's colours plus `role_style`.
  local role_style = style.resolve(highlights.role_style or "bold", defaults, "Normal")
  role_style = style.flatten(role_style)
  for role, marker in pairs(ROLE_MARKERS) do
    local base = style.flatten({ link = ROLE_GROUPS[role] })
    set(marker, vim.tbl_extend("force", vim.deepcopy(base), role_style))
  end
  -- Line backgrounds: only the background of each style is used, so text colours stay.
  local lines = H.cfg.line_highlights or {}
  local line_specs = {
    FlemmaLineFrontmatter = lines.frontmatter,
    FlemmaLineSystem = lines.system,
    FlemmaLineUser = lines.user,
    FlemmaLineAssistant = lines.assistant,
  }
  for name, value in pairs(line_specs) do
    local attrs = style.flatten(style.resolve(value or "Normal", defaults, "Normal"))
    set(name, { bg = attrs.bg })
  end
  local ruler = H.cfg.ruler or {}
  set("FlemmaRuler", style.resolve(ruler.hl or "Comment", defaults, "Comment"))
  local turns = H.cfg.turns or {}
  set("FlemmaTurn", style.resolve(turns.hl == "FlemmaTurn" and "Comment" or turns.hl or "Comment", defaults, "Comment"))
end

--- Take the configuration and define the groups.
function M.setup(cfg)
  H.cfg = {
    highlights = cfg.highlights or {},
    line_highlights = cfg.line_highlights or {},
    ruler = cfg.ruler or {},
    turns = cfg.turns or {},
  }
  M.define()
end

local function mark(buf, row, col, end_col, group)
  vim.api.nvim_buf_set_extmark(buf, M.ns, row, col, {
    end_row = row,
    end_col = end_col,
    hl_group = group,
    ephemeral = true,
    priority = PRIORITY,
  })
end

--- A background over the whole screen line. (`line_hl_group` would be the natural choice, but
--- Neovim does not draw it for ephemeral extmarks.)
local function line_background(buf, row, group)
  vim.api.nvim_buf_set_extmark(buf, M.ns, row, 0, {
    end_row = row + 1,
    end_col = 0,
    hl_group = group,
    hl_eol = true,
    ephemeral = true,
    priority = 10,
  })
end

--- Whether another end-of-line text is on a row.
local function has_eol_text(buf, row)
  local marks = vim.api.nvim_buf_get_extmarks(buf, -1, { row, 0 }, { row, -1 }, { details = true, type = "virt_text" })
  for _, item in ipairs(marks) do
    if item[4].virt_text_pos == "eol" then
      return true
    end
  end
  return false
end

--- The escape backslash of a line of text that looks like structure (scan.escaped), concealed:
--- with 'conceallevel' 2 or 3 the line reads as it was written.
local function conceal_escape(buf, row, line)
  if line:byte(1) == 92 and scan.escaped(line) then
    vim.api.nvim_buf_set_extmark(buf, M.ns, row, 0, {
      end_row = row,
      end_col = 1,
      conceal = "",
      ephemeral = true,
      priority = PRIORITY,
    })
  end
end

--- Inline markdown: pattern, group.
local INLINE = {
  { "`[^`]+`", "FlemmaMarkdownCode" },
  { "%*%*[^%s*][^*]-%*%*", "FlemmaMarkdownStrong" },
  { "%[[^%]]-%]%([^%)%s]+%)", "FlemmaMarkdownLink" },
}

--- Inline markdown of a text line: headings, list bullets, quotes, `code`, **strong**, *em*,
--- links.
local function markdown(buf, row, line)
  local first = line:byte(1)
  if first == 35 then -- #
    local hashes = line:match("^(#+)%s")
    if hashes and #hashes <= 6 then
      mark(buf, row, 0, #line, "FlemmaMarkdownHeading")
      return
    end
  elseif first == 62 then -- >
    mark(buf, row, 0, #line, "FlemmaMarkdownQuote")
    return
  end
  local bullet = line:match("^%s*[-*+]%s") or line:match("^%s*%d+[.)]%s")
  if bullet then
    mark(buf, row, 0, #bullet, "FlemmaMarkdownList")
  end
  for _, inline in ipairs(INLINE) do
    local init = 1
    while true do
      local s, e = line:find(inline[1], init)
      if not s then
        break
      end
      mark(buf, row, s - 1, e, inline[2])
      init = e + 1
    end
  end
end

--- Templates and file references of System and You text.
local function templates(buf, row, line)
  for _, open in ipairs({ "{{", "{%" }) do
    local close = open == "{{" and "}}" or "%}"
    local init = 1
    while true do
      local s = line:find(open, init, true)
      if not s then
        break
      end
      local e = line:find(close, s + 2, true)
      if not e then
        break
      end
      local group = open == "{{" and "FlemmaLuaExpression" or "FlemmaLuaCodeBlock"
      mark(buf, row, s - 1, e + 1, group)
      mark(buf, row, s - 1, s + 1, "FlemmaLuaDelimiter")
      mark(buf, row, e - 1, e + 1, "FlemmaLuaDelimiter")
      init = e + 2
    end
  end
  -- File references, then MCP resource references (`@mcp:<server>:<uri>`), drawn alike.
  for _, pattern in ipairs({ "@~?%.?%.?/[^%s]+", "@mcp:[%w_%-]+:[^%s]+" }) do
    local init = 1
    while true do
      local s, e = line:find(pattern, init)
      if not s then
        break
      end
      if s == 1 or line:sub(s - 1, s - 1):match("[%s%(%[\"']") then
        -- Trailing punctuation is not part of the path (docs/chat-format.md).
        local path_end = e
        while path_end > s and line:sub(path_end, path_end):match("[%.,;:!%?%)%]\"']") do
          path_end = path_end - 1
        end
        mark(buf, row, s - 1, path_end, "FlemmaUserFileReference")
      end
      init = e + 1
    end
  end
end

--- The status word (and the whole suffix) of a tool result header.
local function tool_result_header(buf, row, line, block)
  local title_end = scan.TITLE_WIDTH.tool_result
  mark(buf, row, 0, title_end, "FlemmaToolResultTitle")
  local s, e = line:find("`[^`]+`", title_end + 1)
  if s then
    mark(buf, row, s - 1, e, "FlemmaToolDetail")
    local status = block.error and "error" or block.status
    local suffix = line:find("%(", e + 1)
    if status and suffix then
      mark(buf, row, suffix - 1, #line, STATUS_GROUPS[status])
    end
  end
end

--- Draw one row of a chat buffer. `ctx` carries the structure and a cursor into it that moves
--- forward as rows are drawn in order.
---@param buf integer
---@param row integer
---@param line string
---@param ctx table { structure, msg_index, block_index, line_hl, ruler_width }
function M.draw(buf, row, line, ctx)
  local st = ctx.structure
  local fm = st.frontmatter
  if fm and row <= fm.end_row then
    if ctx.line_hl then
      line_background(buf, row, "FlemmaLineFrontmatter")
    end
    if row == fm.row or row == fm.end_row then
      mark(buf, row, 0, #line, "FlemmaFrontmatterDelimiter")
    end
    return
  end
  local index = scan.message_at(st, row)
  local message = index and st.messages[index]
  if not message then
    return
  end
  local role = message.role
  if ctx.line_hl and LINE_GROUPS[role] then
    line_background(buf, row, LINE_GROUPS[role])
  end
  if row == message.row then
    mark(buf, row, 0, #line, ROLE_MARKERS[role] or "FlemmaRoleUser")
    if ctx.ruler_width then
      -- An end-of-line text starts one cell after the line. Another one on the line (the
      -- progress indicator on a reply's marker) would be drawn after the ruler, off screen:
      -- the ruler steps aside while it is there.
      local width = ctx.ruler_width - vim.fn.strdisplaywidth(line) - 1
      if width > 0 and not has_eol_text(buf, row) then
        vim.api.nvim_buf_set_extmark(buf, M.ns, row, 0, {
          virt_text = { { string.rep(ctx.ruler_char, width), "FlemmaRuler" } },
          virt_text_pos = "eol",
          hl_mode = "combine",
          ephemeral = true,
          priority = 1,
        })
      end
    end
    return
  end
  local block = scan.block_at(st, row)
  if block == nil or block.msg ~= index then
    if line == "" then
      return
    end
    conceal_escape(buf, row, line)
    markdown(buf, row, line)
    if role ~= "Assistant" then
      templates(buf, row, line)
    end
    return
  end
  local kind = block.kind
  if kind == "code" then
    if row == block.row or (row == block.end_row and not block.open) then
      mark(buf, row, 0, #line, "FlemmaMarkdownFence")
    else
      conceal_escape(buf, row, line)
      mark(buf, row, 0, #line, "FlemmaMarkdownCodeBlock")
    end
  elseif kind == "thinking" then
    if row == block.row or row == block.end_row then
      mark(buf, row, 0, #line, "FlemmaThinkingTag")
    else
      conceal_escape(buf, row, line)
      vim.api.nvim_buf_set_extmark(buf, M.ns, row, 0, {
        end_row = row + 1,
        end_col = 0,
        hl_group = "FlemmaThinkingBlock",
        hl_eol = true,
        ephemeral = true,
        priority = PRIORITY,
      })
    end
  elseif kind == "tool_use" then
    if row == block.row then
      local title_end = scan.TITLE_WIDTH.tool_use
      mark(buf, row, 0, title_end, "FlemmaToolUseTitle")
      local s, e = line:find("`[^`]+`", title_end + 1)
      if s then
        mark(buf, row, s - 1, e, "FlemmaToolName")
        local s2, e2 = line:find("%(`[^`]+`%)", e + 1)
        if s2 then
          mark(buf, row, s2 - 1, e2, "FlemmaToolDetail")
        end
      end
    elseif line:byte(1) == 96 then
      mark(buf, row, 0, #line, "FlemmaMarkdownFence")
    elseif line ~= "" then
      mark(buf, row, 0, #line, "FlemmaMarkdownCodeBlock")
    end
  elseif kind == "tool_result" then
    if row == block.row then
      tool_result_header(buf, row, line, block)
    elseif line:byte(1) == 96 then
      mark(buf, row, 0, #line, "FlemmaMarkdownFence")
      local s, e = line:find("status=%S+")
      if s and block.status then
        mark(buf, row, s - 1, e, STATUS_GROUPS[block.status])
      end
    end
  elseif kind == "permission" then
    -- An agent's permission placeholder: drawn as a tool result placeholder is.
    if row == block.row then
      local title_end = #"**Agent Permission:**"
      mark(buf, row, 0, title_end, "FlemmaToolResultTitle")
      local s, e = line:find("`[^`]+`", title_end + 1)
      if s then
        mark(buf, row, s - 1, e, "FlemmaToolDetail")
      end
    elseif line:byte(1) == 96 then
      mark(buf, row, 0, #line, "FlemmaMarkdownFence")
      local s, e = line:find("status=%S+")
      if s then
        mark(buf, row, s - 1, e, STATUS_GROUPS[block.status])
      end
    end
  elseif kind == "aborted" then
    mark(buf, row, 0, #line, "FlemmaAborted")
  elseif kind == "slash" then
    mark(buf, row, 0, block.name_end, "FlemmaSlashCommand")
    if block.name_end < #line then
      mark(buf, row, block.name_end, #line, "FlemmaSlashArgs")
    end
  end
end

return M
