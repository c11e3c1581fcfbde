// The configuration as the host reads it: one typed `Config`, read from Lua's snapshot (the
// options of `setup()` and the run-time layer, merged over the schema's defaults in Lua) once per
// generation, and again over a buffer's frontmatter when it sets options.
//
// Decisions:
// - `data` is the snapshot as received (what a frontmatter's operations apply to, and what
//   `:Flemma status` shows); the typed sections are copies of its sections with the options the
//   host reads checked, and the schema's default where one is missing or of the wrong type. The
//   defaults are the schema's (`lua/flemma/config/options/`; a test compares them).
// - The options the host does not read keep their place in the sections as plain data, so the
//   core's own readers (policy, sandbox, hooks) and the tool modules see what Lua sent.
// - A parsed configuration is frozen: it is shared by every step until the next generation, so
//   nothing may change it in place.

import { warnShare } from '../context/meter.js';

/** The configuration as plain data: Lua's snapshot, or that snapshot with a frontmatter applied. */
export type ConfigData = Readonly<Record<string, unknown>>;

/** `tools.cursor_after_result`. */
export type CursorAfterResult = 'result' | 'stay' | 'next';

/** `parameters.cache_retention`. */
export type CacheRetention = 'short' | 'long' | 'none';

/** `parameters`: the general request parameters (the per-provider tables stay data). */
export interface ParametersConfig extends Readonly<Record<string, unknown>> {
  /** Tokens, or a share of the model's limit (`"50%"`). */
  readonly max_tokens: number | string;
  readonly temperature?: number;
  /** Seconds for the whole request. */
  readonly timeout: number;
  readonly cache_retention: CacheRetention;
}

/** `tools`: the options the executor and the loop read; tool settings (`tools.<name>`) stay data. */
export interface ToolsConfig extends Readonly<Record<string, unknown>> {
  /** The `tools` list (the snapshot's list part), undefined when the configuration sets none. */
  readonly __list?: readonly string[];
  readonly calling: unknown;
  readonly max_concurrent: number;
  readonly default_timeout: number;
  readonly show_spinner: boolean;
  readonly cursor_after_result: CursorAfterResult;
  /** Seconds after which a running tool moves to the background (0: never). */
  readonly background_after: number;
  readonly yolo: boolean;
}

/** `context`: the context meter (docs/context.md). */
export interface ContextConfig {
  /** `context.window`: the model's window in tokens, over the table's; undefined: the table's. */
  readonly window?: number;
  /** `context.warn_at` as a share of the window (0.8 for `"80%"`), or false: no warning. */
  readonly warnAt: number | false;
  /** `context.recovery`: keep a streaming reply on disk ("Recovery after a crash"). */
  readonly recovery: boolean;
}

export interface Config {
  /** The data this configuration was read from. */
  readonly data: ConfigData;
  readonly provider: string;
  readonly model?: string;
  readonly parameters: ParametersConfig;
  readonly tools: ToolsConfig;
  readonly sandbox?: Readonly<Record<string, unknown>>;
  /** Settings of the credential resolvers (`secrets.<name>`). */
  readonly secrets?: Readonly<Record<string, unknown>>;
  /** `limits.max_session_cost`, in dollars; undefined: no cap. */
  readonly maxSessionCost?: number;
  /** `editing.auto_write`: write the buffer after each reply and each batch of tool results. */
  readonly autoWrite: boolean;
  readonly context: ContextConfig;
  /** `ui.tool_output.lines`: lines of a running call's output shown under its block (0: none). */
  readonly toolOutputLines: number;
  /** `usage.ledger`: a priced request of a chat file is recorded in the usage ledger. */
  readonly usageLedger: boolean;
}

/** The schema's defaults of the options `Config` types (`lua/flemma/config/options/`). */
export const CONFIG_DEFAULTS = {
  provider: 'anthropic',
  parameters: { max_tokens: '50%', timeout: 600, cache_retention: 'short' },
  tools: {
    calling: 'native',
    max_concurrent: 2,
    default_timeout: 30,
    show_spinner: true,
    cursor_after_result: 'result',
    background_after: 0,
    yolo: false,
  },
  editing: { auto_write: false },
  context: { warn_at: '80%', recovery: true },
  ui: { tool_output: { lines: 5 } },
  usage: { ledger: true },
} as const;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A section of the data as a table (an empty Lua table may arrive as `[]`). */
function section(data: Readonly<Record<string, unknown>>, key: string): Record<string, unknown> {
  const value = data[key];
  return isRecord(value) ? value : {};
}

function number(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

function oneOf<T extends string>(value: unknown, values: readonly T[], fallback: T): T {
  return values.find((item) => item === value) ?? fallback;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const item of Object.values(value)) deepFreeze(item);
  }
  return value;
}

function parameters(data: ConfigData): ParametersConfig {
  const raw = section(data, 'parameters');
  const defaults = CONFIG_DEFAULTS.parameters;
  const maxTokens = raw['max_tokens'];
  const out: ParametersConfig = {
    ...raw,
    max_tokens:
      typeof maxTokens === 'number' || typeof maxTokens === 'string'
        ? maxTokens
        : defaults.max_tokens,
    timeout: number(raw['timeout'], defaults.timeout),
    cache_retention: oneOf(
      raw['cache_retention'],
      ['short', 'long', 'none'],
      defaults.cache_retention,
    ),
  };
  const temperature = raw['temperature'];
  return typeof temperature === 'number' ? { ...out, temperature } : withoutKey(out, 'temperature');
}

function tools(data: ConfigData): ToolsConfig {
  const raw = section(data, 'tools');
  const defaults = CONFIG_DEFAULTS.tools;
  const list = raw['__list'];
  const out: ToolsConfig = {
    ...raw,
    calling: raw['calling'] ?? defaults.calling,
    max_concurrent: number(raw['max_concurrent'], defaults.max_concurrent),
    default_timeout: number(raw['default_timeout'], defaults.default_timeout),
    show_spinner:
      typeof raw['show_spinner'] === 'boolean' ? raw['show_spinner'] : defaults.show_spinner,
    cursor_after_result: oneOf(
      raw['cursor_after_result'],
      ['result', 'stay', 'next'],
      defaults.cursor_after_result,
    ),
    background_after: number(raw['background_after'], defaults.background_after),
    yolo: raw['yolo'] === true,
  };
  return Array.isArray(list) && list.length > 0
    ? { ...out, __list: list.filter((item): item is string => typeof item === 'string') }
    : withoutKey(out, '__list');
}

function context(data: ConfigData): ContextConfig {
  const raw = section(data, 'context');
  const window = raw['window'];
  const warnAt = warnShare(raw['warn_at'] ?? CONFIG_DEFAULTS.context.warn_at);
  const recovery =
    typeof raw['recovery'] === 'boolean' ? raw['recovery'] : CONFIG_DEFAULTS.context.recovery;
  return typeof window === 'number' && Number.isFinite(window) && window > 0
    ? { window: Math.floor(window), warnAt, recovery }
    : { warnAt, recovery };
}

function withoutKey<T extends Readonly<Record<string, unknown>>>(record: T, key: string): T {
  if (!(key in record)) return record;
  const copy: Record<string, unknown> = { ...record };
  // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- a copy of plain data
  delete copy[key];
  return copy as T;
}

/** Read the configuration from its data (Lua's snapshot, or one with a frontmatter applied). */
export function parseConfig(raw: unknown): Config {
  const data: ConfigData = isRecord(raw) ? raw : {};
  const provider = data['provider'];
  const model = data['model'];
  const sandbox = data['sandbox'];
  const secrets = data['secrets'];
  const limit = section(data, 'limits')['max_session_cost'];
  const autoWrite = section(data, 'editing')['auto_write'];
  const ledger = section(data, 'usage')['ledger'];
  const config: Config = {
    data,
    provider: typeof provider === 'string' ? provider : CONFIG_DEFAULTS.provider,
    ...(typeof model === 'string' ? { model } : {}),
    parameters: parameters(data),
    tools: tools(data),
    ...(isRecord(sandbox) ? { sandbox } : {}),
    ...(isRecord(secrets) ? { secrets } : {}),
    ...(typeof limit === 'number' ? { maxSessionCost: limit } : {}),
    autoWrite: typeof autoWrite === 'boolean' ? autoWrite : CONFIG_DEFAULTS.editing.auto_write,
    context: context(data),
    toolOutputLines: Math.max(
      0,
      Math.floor(
        number(
          section(section(data, 'ui'), 'tool_output')['lines'],
          CONFIG_DEFAULTS.ui.tool_output.lines,
        ),
      ),
    ),
    usageLedger: typeof ledger === 'boolean' ? ledger : CONFIG_DEFAULTS.usage.ledger,
  };
  return deepFreeze(config);
}
