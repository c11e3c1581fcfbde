// The end-to-end fixture: a fake provider, a fresh Neovim with the plugin set up against it, a
// temporary project, and the user's verbs on top of the driver's. `withDriver` runs a test body
// with one and always cleans up; `launcher()` gives a test file a `launch` whose sessions are
// cleaned up after each test (for files that start several, or start one in a helper).
import { afterEach, expect } from 'vitest';
import {
  anthropicBlocks,
  anthropicReply,
  anthropicStream,
  type ScriptedBlock,
  type ScriptedCall,
  type ScriptedStream,
} from './anthropic-script.js';
import { fenceLineOf } from './chat-lines.js';
import { type Driver, type DriverOptions, type UserEvent, startDriver } from './driver.js';
import { type FakeProvider, type FakeRequest, startFakeProvider } from './fake-provider.js';

/** The Anthropic Messages endpoint the fake answers for the default provider. */
export const MESSAGES = '/v1/messages';

/**
 * Lua registering a tool `echo_tool` that returns `<prefix><text>`: `strict`, its schema requires
 * `text` and nothing else; `more`, more fields of the definition (Lua, e.g. `format_preview = …,`).
 */
export function echoTool(
  options: { strict?: boolean; prefix?: string; more?: string } = {},
): string {
  const strict =
    options.strict === true ? 'required = { "text" }, additionalProperties = false,' : '';
  const output =
    options.prefix === '' ? 'input.text' : `"${options.prefix ?? 'echo: '}" .. input.text`;
  return `require("flemma.tools").register("echo_tool", {
  name = "echo_tool",
  description = "Echo the text back",
  input_schema = { type = "object", properties = { text = { type = "string" } }, ${strict} },
  ${options.more ?? ''}
  execute = function(input) return { success = true, output = ${output} } end,
})`;
}

/** `echoTool()`: a tool `echo_tool` that returns `echo: <text>` (register it with `lua`). */
export const ECHO_TOOL = echoTool();

/**
 * Lua wrapping `chat.step_ended`, the test's witness of the host's answer to a step: a
 * `User TestStepEnded` event (data `resumed`, `outcome`) once Lua handled it, and when it asked
 * for Insert mode, once Insert mode has begun (`startinsert` takes effect when the handler has
 * returned).
 */
export const STEP_WITNESS = `
local chat = require("flemma.chat")
local step_ended = chat.step_ended
chat.step_ended = function(params)
  local resumed = step_ended(params)
  local function witness()
    vim.api.nvim_exec_autocmds("User", {
      pattern = "TestStepEnded",
      data = { resumed = resumed, outcome = params.outcome },
    })
  end
  if resumed then
    vim.api.nvim_create_autocmd("InsertEnter", { once = true, callback = function() vim.schedule(witness) end })
  else
    vim.schedule(witness)
  end
  return resumed
end
`;

/** Lua registering `gated_tool`: it runs until the test calls `_G.finish_gated(text)` in Neovim. */
export const GATED_TOOL = `require("flemma.tools").register("gated_tool", {
  name = "gated_tool",
  description = "Answers when the test says so",
  input_schema = { type = "object", properties = {} },
  execute = function(input, ctx, callback)
    _G.finish_gated = function(text) callback({ success = true, output = text }) end
  end,
})`;

/** A chat whose last message is a call of `gated_tool` (id `toolu_G`) with no result yet. */
export const GATED_CHAT = [
  '@You:',
  'Work.',
  '',
  '@Assistant:',
  '**Tool Use:** `gated_tool` (`toolu_G`)',
  '',
  '```json',
  '{}',
  '```',
];

export interface LaunchOptions extends Omit<DriverOptions, 'setup' | 'env'> {
  /**
   * The Lua table given to `require("flemma").setup(…)`, as Lua source (`'{}'` for the
   * defaults). Without it (and without `setup`), the plugin is not set up.
   */
  config?: string | ((fake: FakeProvider) => string);
  /** Lua run after the setup, e.g. registering a tool the test uses (`ECHO_TOOL`). */
  lua?: string;
  /**
   * The whole start-up Lua instead of `config` and `lua`, for a file that sets up its own way
   * (or a function of the fake provider).
   */
  setup?: string | ((fake: FakeProvider) => string);
  /**
   * The API key Anthropic gets (with the fake's URL as `ANTHROPIC_BASE_URL`); `false`: no
   * provider environment at all (the test brings its own in `env`, a function of the fake).
   */
  key?: string | false;
  /** Environment on top of the provider's; a function receives the fake provider. */
  env?: Record<string, string> | ((fake: FakeProvider) => Record<string, string>);
  /** Files of the project (relative to the work directory), written before the setup runs. */
  files?: Record<string, string | Uint8Array>;
  /**
   * A fake provider to use instead of a new one (e.g. the same one for Neovim started again on
   * the same `home`); the session leaves it running, its owner closes it. `false`: no fake
   * provider and no provider environment (a test of Neovim alone; `f` throws).
   */
  provider?: FakeProvider | false;
  /**
   * A chat to open once set up, then wait for the host (`FlemmaBootComplete`); with
   * `boot: false`, return as soon as it is open (a test that looks at the start-up itself).
   */
  chat?: string[] | { name: string; lines: string[]; boot?: boolean };
}

/** One running session: the driver (`d`), the fake provider (`f`) and the user's verbs. */
export class Session {
  /** The chat buffer opened by `chat` or `open` (0, the current buffer, before that). */
  buf = 0;

  constructor(
    readonly d: Driver,
    private readonly fake: FakeProvider | undefined,
    /** Whether `close` stops the fake provider (not one the test brought). */
    private readonly ownsProvider = true,
  ) {}

  /** The fake provider (a session started with `provider: false` has none). */
  get f(): FakeProvider {
    if (this.fake === undefined) throw new Error('this session has no fake provider');
    return this.fake;
  }

  /** Opens a chat file (written with `lines` first) and waits until the host has booted. */
  async open(name: string, lines?: string[], boot = true): Promise<number> {
    this.buf = await this.d.openChat(name, lines);
    if (boot) await this.d.waitForEvent('FlemmaBootComplete');
    return this.buf;
  }

  /** The request `send` or `request` took and no reply answered yet. */
  private unanswered: FakeRequest | undefined;

  /** Presses `<C-]>` (from the current mode) and returns the request it sent. */
  async send(keys = '<C-]>'): Promise<FakeRequest> {
    await this.d.press(keys);
    return this.request();
  }

  /** The next request to the model's endpoint; the next `reply…` or `stream` answers it. */
  async request(): Promise<FakeRequest> {
    this.unanswered = await this.f.nextRequest({ path: MESSAGES });
    return this.unanswered;
  }

  /** The request taken and not answered yet, or else the next one. */
  private async toAnswer(): Promise<FakeRequest> {
    const request = this.unanswered ?? (await this.f.nextRequest({ path: MESSAGES }));
    this.unanswered = undefined;
    return request;
  }

  /** Answers the request (see `toAnswer`) with `text` and tool calls. */
  async reply(text: string, calls: ScriptedCall[] = []): Promise<void> {
    await anthropicReply(await this.toAnswer(), text, calls);
  }

  /** Answers the request with these blocks (thinking, text in chunks, calls). */
  async replyBlocks(blocks: ScriptedBlock[]): Promise<void> {
    await anthropicBlocks(await this.toAnswer(), blocks);
  }

  /** Answers the request with a stream the test writes piece by piece. */
  async stream(): Promise<ScriptedStream> {
    return anthropicStream(await this.toAnswer());
  }

  /** Answers the next request and waits until the reply is written (`FlemmaRequestFinished`). */
  async replyAndWait(text: string, calls: ScriptedCall[] = []): Promise<UserEvent> {
    const after = this.d.eventCount;
    await this.reply(text, calls);
    return this.d.waitForEvent('FlemmaRequestFinished', { after });
  }

  /** Waits for a tool call's result (`FlemmaToolCompleted` for this id, or any). */
  toolResult(id?: string, after?: number): Promise<UserEvent> {
    return this.d.waitForEvent('FlemmaToolCompleted', {
      ...(after === undefined ? {} : { after }),
      ...(id === undefined ? {} : { match: (event) => event.data['tool_id'] === id }),
    });
  }

  /** The chat's lines. */
  lines(): Promise<string[]> {
    return this.d.lines(this.buf);
  }

  /** The cursor of the current window: `[row (1-based), col (0-based)]`. */
  cursor(): Promise<[number, number]> {
    return this.d.lua<[number, number]>('return vim.api.nvim_win_get_cursor(0)');
  }

  /** Quits Neovim (removing its private directory) and stops the fake provider. */
  async close(): Promise<void> {
    try {
      await this.d.quit();
    } finally {
      if (this.ownsProvider) await this.fake?.close();
    }
  }
}

function need(fake: FakeProvider | undefined): FakeProvider {
  if (fake === undefined) throw new Error('an option is a function of the fake provider: none');
  return fake;
}

function setupLua(options: LaunchOptions, fake: FakeProvider | undefined): string | undefined {
  if (typeof options.setup === 'function') return options.setup(need(fake));
  if (options.setup !== undefined) return options.setup;
  const config = typeof options.config === 'function' ? options.config(need(fake)) : options.config;
  const parts = [
    config === undefined ? '' : `require("flemma").setup(${config})`,
    options.lua ?? '',
  ].filter((part) => part !== '');
  return parts.length === 0 ? undefined : parts.join('\n');
}

function environment(
  options: LaunchOptions,
  fake: FakeProvider | undefined,
): Record<string, string> {
  const provider =
    options.key === false || fake === undefined
      ? {}
      : { ANTHROPIC_API_KEY: options.key ?? 'sk-test-key', ANTHROPIC_BASE_URL: fake.url };
  const extra = typeof options.env === 'function' ? options.env(need(fake)) : (options.env ?? {});
  return { ...provider, ...extra };
}

const OWN_OPTIONS = ['config', 'lua', 'setup', 'key', 'env', 'files', 'chat', 'provider'];

function driverOptions(options: LaunchOptions): DriverOptions {
  return Object.fromEntries(
    Object.entries(options).filter(([name]) => !OWN_OPTIONS.includes(name)),
  );
}

/** Opens a chat file (written with `lines`) and waits until the host has booted; its buffer. */
export async function openBooted(d: Driver, name: string, lines?: string[]): Promise<number> {
  const buf = await d.openChat(name, lines);
  await d.waitForEvent('FlemmaBootComplete');
  return buf;
}

/** Puts the cursor on line `row` and presses `<M-CR>`: the call there runs. */
export async function runCallAt(d: Driver, row: number): Promise<void> {
  await d.command(`normal! ${String(row)}G`);
  await d.press('<M-CR>');
}

/**
 * Waits until the request of `buf` has finished, completed: the buffer holds the user's
 * `question`, the model's `answer` and a new empty `@You:`.
 */
export async function answered(
  d: Driver,
  buf: number,
  question: string,
  answer: string,
): Promise<void> {
  const finished = await d.waitForEvent('FlemmaRequestFinished');
  expect(finished.data).toMatchObject({ bufnr: buf, status: 'completed' });
  expect(await d.lines(buf)).toEqual([
    '@You:',
    question,
    '',
    '@Assistant:',
    answer,
    '',
    '@You:',
    '',
  ]);
}

/**
 * Sends the current chat with `keys` and holds its reply streaming, `Streaming` on its last line
 * (the chat is busy until the stream returned is finished).
 */
export async function holdReply(
  d: Driver,
  f: FakeProvider,
  keys = '<C-]>',
): Promise<ScriptedStream> {
  await d.press(keys);
  const stream = await anthropicStream(await f.nextRequest({ path: '/v1/messages' }));
  await stream.text('Streaming');
  await d.waitUntil('return vim.fn.getline("$") == "Streaming"');
  return stream;
}

/** Waits until the last line of `buf` reads `text` (a stream's text has reached it). */
export function waitForLastLine(d: Driver, buf: number, text: string): Promise<void> {
  return d.waitUntil(
    'local bufnr, text = ... return vim.api.nvim_buf_get_lines(bufnr, -2, -1, false)[1] == text',
    { args: [buf, text] },
  );
}

/**
 * `<C-]>`, and the model answers with `text` and `calls`; `<C-]>` again writes their placeholders
 * and stops for approval. Resolves with the chat's lines then.
 */
export async function untilApproval(
  d: Driver,
  f: FakeProvider,
  text: string,
  calls: ScriptedCall[],
): Promise<string[]> {
  await d.press('<C-]>');
  await anthropicReply(await f.nextRequest({ path: MESSAGES }), text, calls);
  await d.waitForEvent('FlemmaRequestFinished');
  await d.press('<C-]>');
  await d.waitForEvent('FlemmaApprovalNeeded');
  return d.lines();
}

/** Rewrites the fence line of the result block of `id` (the current buffer) into `replacement`. */
export async function editFence(d: Driver, id: string, ...replacement: string[]): Promise<void> {
  const fence = fenceLineOf(await d.lines(), id);
  await d.lua(
    'local first, last, lines = ... vim.api.nvim_buf_set_lines(0, first, last, false, lines)',
    fence - 1,
    fence,
    replacement,
  );
}

/** Once `gated_tool` (`GATED_TOOL`) runs, makes it answer with `text`. */
export async function finishGated(d: Driver, text: string): Promise<void> {
  await d.waitUntil('return _G.finish_gated ~= nil');
  await d.lua('_G.finish_gated(...)', text);
}

/**
 * Opens the chat `name` holding `lines` in the session's Neovim, `:trust`s it with `trust`, waits
 * for the host's boot with `boot`, then `:Flemma send`. Resolves with its buffer (`s.buf` too).
 */
export async function sendChat(
  s: Session,
  name: string,
  lines: string[],
  steps: { trust?: boolean; boot?: boolean } = {},
): Promise<number> {
  s.buf = await s.d.openChat(name, lines);
  if (steps.trust === true) await s.d.command('trust');
  if (steps.boot === true) await s.d.waitForEvent('FlemmaBootComplete');
  await s.d.command('Flemma send');
  return s.buf;
}

/** `:Flemma status`, and the lines of its report buffer (`flemma://status`) once written. */
export async function statusLines(d: Driver): Promise<string[]> {
  await d.command('Flemma status');
  await d.waitUntil(
    'local b = vim.fn.bufnr("flemma://status") return b ~= -1 and vim.api.nvim_buf_line_count(b) > 1',
  );
  return d.lua<string[]>(
    'return vim.api.nvim_buf_get_lines(vim.fn.bufnr("flemma://status"), 0, -1, false)',
  );
}

/** Starts a session: the fake provider, Neovim, the project's files, the setup, the chat. */
export async function launch(options: LaunchOptions = {}): Promise<Session> {
  const fake =
    options.provider === false ? undefined : (options.provider ?? (await startFakeProvider()));
  const ownsProvider = options.provider === undefined;
  let driver: Driver | undefined;
  try {
    driver = await startDriver({ ...driverOptions(options), env: environment(options, fake) });
    for (const [path, content] of Object.entries(options.files ?? {}))
      driver.writeFile(path, content);
    const setup = setupLua(options, fake);
    if (setup !== undefined) await driver.lua(setup);
    const session = new Session(driver, fake, ownsProvider);
    const chat = options.chat;
    if (chat !== undefined) {
      const { name, lines, boot } = Array.isArray(chat) ? { name: 'test.chat', lines: chat } : chat;
      await session.open(name, lines, boot ?? true);
    }
    return session;
  } catch (error) {
    await driver?.quit();
    if (ownsProvider) await fake?.close();
    throw error;
  }
}

/** Runs `fn` with a session started with `options`; Neovim and the fake always stop after. */
export async function withDriver<T>(
  options: LaunchOptions,
  fn: (session: Session) => Promise<T>,
): Promise<T> {
  const session = await launch(options);
  try {
    return await fn(session);
  } finally {
    await session.close();
  }
}

/**
 * A `launch` for one test file: every session it starts is closed after its test (in the order
 * started), pass or fail. Call it at the top level of the file.
 */
export function launcher(): (options?: LaunchOptions) => Promise<Session> {
  const running: Session[] = [];
  afterEach(async () => {
    for (const session of running.splice(0)) await session.close();
  });
  return async (options = {}) => {
    const session = await launch(options);
    running.push(session);
    return session;
  };
}

/**
 * `launcher()` for a test of Neovim alone (no fake provider, no provider environment): the
 * `launch` it returns resolves with the driver; each Neovim quits after its test.
 */
export function neovimLauncher(): (options?: LaunchOptions) => Promise<Driver> {
  const launchSession = launcher();
  return async (options = {}) => (await launchSession({ ...options, provider: false })).d;
}
