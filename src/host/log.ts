// The host's file logger: appends lines to the log file the shim names (FLEMMA_LOG_FILE), or to
// stderr, which the shim also copies into that file. Never writes to stdout. Every line goes
// through the host's one redactor (src/core/secrets/redact.ts) on its way out, whoever wrote it.
import * as fs from 'node:fs';
import { inspect } from 'node:util';
import { type LogLevel, type Logger, LOG_LEVELS, isLogLevel } from '../core/log.js';
import { Redactor } from '../core/secrets/redact.js';

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

export interface FileLogger extends Logger {
  readonly path: string | undefined;
  level: LogLevel;
  /** What the log, the tool middleware's records and the audit file redact. */
  readonly redactor: Redactor;
  /** Write one line regardless of level (used for diverted stdout text). */
  raw(tag: string, text: string): void;
  /**
   * A line logged now but written later: before the next line, or at `flushDeferred` (its time
   * is now's). Writing the first line makes the redactor, which the host's start leaves for
   * when it is idle (src/host/main.ts).
   */
  defer(level: LogLevel, message: string): void;
  /** The deferred lines written now. */
  flushDeferred(): void;
}

function render(detail: unknown): string {
  if (detail instanceof Error) return detail.stack ?? `${detail.name}: ${detail.message}`;
  if (typeof detail === 'string') return detail;
  return inspect(detail, { depth: 4, breakLength: Infinity });
}

/**
 * A logger appending to `path` (or stderr). The redactor knows the secret-looking variables of
 * this process's environment from its first use on.
 */
export function createFileLogger(
  path: string | undefined,
  level: LogLevel,
  redactor: Redactor = new Redactor(),
): FileLogger {
  // Looked through at the first line (the host answers Neovim's first request before it).
  redactor.addEnvironmentOnFirstUse(process.env);
  let fd: number | undefined;
  if (path !== undefined && path !== '') {
    try {
      fd = fs.openSync(path, 'a');
    } catch {
      fd = undefined;
    }
  }
  const target = fd ?? 2;
  const write = (line: string): void => {
    try {
      // NOTE: synchronous on purpose: a line logged just before a crash must reach the file.
      fs.writeSync(target, line);
    } catch {
      // Nowhere left to report a failing log write.
    }
  };
  const stamp = (at = Date.now()): string => new Date(at).toISOString();
  const line = (at: number, tag: string, text: string): void => {
    const redacted = redactor.text(text);
    const body = redacted.endsWith('\n') ? redacted : redacted + '\n';
    write(`${stamp(at)} [host ${String(process.pid)}] ${tag} ${body}`);
  };
  let deferred: { at: number; tag: string; text: string }[] = [];
  const logger: FileLogger = {
    path: fd === undefined ? undefined : path,
    level,
    redactor,
    raw(tag, text) {
      logger.flushDeferred();
      line(Date.now(), tag, text);
    },
    defer(lvl, message) {
      if (RANK[lvl] < RANK[logger.level]) return;
      deferred.push({ at: Date.now(), tag: lvl.toUpperCase(), text: message });
    },
    flushDeferred() {
      if (deferred.length === 0) return;
      const lines = deferred;
      deferred = [];
      for (const item of lines) line(item.at, item.tag, item.text);
    },
    debug: (m, ...d) => {
      emit('debug', m, d);
    },
    info: (m, ...d) => {
      emit('info', m, d);
    },
    warn: (m, ...d) => {
      emit('warn', m, d);
    },
    error: (m, ...d) => {
      emit('error', m, d);
    },
  };
  function emit(lvl: LogLevel, message: string, details: unknown[]): void {
    if (RANK[lvl] < RANK[logger.level]) return;
    const extra = details.length > 0 ? ' ' + details.map(render).join(' ') : '';
    logger.raw(lvl.toUpperCase(), message + extra);
  }
  return logger;
}

function levelFromEnv(): LogLevel {
  const value = process.env['FLEMMA_LOG_LEVEL']?.toLowerCase();
  return isLogLevel(value) ? value : 'info';
}

/** The process-wide logger of the host, created on first import. */
export const hostLogger: FileLogger = createFileLogger(
  process.env['FLEMMA_LOG_FILE'],
  levelFromEnv(),
);

export { LOG_LEVELS };
