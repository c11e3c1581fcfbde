// The data that travels between the Lua shim and the host, as it travels (snake_case keys, `nil`
// as null, an empty Lua table as `[]` or `{}`). The methods that carry it are in `./index.ts`.
import type { Diagnostic } from '../../core/chat/ast.js';
import type { ConfigOp } from '../../core/config/frontmatter.js';
import type { ConfigData } from '../../core/config/config.js';
import type { SwitchedOption } from '../../core/config/switched.js';
import type { PersonalityPart } from '../../core/tools/registry.js';
import type { DirectorySource } from '../../core/tools/declarative/index.js';
import type { EditorDirs } from '../../core/tools/sandbox/sensitive.js';
import type { TemplateSegment } from '../../core/chat/render.js';

/** `host:info` and `ping`. */
export interface HostInfo {
  pid: number;
  version: string;
  source_hash: string;
  node: string;
  uptime_ms: number;
  log_file: string | null;
  actions: string[];
  /** Resident memory now and its peak so far, in bytes. */
  memory: { rss: number; max_rss: number };
  /**
   * A request or a tool runs (a background job too), or autopilot is about to go on: a restart
   * now would cut something off (Lua waits for this to be false to load a new build).
   */
  busy: boolean;
}

/** A tool as Lua describes it in `tools:define` (functions stay in Neovim). */
export interface LuaToolSpec {
  name: string;
  description: string;
  input_schema: Record<string, unknown> | unknown[];
  strict?: boolean;
  async?: boolean;
  enabled?: boolean;
  label?: string;
  capabilities?: string[];
  has_execute?: boolean;
  has_preview?: boolean;
  personalities?: Record<string, PersonalityPart>;
  /** The tool's text for the system prompt (CodeCompanion's `system_prompt`, evaluated). */
  system_prompt?: string;
  /** The tool's approval default: a boolean, or `"function"` (asked in Lua per call). */
  require_approval?: boolean | 'function';
  /** The tool formats the text of a rejection (`format_rejected`, CodeCompanion `output.rejected`). */
  has_rejected?: boolean;
  /** "Always" is per command string (CodeCompanion `opts.require_cmd_approval`). */
  require_cmd_approval?: boolean;
  /** YOLO mode does not approve it (CodeCompanion `opts.allowed_in_yolo_mode = false`). */
  never_auto_approve?: boolean;
  /** The tool has a `cmd_string(input)` (CodeCompanion `output.cmd_string`). */
  has_cmd_string?: boolean;
  /** The tool formats the text of a cancellation (`format_cancelled`, `output.cancelled`). */
  has_cancelled?: boolean;
}

/** A Lua tool's result (`tools:result`): the `{success, output, error}` of docs/tools.md, "Lua". */
export interface LuaToolResult {
  success?: unknown;
  output?: unknown;
  error?: unknown;
}

/** `tools.declarative` as Lua sends it with `tools:define` (paths already expanded). */
export interface DeclarativeSettings {
  dirs: DirectorySource[];
  /** Environment variables `${NAME}` may read in the definitions. */
  env: string[];
}

/** An approval resolver as Lua describes it in `approval:define`. */
export interface LuaResolverSpec {
  name: string;
  priority?: number;
  description?: string;
}

/** A credential resolver as Lua describes it in `secrets:define`. */
export interface LuaSecretsSpec {
  name: string;
  priority?: number;
}

/** A Lua credential resolver's answer to `secrets.resolve`. */
export interface LuaSecretsAnswer {
  supported?: boolean;
  value?: string;
  ttl?: number;
  diagnostics?: string[];
  error?: string;
}

/** A Lua approval decision: `{decision}` (nil passes) or `{error}`. */
export interface LuaDecision {
  decision?: unknown;
  error?: unknown;
}

/** Neovim's view of a buffer that tools and the sandbox need (`tools.facts`). */
export interface EditorFacts {
  cwd: string;
  filename: string | null;
  sandbox_override: boolean | null;
  /** Neovim's own directories (`stdpath()`): sensitive places. */
  editor_dirs?: EditorDirs;
  /** Neovim's server addresses (`serverlist()`): hidden from sandboxed commands. */
  servers?: string[];
}

/**
 * Lua's trust decision about a buffer (`lua/flemma/config/trust.lua`): `why` is `authored` (no file
 * yet, or written from scratch here), `allowed` (`:trust`), `untrusted` (never trusted),
 * `denied` (`:trust ++deny`) or `changed` (its frontmatter, templates or file references changed
 * outside this Neovim since it was trusted).
 */
export interface TrustState {
  trusted: boolean;
  why: string;
  /**
   * Only for a buffer that is not trusted: the statuses of its placeholders as they were read
   * from disk (`approved`, `denied`, `rejected`), by tool id, that are not the user's — a
   * placeholder that still holds one is judged as if pending (docs/approval.md).
   */
  placeholders?: Record<string, string>;
}

/** What the host sends Lua about a buffer's frontmatter: Lua code to run, or JSON's operations to check. */
export type FrontmatterRequest =
  { code: string; line: number; custom?: string } | { ops: ConfigOp[] };

export type FrontmatterAnswer =
  | { ops: ConfigOp[] | Record<string, never>; variables?: Record<string, unknown> | unknown[] }
  | { error: string }
  | { untrusted: string };

/** The question of `editor.context` (also carried by `send.finish`). */
export interface ContextParams {
  bufnr: number;
  names: readonly string[];
  /** The configuration's generation the host holds: Lua sends the configuration only when it changed. */
  generation?: number;
  frontmatter?: FrontmatterRequest;
  origins?: boolean;
  /** `trustDigest` of the buffer's tree, for Lua's trust decision. */
  digest?: string;
}

/** Lua's answer to `editor.context`. */
export interface ContextAnswer {
  /** The generation of Lua's configuration (bumped by `setup()` and every run-time change). */
  generation?: number;
  /** The configuration snapshot, when the host's generation is not Lua's. */
  config?: ConfigData;
  facts: EditorFacts;
  env: Record<string, string> | unknown[];
  frontmatter?: FrontmatterAnswer;
  origins?: Record<string, string> | unknown[];
  trust?: Partial<TrustState>;
  /** The chat's own `:Flemma switch`: the options it set, applied under the frontmatter. */
  switched?: SwitchedOption[];
}

/** Lua's answer to `config.snapshot`. */
export interface ConfigAnswer {
  generation?: number;
  config?: ConfigData;
}

/** Message markers and diagnostics of a parsed buffer, in Neovim's 0-based rows (`chat.structure`). */
export interface StructurePayload {
  bufnr: number;
  tick: number;
  markers: { row: number; role: string; end_row: number }[];
  diagnostics: {
    lnum: number;
    end_lnum: number;
    severity: Diagnostic['severity'];
    code: string;
    message: string;
  }[];
}

/** A trust problem shown on a buffer line (`frontmatter.diagnostics`). */
export interface TrustDiagnostic {
  /** 0-based line. */
  lnum: number;
  severity: 'error' | 'warning';
  message: string;
}

/** One job of `template.render`: a message's segments (only the expressions when `spliced`). */
export type TemplateJob =
  { spliced: true; segments: TemplateSegment[] } | { segments: TemplateSegment[] };

/** Insert text at a stream's anchor (created at the end of the buffer on first use). */
export interface AppendOp {
  op: 'append';
  stream: string;
  text: string;
}

/**
 * Replace rows [start, end) (0-based, end exclusive) with `lines`, but only if those rows still
 * hold `expect`; otherwise the edit is refused as a conflict and nothing is written.
 */
export interface SetLinesOp {
  op: 'set_lines';
  start: number;
  end: number;
  expect: string[] | null;
  lines: string[];
}

/** Forget a stream's anchor. */
export interface CloseStreamOp {
  op: 'close_stream';
  stream: string;
}

export type WriteOp = AppendOp | SetLinesOp | CloseStreamOp;

/** One buffer's edits in `buffer.apply_batch`. */
export interface BufferBatch {
  bufnr: number;
  tick: number | null;
  ops: WriteOp[];
}

/** What became of one buffer's edits. */
export interface BufferResult {
  status: 'ok' | 'retry' | 'gone' | 'error';
  /** How many ops of the batch were handled (applied or refused as conflicts). */
  done: number;
  /** Whether the buffer changed (by someone else) since the changedtick the batch carried. */
  edited?: boolean;
  tick?: number;
  conflicts?: number[];
  message?: string;
}

/** A Lua call made after a batch's edits: its answer, or its error. */
export interface AfterResult {
  ok: boolean;
  value?: unknown;
  error?: string;
  /** A notice that did not run: an edit of its batch was not applied. */
  held?: boolean;
}

/** `buffer.apply_batch`: the edits alone, or with the calls that wait for them. */
export type ApplyBatch = BufferBatch[] | { batches: BufferBatch[]; after: AfterCallWire[] };

/**
 * A call that waits for a batch's edits, `[method, params]`, or a notice, `[method, params, true]`,
 * which runs only when every edit of the batch was applied (else it is `held`).
 */
export type AfterCallWire = [string, unknown] | [string, unknown, true];

export type ApplyBatchAnswer =
  BufferResult[] | { results: BufferResult[]; after: AfterResult[] | null };

/** `buffer:definition` and `buffer:hover`: a position in a chat buffer and where references start. */
export interface NavigationParams {
  bufnr: number;
  /** 0-based row. */
  row: number;
  /** 0-based byte column. */
  col: number;
  /** The buffer's name (`nvim_buf_get_name`), empty for a buffer without one. */
  file: string;
  /** Neovim's current directory (references of a buffer without a name start there). */
  cwd: string;
  /** `gf`: only file references and `include()` count; `null` when there is none. */
  files_only: boolean;
}

/** `tools:truncate`: a Lua tool's `ctx.truncate.truncate_head` / `truncate_tail`. */
export interface LuaTruncateParams {
  text: string;
  from: 'head' | 'tail';
  max_lines?: number;
  max_bytes?: number;
}

/** `tools:truncate`'s answer, as a Lua tool reads it; absent fields are nil in Lua. */
export interface LuaTruncation {
  content: string;
  truncated: boolean;
  truncated_by?: 'lines' | 'bytes';
  total_lines: number;
  total_bytes: number;
  shown_lines: number;
  shown_bytes: number;
  cut_line?: { line: number; line_bytes: number; kept_bytes: number };
  output_lines: number;
  output_bytes: number;
}

/** `tools:writable`: a Lua tool's `ctx.sandbox.is_path_writable`. */
export interface LuaWritableParams {
  path: string;
  base: string;
  /** The writable roots the call's context carried. */
  rw_paths: string[];
}

/** The limits every Lua tool's `ctx.truncate` shows, sent with each call's context. */
export interface LuaTruncateFacts {
  max_lines: number;
  max_bytes: number;
  head_cut_marker: string;
  tail_cut_marker: string;
}

/** Where a setting of a buffer comes from: its value and its layer (`frontmatter line 3`, …). */
export interface UsedSetting<T> {
  value: T;
  layer: string;
}

/** `chat:status`'s answer: the report, and the provider and model the buffer uses. */
export interface StatusAnswer {
  lines: string[];
  /** Absent when the buffer is not a chat. */
  used?: { provider: UsedSetting<string>; model: UsedSetting<string | null> };
}

/** `tools.cursor`: the cursor to `row`, or to `tool_id`'s result as `tools.cursor_after_result` (`mode`) says. */
export type CursorParams = { bufnr: number } & (
  { row: number } | { tool_id: string; mode: string }
);
