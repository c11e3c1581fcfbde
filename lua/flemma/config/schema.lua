--- flemma.config.schema: the schema of every `setup()` option (`options`), and the language it is
--- written in. The language lives in `flemma.config.dsl` (nodes, validation, trust classes) and
--- `flemma.config.merge` (aliases, merging); the option tree by section in
--- `flemma.config.options.*`, put together here in one table, in the order of the docs.
local dsl = require("flemma.config.dsl")
local merge = require("flemma.config.merge")
local providers = require("flemma.config.options.providers")
local tools = require("flemma.config.options.tools")
local ui = require("flemma.config.options.ui")
local other = require("flemma.config.options.other")

local M = {}

-- The constructors (`schema.boolean(true)`, `schema.trust("safe", …)`), for callers that add
-- options of their own, and the operations `flemma.config` applies to the user's table.
for _, name in ipairs({
  "lazy",
  "string",
  "boolean",
  "integer",
  "number",
  "enum",
  "literal",
  "func",
  "table",
  "list",
  "map",
  "union",
  "object",
  "trust",
  "optional",
}) do
  M[name] = dsl[name]
end
M.normalize = merge.normalize
M.merge = merge.merge

-- Trust classes (`trust`, docs/security.md): what a frontmatter may change in a file that is not
-- trusted. Unmarked options need trust, so a new option is refused there until it is marked.
M.options = dsl.object({
  provider = providers.provider,
  model = providers.model,
  parameters = providers.parameters,
  presets = providers.presets,
  tools = tools.tools,
  mcp = tools.mcp,
  acp = other.acp,
  templating = other.templating,
  sandbox = tools.sandbox,
  secrets = other.secrets,
  keymaps = ui.keymaps,
  editing = ui.editing,
  highlights = ui.highlights,
  ruler = ui.ruler,
  turns = ui.turns,
  line_highlights = ui.line_highlights,
  ui = ui.ui,
  completion = ui.completion,
  agents = other.agents,
  limits = other.limits,
  context = other.context,
  logging = other.logging,
  diagnostics = other.diagnostics,
  attention = other.attention,
  integrations = other.integrations,
  lsp = other.lsp,
  chats = other.chats,
  usage = other.usage,
  experimental = other.experimental,
  host = other.host,
}, {
  aliases = {
    thinking = { "parameters", "thinking" },
    temperature = { "parameters", "temperature" },
    max_tokens = { "parameters", "max_tokens" },
    timeout = { "parameters", "timeout" },
  },
})

return M
