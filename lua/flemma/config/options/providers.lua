--- flemma.config.options.providers: the options of where requests go and what they ask for —
--- `provider`, `model`, `parameters` (general and per provider) and the switch `presets`. Part
--- of the `setup()` schema, assembled in `flemma.config.schema`.
local S = require("flemma.config.dsl")
local shared = require("flemma.config.options.shared")

local safe = shared.safe

local THINKING_LEVELS = { "minimal", "low", "medium", "high", "max" }

local function thinking()
  return S.union({
    S.enum(THINKING_LEVELS),
    S.number(nil, { min = 0 }),
    S.literal(false),
    S.object({
      level = S.optional(S.union({ S.enum(THINKING_LEVELS), S.number(nil, { min = 0 }), S.literal(false) })),
      foreign = S.optional(S.enum({ "preserve", "drop" })),
    }),
  }, { level = "high", foreign = "preserve" })
end

--- The general request parameters; `with_defaults = false` for the per-provider copies, where
--- an unset key means "use the general value".
local function general_parameters(with_defaults)
  local function pick(node)
    return with_defaults and node or S.optional(node)
  end
  return {
    max_tokens = safe(pick(S.union({
      S.integer(nil, { min = 1 }),
      shared.percent(nil, "50%"),
    }, "50%"))),
    -- The providers take 0 to 1 (Anthropic) or 0 to 2 (OpenAI, Gemini); each checks its own.
    temperature = safe(S.optional(S.number(nil, { min = 0, max = 2 }))),
    -- Seconds; timers take at most MAX_TIMER_SECONDS (shared.lua).
    timeout = safe(pick(shared.seconds(600))),
    connect_timeout = safe(pick(shared.seconds(10))),
    -- A shared file can only make its own requests fail sooner or wait longer.
    stream_idle_timeout = safe(pick(shared.seconds(60))),
    cache_retention = safe(pick(S.enum({ "short", "long", "none" }, "short"))),
    thinking = safe(pick(thinking())),
  }
end

local function provider_parameters(specific)
  -- `base_url`: where the provider's API lives (an OpenAI-compatible server, a proxy, a test
  -- server); unset means the SDK's default or its standard *_BASE_URL environment variable.
  -- Where requests (and the key) go: needs trust.
  specific = vim.tbl_extend("error", { base_url = S.optional(S.string()) }, specific)
  return S.object(vim.tbl_extend("error", general_parameters(false), specific))
end

local M = {}

-- The providers' own endpoints, with the user's own credentials.
M.provider = safe(S.string("anthropic"))

M.model = safe(S.optional(S.string()))

M.parameters = S.object(vim.tbl_extend("error", general_parameters(true), {
  anthropic = provider_parameters({
    thinking_budget = safe(S.optional(S.integer(nil, { min = 0 }))),
    effort = safe(S.optional(S.enum({ "low", "medium", "high", "xhigh", "max" }))),
  }),
  openai = provider_parameters({
    reasoning = safe(S.optional(S.string())),
    reasoning_summary = safe(S.optional(S.string())),
    experimental = safe(S.object({ phase = S.boolean(true) })),
  }),
  -- The project and the location are part of the endpoint (and of who is billed): need trust.
  vertex = provider_parameters({
    project_id = S.optional(S.string()),
    location = S.string("global"),
    thinking_budget = safe(S.optional(S.integer(nil, { min = 0 }))),
  }),
  moonshot = provider_parameters({
    prompt_cache_key = safe(S.optional(S.string())),
  }),
  -- The offline demo provider (`provider = "demo"`, `npm run demo`).
  demo = provider_parameters({
    delay_ms = safe(shared.milliseconds(40)),
  }),
  gemini = provider_parameters({
    thinking_budget = safe(S.optional(S.integer(nil, { min = 0 }))),
  }),
  -- An agent of the Agent Client Protocol (`provider = "acp"`, docs/agents.md): which one of
  -- `acp.agents` the chat talks to. Choosing it starts that agent's program: needs trust. (The
  -- general parameters are there as for every provider; an agent picks its own model and limits.)
  acp = provider_parameters({
    agent = S.optional(S.string()),
  }),
  -- Any server that speaks OpenAI's Chat Completions (Ollama, llama.cpp, LM Studio, vLLM…).
  openai_compatible = provider_parameters({
    -- The variable that holds the key, for servers that want one.
    api_key_env = S.optional(S.string()),
  }),
}))

-- Switch presets (`:Flemma switch $name`): a modeline string or a table.
M.presets = S.map(S.union({ S.string(), S.table() }), {}, shared.preset_name)

return M
