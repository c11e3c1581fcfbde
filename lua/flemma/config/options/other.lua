--- flemma.config.options.other: the remaining sections of the `setup()` schema — `templating`,
--- `secrets`, `agents`, `limits`, `context`, `logging`, `diagnostics`, `attention`, `integrations`, `lsp`,
--- `chats`, `usage`, `experimental` and `host`. Assembled in `flemma.config.schema`.
local S = require("flemma.config.dsl")
local shared = require("flemma.config.options.shared")

local safe = shared.safe

local M = {}

M.templating = S.object({
  modules = S.list(S.string(), {}),
})

M.secrets = S.object({
  gcloud = S.object({ path = S.string("gcloud") }),
}, {
  -- `secrets.<name> = { … }`: settings of a custom credential resolver (ctx:get_config()).
  extra = S.table(),
})

-- Agent profiles of the `task` tool (docs/tasks.md, "Profiles"), your own: what a child chat may
-- have at most (its parent's tools bound it). A chat's frontmatter may narrow one (fewer tools,
-- lower limits, switch it off); defining one or changing its model, provider or prompt needs trust.
M.agents = S.map(
  S.object({
    description = S.optional(S.string()),
    tools = S.trust("subset", S.optional(S.list(S.string()))),
    model = S.optional(S.string()),
    provider = S.optional(S.string()),
    system = S.optional(S.string()),
    max_turns = S.trust("lower", S.optional(S.integer(nil, { min = 1 }))),
    max_cost = S.trust("lower", S.optional(S.number(nil, { min = 0 }))),
    enabled = S.trust({ only = { false } }, S.boolean(true)),
  }),
  {},
  { key_pattern = "^[%w_%-]+$", key_desc = "profile names use letters, digits, '_' and '-'" }
)

-- Spending limits. `max_session_cost` (USD): once the session's requests have cost this much,
-- autopilot stops and a send asks first (nil: no limit).
M.limits = S.object({
  max_session_cost = S.trust("lower", S.optional(S.number(nil, { min = 0 }))),
})

-- Long conversations (docs/context.md): the meter, the budget and elision. Safe anywhere:
-- `window` and `warn_at` only change what Flemma tells you (and how much a budget given as a
-- share leaves out); a budget only ever makes a request send less than the file holds. None
-- of them names an endpoint, credential, program or file.
M.context = safe(S.object({
  -- The model's context window in tokens, overriding the model table (a local server, a beta
  -- window).
  window = S.optional(S.integer(nil, { min = 1 })),
  -- The share of the window at which a send warns first, or false.
  warn_at = S.union({
    shared.percent(nil, "80%"),
    S.literal(false),
  }, "80%"),
  -- The input tokens a request may hold, or a share of the window ("60%"); over it, old large
  -- tool results are sent as stubs. Unset or false: requests go whole.
  budget = S.optional(S.union({
    S.integer(nil, { min = 1 }),
    shared.percent(nil, "60%"),
    S.literal(false),
  })),
  elide = S.object({
    -- The model's last replies whose tool results are never elided.
    keep_turns = S.integer(8, { min = 1 }),
    -- Results smaller than this (bytes) are never elided.
    min_bytes = S.integer(4096, { min = 0 }),
    -- Once it must elide, elision goes down to this share of the budget.
    low_water = shared.percent("70%", "70%"),
  }),
  -- Keep a streaming reply on disk (a record in stdpath("state")/flemma/recovery, and the file
  -- itself with editing.auto_write) so that a crash loses at most its last second. A file may
  -- turn it off (its content stays off the disk); only a trusted one on.
  recovery = S.trust({ only = { false } }, S.boolean(true)),
  compact = S.object({
    -- What `:Flemma compact` asks the chat's model for (nil: the built-in prompt). It goes to
    -- the provider the chat already sends its whole conversation to.
    prompt = S.optional(S.string()),
  }),
}))

-- The log's path needs trust (a file Flemma appends to).
M.logging = S.object({
  enabled = safe(S.boolean(false)),
  path = S.string(S.lazy(function()
    return vim.fs.joinpath(vim.fn.stdpath("log"), "flemma.log")
  end)),
  level = safe(S.enum({ "TRACE", "DEBUG", "INFO", "WARN", "ERROR" }, "DEBUG", { ignore_case = true })),
})

M.diagnostics = safe(S.object({ enabled = S.boolean(false) }))

-- Signals when a chat needs you and you are elsewhere (lua/flemma/attention.lua). Read from
-- `setup()`. The command runs a program: needs trust.
M.attention = S.object({
  enabled = safe(S.boolean(true)),
  terminal = safe(S.union({ S.enum({ "auto", "osc777", "osc9" }), S.literal(false) }, "auto")),
  bell = safe(S.boolean(true)),
  command = S.union({ S.list(S.string()), S.literal(false) }, false),
})

M.integrations = safe(S.object({
  devicons = S.object({
    enabled = S.boolean(true),
    icon = S.string("∴"),
  }),
  -- Busy indicator for bufferline.nvim (docs/integrations.md, "bufferline.nvim").
  bufferline = S.object({
    icon = S.string("󰔟"),
  }),
  nvim_notify = S.object({
    enabled = S.boolean(true),
    icon = S.optional(S.string()),
  }),
  treesitter_context = S.object({
    enabled = S.boolean(true),
  }),
}))

M.lsp = safe(S.object({
  enabled = S.boolean(S.lazy(function()
    -- NOTE: looked up without touching `vim.lsp`, which would load it (~7 ms) at start-up.
    return rawget(vim, "lsp") ~= nil or #vim.api.nvim_get_runtime_file("lua/vim/lsp.lua", false) > 0
  end)),
}))

-- Where `:Flemma new` writes chats and what a new one holds (docs/chats.md, "Starting chats"),
-- and where `:Flemma chats` looks besides that directory and the project (docs/picker.md).
-- Read from `setup()` only (a frontmatter never decides where files go or which are read);
-- they name directories and a file, and listing the children reads more: need trust.
M.chats = S.object({
  -- `~` and environment variables are expanded (docs/configuration.md, "Paths").
  directory = S.string(S.lazy(function()
    return vim.fs.joinpath(vim.fn.stdpath("data"), "flemma", "chats")
  end)),
  -- The text of a new chat, or (a single line starting with `/`, `~` or `$`) a file holding it.
  template = S.string("@You:\n"),
  search = S.list(S.string(), {}),
  children = S.boolean(false),
})

-- The usage ledger (docs/usage.md, "The ledger"): a line per priced request of a chat file in
-- stdpath("state")/flemma/usage.jsonl, for the cost `:Flemma chats` shows. Its place is not an
-- option; a frontmatter may only turn it off for its chat.
M.usage = S.object({
  ledger = S.trust({ only = { false } }, S.boolean(true)),
})

M.experimental = S.object({})

M.host = S.object({
  node = S.string("node"),
  log_level = S.enum({ "debug", "info", "warn", "error" }, "info"),
  restart = S.object({
    max_attempts = S.integer(5, { min = 0 }),
    window_ms = shared.milliseconds(60000, 1),
    backoff_ms = shared.milliseconds(100),
  }),
})

-- Agents of the Agent Client Protocol (docs/agents.md): the program each one is, started once per
-- chat whose provider is `acp`. Programs, arguments and environment: need trust (unmarked).
local function acp_agent(command, args)
  return { command = command, args = args, env = {} }
end

M.acp = S.object({
  agents = S.map(
    S.object({
      command = S.string(),
      args = S.list(S.string(), {}),
      env = S.map(S.string(), {}),
    }),
    {
      claude = acp_agent("npx", { "-y", "@zed-industries/claude-agent-acp" }),
      codex = acp_agent("npx", { "-y", "@zed-industries/codex-acp" }),
      gemini = acp_agent("gemini", { "--experimental-acp" }),
    },
    { key_pattern = "^[%w_%-]+$", key_desc = "agent names use letters, digits, '_' and '-'" }
  ),
})

return M
