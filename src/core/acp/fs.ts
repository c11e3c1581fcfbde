// The pure parts of serving an agent's file and terminal requests (docs/agents.md, "Files and
// terminals"): the lines `fs/read_text_file` asks for, the argv of `terminal/create`, and the
// terminal's output kept within its byte limit.
//
// Decisions:
// - `line` is the 1-based first line, `limit` the most lines; lines are split on `\n` and a final
//   newline does not start another line (as the `read` tool counts them). A selection that does
//   not end the text keeps its lines' newlines; one that reaches the end ends as the text does.
// - A terminal's command with no arguments is a shell command line (`<shell> -c <command>`, the
//   `bash` tool's argv); with arguments it is a program and its arguments, run through the same
//   shell with `exec "$0" "$@"`, so nothing of them is parsed by the shell. Either way stderr goes
//   into stdout's pipe from the start, so the output keeps the order it was written in.
// - The output kept is at most the limit in bytes (the agent's `outputByteLimit`, never more than
//   a `bash` result's limit), cut from its beginning at a character boundary.
import { MAX_BYTES, MAX_LINES, truncateTail } from '../tools/truncate.js';
import { bashArgv } from '../tools/definitions/bash.js';

/** A request that cannot be served: the JSON-RPC error the agent gets. */
export class ServeError extends Error {
  override name = 'ServeError';
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** JSON-RPC: the request's parameters are wrong. */
export const INVALID_PARAMS = -32602;
/** ACP: the resource (the file) does not exist. */
export const NOT_FOUND = -32002;
/** JSON-RPC: the request failed (refused by the policy, or an error while serving it). */
export const FAILED = -32603;

/** The path, when it is absolute (ACP's rule); else the error. */
export function absolutePath(path: unknown, what = 'path'): string {
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new ServeError(
      INVALID_PARAMS,
      `${what} must be an absolute path, got ${JSON.stringify(path)}`,
    );
  }
  return path;
}

function count(value: number | null | undefined, what: string): number | undefined {
  if (value === null || value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 1) {
    throw new ServeError(
      INVALID_PARAMS,
      `${what} must be a positive integer, got ${String(value)}`,
    );
  }
  return value;
}

/** The lines `line` (1-based, default 1) on of `text`, at most `limit` of them. */
export function selectLines(text: string, line?: number | null, limit?: number | null): string {
  const first = count(line, 'line');
  const most = count(limit, 'limit');
  if (first === undefined && most === undefined) return text;
  const lines = text.split('\n');
  // A final newline ends the last line; it does not start one.
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  const start = (first ?? 1) - 1;
  const end = most === undefined ? lines.length : Math.min(lines.length, start + most);
  if (start >= lines.length) return '';
  const chosen = lines.slice(start, end).join('\n');
  return end < lines.length || text.endsWith('\n') ? `${chosen}\n` : chosen;
}

/** The argv of a terminal's command (see the decisions above). */
export function terminalArgv(shell: string, command: string, args: readonly string[]): string[] {
  if (args.length === 0) return bashArgv(shell, command);
  return [shell, '-c', 'exec 2>&1\nexec "$0" "$@"', command, ...args];
}

/** The bytes a terminal keeps: the agent's limit, within a `bash` result's. */
export function outputLimit(requested: number | null | undefined): number {
  if (typeof requested !== 'number' || !Number.isFinite(requested) || requested < 0) {
    return MAX_BYTES;
  }
  return Math.min(Math.floor(requested), MAX_BYTES);
}

/** A terminal's output: the last `limit` bytes of what the command wrote. */
export class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  /** Bytes dropped from the beginning. */
  private dropped = 0;

  constructor(private readonly limit: number) {}

  push(chunk: Uint8Array): void {
    this.chunks.push(Buffer.from(chunk));
    this.size += chunk.length;
    if (this.size <= this.limit * 2) return;
    this.compact();
  }

  private compact(): void {
    const all = Buffer.concat(this.chunks, this.size);
    const keep = all.subarray(Math.max(0, all.length - this.limit));
    this.dropped += all.length - keep.length;
    this.chunks = [Buffer.from(keep)];
    this.size = keep.length;
  }

  /** The output kept (cut at a character boundary), and whether anything was cut. */
  read(): { output: string; truncated: boolean } {
    if (this.size > this.limit) this.compact();
    let bytes = Buffer.concat(this.chunks, this.size);
    let cut = this.dropped > 0;
    if (cut) {
      // A character cut at the front: its continuation bytes go too.
      let skip = 0;
      while (skip < bytes.length && skip < 3 && ((bytes[skip] ?? 0) & 0xc0) === 0x80) skip++;
      bytes = bytes.subarray(skip);
    }
    const text = bytes.toString('utf8');
    const lines = truncateTail(text, { maxLines: MAX_LINES, maxBytes: this.limit });
    cut ||= lines.truncated;
    return { output: lines.truncated ? lines.content : text, truncated: cut };
  }
}
