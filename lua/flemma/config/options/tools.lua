--- flemma.config.options.tools: the options of tools and what confines them — `tools` (approval,
--- autopilot, undo, policy, hooks, the built-in tools' settings), `mcp` and `sandbox`. Part of the
--- `setup()` schema, assembled in `flemma.config.schema`.
local S = require("flemma.config.dsl")
local shared = require("flemma.config.options.shared")

local safe = shared.safe

local BUFFER_DIR = "urn:flemma:buffer:path"
local SEARCH_EXCLUDES = { ".git", "node_modules", "__pycache__", ".venv", "target", "dist", "build", "vendor" }
local BUILTIN_TOOLS = { "bash", "edit", "find", "grep", "ls", "read", "write" }

local function search_tool()
  return S.object({
    cwd = S.string(BUFFER_DIR),
    exclude = S.trust("superset", S.list(S.string(), SEARCH_EXCLUDES)),
  })
end

--- `tools.policy` and its per-provider layers.
local function tool_policy()
  local layer = {
    profile = S.optional(S.string()),
    allow = S.optional(S.list(S.string())),
    deny = S.optional(S.list(S.string())),
  }
  return S.object({
    profile = S.optional(S.string()),
    allow = S.trust("subset", S.list(S.string(), {})),
    deny = S.trust("superset", S.list(S.string(), {})),
    -- User profiles: a list of patterns, or { extends = "<profile>", allow = {…}, deny = {…} }.
    profiles = S.map(
      S.union({
        S.list(S.string()),
        S.object({
          extends = S.optional(S.string()),
          allow = S.optional(S.list(S.string())),
          deny = S.optional(S.list(S.string())),
        }),
      }),
      {}
    ),
    providers = S.map(S.object(layer), {}),
  })
end

local M = {}

M.tools = S.object({
  require_approval = S.trust({ only = { true } }, S.boolean(true)),
  -- Checked on what the list approves and denies, presets expanded (less, never more).
  auto_approve = S.trust("subset", S.union({ S.list(S.string()), S.func(), S.string() }, { "$default" })),
  auto_approve_sandboxed = S.trust({ only = { false } }, S.boolean(true)),
  -- Path globs added to the built-in sensitive places (docs/approval.md): never approved
  -- automatically, hidden from sandboxed commands. `~` and `${VAR}` are expanded. Adding is safe
  -- anywhere; removing one needs trust.
  sensitive_paths = S.trust("superset", S.list(S.string(), {})),
  -- Approval presets (`$name` → approve/deny lists); these override the built-ins by name.
  presets = S.map(
    S.object({
      approve = S.optional(S.list(S.string())),
      deny = S.optional(S.list(S.string())),
    }),
    {},
    shared.preset_name
  ),
  autopilot = S.trust(
    { only = { false } },
    S.union({
      S.boolean(),
      S.object({
        enabled = S.trust({ only = { false } }, S.boolean(true)),
        max_turns = S.trust("lower", S.integer(100, { min = 1 })),
        -- Milliseconds between a finished step and the automatic continue; an edit of the buffer
        -- meanwhile cancels the continue (0: on the next tick).
        resume_delay = S.trust("higher", shared.milliseconds(0)),
      }),
    }, { enabled = true, max_turns = 100, resume_delay = 0 }, {
      coerce = function(value)
        if type(value) == "boolean" then
          return { enabled = value }
        end
        return value
      end,
    })
  ),
  max_concurrent = safe(S.integer(2, { min = 0 })),
  default_timeout = safe(shared.seconds(30)),
  show_spinner = safe(S.boolean(true)),
  -- Seconds after which a running tool moves to the background by itself (0: never).
  background_after = safe(shared.seconds(0, 0)),
  cursor_after_result = safe(S.enum({ "result", "stay", "next" }, "result")),
  -- What `write`, `edit`, `file_write` (and any tool writing through `ctx.sandbox.open_for_write`)
  -- keep of a file before changing it, for `:Flemma tool:undo` (docs/tools.md, "Undo and review"):
  -- files over `max_bytes` are not kept; the oldest records go once all of them pass
  -- `max_total_bytes` or are older than `max_age_days`. Turning undo on is safe anywhere; off, or
  -- other bounds, need trust (a chat must not quietly remove the user's way back).
  undo = S.object({
    enabled = S.trust({ only = { true } }, S.boolean(true)),
    max_bytes = shared.bytes_in_memory(1048576, 0),
    max_total_bytes = S.integer(52428800, { min = 0 }),
    max_age_days = S.integer(14, { min = 0 }),
  }),
  -- How tools reach the model: "native" (the provider's tool calling) or "xml" (tools described
  -- in the system prompt, XML tool blocks in the reply; docs/tools.md, "XML tool calling"). A
  -- table picks per provider and model: { default = "native", openai_compatible = "xml",
  -- ["openai_compatible:llama*"] = "xml" } (the most specific key wins).
  calling = safe(S.union({ S.enum({ "native", "xml" }), S.map(S.enum({ "native", "xml" })) }, "native")),
  modules = S.list(S.string(), {}),
  -- Declarative tools (YAML/JSON files, docs/tools.md): the directories to load, the project's
  -- `.flemma/tools` (opt-in: such files can run commands), and the environment variables their
  -- templates may read with `${NAME}`.
  declarative = S.object({
    dirs = S.list(S.string(), {}),
    project = S.boolean(false),
    env = S.list(S.string(), {}),
  }),
  -- Middleware around every tool's execution (docs/tools.md, "Middleware").
  middleware = S.object({
    logging = S.union({
      S.boolean(),
      S.object({ redact = S.optional(S.list(S.string())) }),
    }, false),
    rate_limit = S.object({
      mode = S.enum({ "wait", "fail" }, "wait"),
      -- tool name → "1/s", "10/m", "2/500ms" or { calls = 1, per = 2 } (seconds)
      limits = S.map(S.union({ S.string(), S.table() }), {}),
    }),
    retry = S.union({
      S.literal(false),
      S.object({
        attempts = S.integer(3, { min = 1 }),
        backoff = shared.milliseconds(500),
      }),
    }, { attempts = 3, backoff = 500 }),
  }),
  truncate = S.object({
    output_path_format = S.string("${TMPDIR:-/tmp}/flemma_{{ source }}_{{ path }}_{{ id }}.txt"),
  }),
  mcporter = S.object({
    enabled = S.boolean(false),
    path = S.string("mcporter"),
    timeout = shared.seconds(60),
    startup = S.object({ concurrency = S.integer(4, { min = 1 }) }),
    include = S.list(S.string(), {}),
    exclude = S.list(S.string(), {}),
  }),
  bash = S.object({
    shell = S.optional(S.string()),
    cwd = S.string(BUFFER_DIR),
    env = S.optional(S.map(S.string())),
    -- Command rules (docs/approval.md, "Command rules for bash"): patterns over each simple
    -- command. An allow rule approves commands, so it needs trust; a deny rule only makes
    -- commands ask, so adding one is safe anywhere.
    allow = S.list(S.string(), {}),
    deny = S.trust("superset", S.list(S.string(), {})),
  }),
  grep = search_tool(),
  find = search_tool(),
  ls = S.object({ cwd = S.string(BUFFER_DIR) }),
  -- Tool policy (docs/policy.md): offered = (profile ∪ allow) − deny; names, `*` globs, `group:*`.
  policy = tool_policy(),
  -- Hook lists (docs/policy.md): confirm → ask, log → approve and audit, silent → approve.
  hooks = S.object({
    confirm = S.trust("superset", S.list(S.string(), {})),
    -- `log` and `silent` approve the tools they name.
    log = S.trust("subset", S.list(S.string(), {})),
    silent = S.trust("subset", S.list(S.string(), {})),
    -- One JSON line per call of a `log` tool is appended here (besides Flemma's log).
    audit_file = S.optional(S.string()),
  }),
  autonomy = S.trust({ only = { "conservative" } }, S.enum({ "conservative", "standard", "autonomous" }, "standard")),
  -- YOLO mode (docs/approval.md): approve every call except tools that are never approved
  -- automatically (bash); `:Flemma tool:yolo` toggles it per buffer for the session.
  yolo = S.trust({ only = { false } }, S.boolean(false)),
  -- The `task` tool (docs/tasks.md): how many of a chat's children run at once (more wait for a
  -- slot), and whether the project's `.flemma/agents/*.chat` profiles are read (opt-in, like
  -- `tools.declarative.project`: a project's profile is someone else's text).
  task = S.object({
    max_concurrent = safe(S.integer(4, { min = 1 })),
    project_agents = S.boolean(false),
  }),
  web_fetch = S.object({
    timeout = safe(S.optional(shared.seconds(nil))),
    max_bytes = safe(shared.bytes_in_memory(102400, 1)),
  }),
}, {
  -- The tools offered to the model: removing some is safe anywhere.
  list = S.string(),
  list_trust = "subset",
  list_default = BUILTIN_TOOLS,
  aliases = { approve = { "auto_approve" } },
  -- `tools.<name> = { … }`: settings of a custom tool, read by it through ctx:get_config().
  extra = S.table(),
})

-- MCP servers whose tools are registered as `mcp:<server>:<tool>` (docs/mcp.md). Host-wide:
-- a buffer's frontmatter does not start or stop servers.
M.mcp = S.object({
  servers = S.map(
    S.object({
      -- stdio: the command that starts the server (`args`, `env` and `cwd` go with it).
      command = S.optional(S.string()),
      args = S.list(S.string(), {}),
      env = S.map(S.string(), {}),
      cwd = S.optional(S.string()),
      -- Streamable HTTP: the endpoint, and headers sent with every request.
      url = S.optional(S.string()),
      headers = S.map(S.string(), {}),
      -- Globs over the server's own tool names.
      include = S.list(S.string(), {}),
      exclude = S.list(S.string(), {}),
      enabled = S.boolean(true),
      -- Seconds for connecting and listing the tools (default: mcp.timeout).
      timeout = S.optional(shared.seconds(nil)),
    }),
    {},
    { key_pattern = "^[%w_%-]+$", key_desc = "server names use letters, digits, '_' and '-'" }
  ),
  timeout = shared.seconds(30),
  reconnect = S.object({
    max_attempts = S.integer(5, { min = 0 }),
    -- Milliseconds before the first attempt, doubled after each failure up to `max_delay`.
    initial_delay = shared.milliseconds(500),
    max_delay = shared.milliseconds(30000),
  }),
})

M.sandbox = S.object({
  enabled = S.trust({ only = { true } }, S.boolean(true)),
  backend = S.string("auto"),
  -- Named directories host-side file access is confined to (docs/tools.md, "Sandbox roots"):
  -- { { name = "workspace", path = "~/project" }, { name = "data", path = "/srv/data", mode = "ro" } }
  roots = S.list(
    S.union({
      S.string(),
      S.object({
        name = S.optional(S.string()),
        path = S.string(),
        mode = S.enum({ "rw", "ro" }, "rw"),
      }),
    }),
    {}
  ),
  policy = S.object({
    rw_paths = S.trust(
      "subset",
      S.list(S.string(), {
        "urn:flemma:cwd",
        BUFFER_DIR,
        "/tmp",
        "${TMPDIR:-/tmp}",
        "${XDG_CACHE_HOME:-~/.cache}",
      })
    ),
    network = S.trust({ only = { false } }, S.boolean(true)),
    allow_privileged = S.trust({ only = { false } }, S.boolean(false)),
    -- Variables kept in a sandboxed command's environment although the scrub rules match them
    -- (provider keys, *_KEY, *_TOKEN, *_SECRET, *_CREDENTIALS, *PASSWORD*; docs/tools.md).
    -- Letting a secret through needs trust.
    env_allow = S.trust("subset", S.list(S.string(), {})),
  }),
  -- `sandbox.backends.<name> = { … }`: the settings of a custom backend, passed to it.
  backends = S.object({
    bwrap = S.object({
      path = S.string("bwrap"),
      extra_args = S.list(S.string(), {}),
    }),
  }, { extra = S.table() }),
})

return M
