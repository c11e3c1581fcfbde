// The public face of chats held in files (docs/tasks.md, "Chats on files"): what the `task` tool
// and `flemma run` code against. A file chat is a `.chat` file the host's own loop runs (the
// session of `<C-]>` with autopilot), served by the file adapter (`./adapter.ts`) under a virtual
// buffer number that Neovim never uses.
import type { ConfigData } from '../core/config/config.js';
import type { SwitchedOption } from '../core/config/switched.js';
import type { RequestRecord } from '../core/usage/session.js';
import type {
  DeclarativeSettings,
  FrontmatterAnswer,
  FrontmatterRequest,
  TrustState,
} from '../editor/protocol/wire.js';

export type { FrontmatterAnswer, FrontmatterRequest, TrustState };

/** Buffer numbers of file chats (and their sinks) start here: Neovim never gets this far. */
export const FILE_BUFNR_BASE = 2 ** 30;

/** Whether `bufnr` is a file chat's (or a file chat's sink's), not a Neovim buffer's. */
export function isFileBufnr(bufnr: unknown): bufnr is number {
  return typeof bufnr === 'number' && bufnr >= FILE_BUFNR_BASE;
}

/**
 * One option set over the base configuration, under the file's frontmatter (a profile's model
 * or tools, `flemma run --model`): a path and its value, as `:Flemma switch` records them (null
 * clears it). Not judged by trust: the creator sets it, not the file.
 */
export type ConfigLayer = readonly SwitchedOption[];

export interface OpenOptions {
  /**
   * The trust decision of the chat, GIVEN by its creator (a child takes its parent's, `flemma
   * run` its own): the file never widens it. `true`/`false` stand for `{trusted, why: 'given'}`.
   */
  trust: TrustState | boolean;
  /** Options over the base configuration, under the frontmatter. */
  configLayer?: ConfigLayer;
  /**
   * The chat that made this one (a buffer's or another file chat's bufnr): its environment and
   * editor facts (working directory, sandbox switch, Neovim's directories) are the child's.
   */
  parent?: number;
  /** The working directory of the chat's tools when there is no parent (default: the host's). */
  cwd?: string;
}

/** A chat held in a file, as the host runs it. */
export interface FileChat {
  /** Its virtual buffer number: every service of the host knows it by this. */
  readonly bufnr: number;
  /** The file's absolute path. */
  readonly path: string;
  /** The chat's lines as the host holds them (what the file has, or gets at the next write). */
  lines(): readonly string[];
}

export interface RunOptions {
  /**
   * The most requests the run makes (a reply that asks for tools past it ends the run
   * `max_turns`, its calls not run); autopilot's own `max_turns` applies too.
   */
  maxTurns?: number;
  /** Stop once the run's own requests cost this many USD (checked after each reply). */
  maxCost?: number;
  /** Aborting cancels the run as `<C-c>` does (the partial reply kept, marked as aborted). */
  signal?: AbortSignal;
  /** Autopilot drives the run (the only mode for now: the tool loop goes on by itself). */
  autopilot?: true;
  /** Told of the run's progress as it happens. */
  onEvent?: (event: RunEvent) => void;
}

/** What a run did, in numbers (every outcome carries it). */
export interface RunTotals {
  /** Requests sent. */
  turns: number;
  /** USD of the run's requests that have a price. */
  cost: number;
  inputTokens: number;
  outputTokens: number;
}

/** How a run ended. */
export type RunOutcome = RunTotals &
  (
    | { kind: 'done'; /** The last `@Assistant:` message's text. */ text: string }
    | { kind: 'approval'; /** The calls that wait for the user. */ calls: WaitingCall[] }
    | { kind: 'max_turns' }
    | { kind: 'max_cost' }
    | { kind: 'error'; message: string }
    | { kind: 'cancelled' }
  );

export interface WaitingCall {
  id: string;
  name: string;
}

/** The run's progress, in order. */
export type RunEvent =
  | { type: 'request'; turn: number }
  | { type: 'text'; text: string }
  | { type: 'tool_started'; id: string; name: string }
  | { type: 'tool_finished'; id: string; name: string; status: 'success' | 'error' }
  | { type: 'usage'; request: RequestRecord; totals: RunTotals }
  | { type: 'attention'; reason: 'approval' | 'finished' | 'failed'; tools?: string[] }
  | { type: 'written'; path: string };

/** Evaluates a file chat's frontmatter (Lua or a custom language; JSON/YAML are read in TS). */
export type FrontmatterEvaluator = (
  chat: FileChat,
  request: FrontmatterRequest,
  trust: TrustState,
) => Promise<FrontmatterAnswer>;

/** Where a host with no Neovim gets what Neovim would give it. */
export interface HeadlessOptions {
  /** The base configuration (`setup()`'s, as `config.snapshot` sends it). */
  config: ConfigData;
  /** Lua or custom-language frontmatter; without it such a chat fails with a clear error. */
  evaluateFrontmatter?: FrontmatterEvaluator;
  /** Messages to the user (`Flemma: …` in Neovim); default: dropped. */
  notify?: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** The environment (default: `process.env`). */
  env?: Readonly<Record<string, string | undefined>>;
  /** The log file (default: none: errors go to stderr). */
  logFile?: string;
  /** Tools beyond the built-in ones, as `tools:define` would bring them from Lua's setup. */
  tools?: {
    /** JavaScript tool modules (`tools.modules`, paths). */
    modules?: string[];
    /** `tools.declarative`: the directories of YAML/JSON tools (expanded) and the env allowlist. */
    declarative?: DeclarativeSettings;
  };
}

/** Every chat held in a file that the host runs (`Host.files`). */
export interface FileChats {
  /**
   * Read `path` (made, empty, if missing) and serve it under a new virtual bufnr. Refused (an
   * Error saying why) while a Neovim buffer shows the file with unsaved changes, or a buffer's
   * reply streams into it; the same path opened twice gives the same chat.
   */
  open(path: string, options: OpenOptions): Promise<FileChat>;
  /**
   * Run the chat as `<C-]>` with autopilot: send, run the auto-approved calls, send again, until
   * the model's turn ends or something stops it (see `RunOutcome`). One run per chat at a time.
   */
  run(chat: FileChat, options?: RunOptions): Promise<RunOutcome>;
  /**
   * Decide on a call that waits (a run ended `approval`), as `:Flemma tool:approve` / `reject` do
   * in a buffer: its placeholder's status is set (a rejection's `message` is its result). The
   * next `run` runs the approved call (or sends the rejection) and goes on.
   */
  decide(
    chat: FileChat,
    toolId: string,
    status: 'approved' | 'rejected',
    message?: string,
  ): Promise<void>;
  /** `<C-c>` for the chat: its request or running tool is cancelled, its run ends `cancelled`. */
  cancel(chat: FileChat): Promise<void>;
  /** Forget the chat (after its run): its file stays as written. */
  close(chat: FileChat): Promise<void>;
  get(bufnr: number): FileChat | undefined;
  /** The chat open on `path` (absolute or relative to the host's directory), if any. */
  find(path: string): FileChat | undefined;
}
