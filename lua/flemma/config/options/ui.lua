--- flemma.config.options.ui: the options of what the editor shows and how a chat edits —
--- `keymaps`, `editing`, `highlights`, `ruler`, `turns`, `line_highlights` and `ui`. Part of the
--- `setup()` schema, assembled in `flemma.config.schema`.
local S = require("flemma.config.dsl")
local shared = require("flemma.config.options.shared")

local safe = shared.safe

local POSITIONS = { "top", "bottom", "top left", "top right", "bottom left", "bottom right" }

--- A highlight value: a group name or expression string, or a table (attributes or {dark, light}).
local function style(default)
  return S.union({ S.string(), S.table() }, default)
end

local function string_or_false(default)
  return S.union({ S.string(), S.literal(false) }, default)
end

--- The default of `ui.statusline.format`, in the `.chat` template syntax (`{{ expr }}`,
--- `{% lua %}`); the variables are those of `require("flemma.statusline").variables()`.
local function statusline_format()
  return "{{ model.name or model.provider }}"
    .. "{% if thinking.level then %} ({{ thinking.level }}){% end %}"
    .. "{% if session.requests > 0 then %} · {{ session.requests }} req"
    .. " ${{ string.format('%.2f', session.cost) }}{% end %}"
    .. "{% if context then %} · {{ context.text }}{% end %}"
    .. "{% if busy == 'request' then %} · request…{% elseif busy == 'tools' then %} · tools…"
    .. "{% elseif booting then %} · booting…{% end %}"
end

local M = {}

-- What the editor shows and how it edits: safe anywhere.
M.keymaps = safe(S.object({
  enabled = S.boolean(true),
  normal = S.object({
    send = S.string("<C-]>"),
    cancel = S.string("<C-c>"),
    tool_execute = S.string("<M-CR>"),
    message_next = S.string("]m"),
    message_prev = S.string("[m"),
    fold_toggle = string_or_false("<Space>"),
    conceal_toggle = string_or_false("<Space><Space>"),
    goto_definition = string_or_false("gd"),
    goto_file = string_or_false("gf"),
    tool_diff = string_or_false("gD"),
  }),
  insert = S.object({ send = S.string("<C-]>"), tool_execute = S.string("<M-CR>") }),
  -- The keys of a `:Flemma tool:diff` tab.
  diff = S.object({
    approve = string_or_false("ga"),
    reject = string_or_false("gr"),
  }),
  text_object = string_or_false("m"),
}))

M.editing = safe(S.object({
  auto_prompt = S.boolean(true),
  disable_textwidth = S.boolean(true),
  -- A write runs the user's BufWrite autocmds (format-on-save may run a project's programs):
  -- a file may turn it off, only a trusted one on.
  auto_write = S.trust({ only = { false } }, S.boolean(false)),
  manage_updatetime = S.boolean(true),
  foldlevel = S.integer(1, { min = 0 }),
  conceal = S.union({
    S.string(nil, { pattern = "^[0-3][nvic]*$", desc = 'a conceal spec such as "2nv"' }),
    S.literal(false),
  }, "2nv"),
  auto_close = S.object({
    thinking = S.boolean(true),
    tool_use = S.boolean(true),
    tool_result = S.boolean(true),
    frontmatter = S.boolean(false),
  }),
}))

M.highlights = safe(S.object({
  system = style("Special"),
  user = style("Normal"),
  assistant = style("Normal"),
  lua_expression = style("PreProc"),
  lua_code_block = style("PreProc"),
  lua_delimiter = style("FlemmaLuaExpression"),
  user_file_reference = style("Include"),
  thinking_tag = style("Comment"),
  thinking_block = style({ dark = "Comment+bg:#000000-fg:#333333", light = "Comment-bg:#000000+fg:#333333" }),
  tool_icon = style("FlemmaToolUseTitle"),
  tool_name = style("Function"),
  tool_use_title = style("Function"),
  tool_result_title = style("Function"),
  tool_result_error = style("DiagnosticError"),
  tool_result_denied = style("DiagnosticError"),
  tool_result_aborted = style("DiagnosticError"),
  tool_result_pending = style("DiagnosticInfo"),
  tool_result_approved = style("DiagnosticOk"),
  tool_result_rejected = style("DiagnosticWarn"),
  tool_preview = style("Comment"),
  tool_detail = style("Comment"),
  fold_preview = style("Comment"),
  fold_meta = style("Comment"),
  busy = style("DiagnosticWarn"),
  role_style = style("bold"),
  defaults = style({
    dark = { bg = "#000000", fg = "#ffffff" },
    light = { bg = "#ffffff", fg = "#000000" },
  }),
}))

M.ruler = safe(S.object({
  enabled = S.boolean(true),
  char = S.string("─"),
  hl = style({ dark = "Comment-fg:#303030", light = "Comment+fg:#303030" }),
}))

M.turns = safe(S.object({
  enabled = S.boolean(true),
  padding = S.union({
    S.integer(nil, { min = 0 }),
    S.list(S.integer(nil, { min = 0 }), nil, { count = 2 }),
    S.object({
      left = S.integer(0, { min = 0 }),
      right = S.integer(1, { min = 0 }),
    }),
  }, { left = 0, right = 1 }, {
    coerce = function(value)
      if type(value) == "number" then
        return { left = value, right = value }
      elseif type(value) == "table" and value[1] ~= nil then
        return { left = value[1], right = value[2] }
      end
      return value
    end,
  }),
  hl = style("FlemmaTurn"),
}))

M.line_highlights = safe(S.object({
  enabled = S.boolean(true),
  frontmatter = style({ dark = "Normal+bg:#18111a", light = "Normal-bg:#18111a" }),
  system = style({ dark = "Normal+bg:#101112", light = "Normal-bg:#101112" }),
  user = style({ dark = "Normal+bg:#202122", light = "Normal-bg:#202122" }),
  assistant = style("Normal"),
}))

M.ui = S.object({
  usage = safe(S.object({
    enabled = S.boolean(true),
    timeout = shared.milliseconds(10000),
    position = S.enum(POSITIONS, "top"),
    highlight = S.string("@text.note,PmenuSel"),
  })),
  progress = safe(S.object({
    position = S.enum(POSITIONS, "bottom left"),
    highlight = S.string("StatusLine"),
  })),
  -- Lines of a running tool's output shown under its block (0: none); only drawing, safe anywhere.
  tool_output = safe(S.object({
    lines = S.integer(5, { min = 0, max = 50 }),
  })),
  pricing = safe(S.object({
    enabled = S.boolean(true),
    high_cost_threshold = S.number(30, { min = 0 }),
  })),
  -- Where `:Flemma new` and `:Flemma toggle` show a chat (docs/chats.md); read from `setup()`
  -- only, and only drawing: safe anywhere.
  new_chat = safe(S.object({
    layout = S.enum({ "split", "vsplit", "tab", "side", "current" }, "side"),
    -- The side window's width: columns, or a share of the screen.
    width = S.union({ S.integer(nil, { min = 20 }), shared.percent(nil, "40%") }, "40%"),
  })),
  -- Which picker `:Flemma chats` shows the chats in (docs/picker.md); only drawing, safe anywhere.
  picker = safe(S.enum({ "auto", "snacks", "telescope", "fzf-lua", "select" }, "auto")),
  -- The format is a template (Lua): needs trust.
  statusline = S.object({
    format = S.union({ S.string(), S.func() }, statusline_format()),
  }),
})

-- Completion in chat buffers (docs/completion.md): `auto` opens Vim's popup on `@` and `/` while
-- typing when no completion plugin is installed. Only the editor's behaviour: safe anywhere.
M.completion = safe(S.object({
  auto = S.boolean(true),
}))

return M
