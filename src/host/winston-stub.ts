// Stands in for `winston` inside the bundle. The Neovim client builds a winston logger on first
// use and points `console` at it; this stub sends those lines to the host log instead, and keeps
// winston (35–47 ms of start-up) out of the bundle.
import { format as formatText } from 'node:util';
import { hostLogger } from './log.js';

type Sink = (...args: unknown[]) => void;

function sink(level: 'debug' | 'info' | 'warn' | 'error'): Sink {
  return (...args: unknown[]) => {
    const [first, ...rest] = args;
    if (level === 'debug') {
      // NOTE: the client logs RPC payloads (credentials, whole buffers) at debug level: keep
      // only its message text.
      hostLogger.debug(typeof first === 'string' ? first : '(data)');
      return;
    }
    hostLogger[level](typeof first === 'string' ? formatText(first, ...rest) : formatText(...args));
  };
}

export function createLogger(): Record<string, unknown> {
  return {
    level: hostLogger.level,
    debug: sink('debug'),
    info: sink('info'),
    warn: sink('warn'),
    error: sink('error'),
    add: () => undefined,
  };
}

const identity = (): Record<string, unknown> => ({});
export const format = {
  combine: identity,
  splat: identity,
  timestamp: identity,
  printf: identity,
};

/** Transports are accepted and ignored: everything goes to the host log. */
function Transport(this: unknown): void {
  return undefined;
}
export const transports = { File: Transport, Console: Transport };

export default { createLogger, format, transports };
