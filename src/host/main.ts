// Host entry: guard stdout, attach to Neovim over stdio, route every request and notification
// through the dispatch table, and exit when Neovim goes away.
import { rpcReader, rpcWriter, guardConsole, onChannelClosed } from './stdio-guard.js';
import { connect } from '../editor/client.js';
import { hostLogger } from './log.js';
import { dispatch } from './actions.js';
import { createHost } from './wiring.js';
import { CALL } from '../editor/protocol/index.js';
import { IDLE_MS, IdleWatch, warmWhenIdle } from './warmup.js';
import { trace } from '../editor/trace.js';

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// The client logs every incoming message at info level; keep that out of the log by default.
// NOTE: `level` must tell the truth: at 'debug' the client deep-copies every response to log it.
// NOTE: only the client's own message text is kept, never the values that go with it: RPC
// payloads carry credentials (`env.first`) and whole buffers.
const clientText = (args: unknown[]): string => (typeof args[0] === 'string' ? args[0] : '(data)');
const clientLogger = {
  get level(): string {
    return hostLogger.level;
  },
  debug: (...args: unknown[]) => {
    hostLogger.debug('client', clientText(args));
  },
  info: (...args: unknown[]) => {
    hostLogger.debug('client', clientText(args));
  },
  warn: (...args: unknown[]) => {
    hostLogger.warn('client', clientText(args));
  },
  error: (...args: unknown[]) => {
    hostLogger.error('client', clientText(args));
  },
};

/**
 * Ends the host with `code`. While the channel's read waits in the thread pool (the start, until
 * the hand-over), Node's exit would wait for it, that is for Neovim's next bytes: the host
 * ends itself with SIGKILL then (src/host/channel.ts), once what it must keep is on disk.
 */
function exitHost(code: number): never {
  if (rpcReader.waiting) process.kill(process.pid, 'SIGKILL');
  process.exit(code);
}

process.on('uncaughtException', (error) => {
  hostLogger.error(
    'uncaught exception; the host exits and the shim restarts it on next use',
    error,
  );
  exitHost(70);
});
process.on('unhandledRejection', (reason) => {
  hostLogger.error('unhandled promise rejection', reason);
});

const nvim = connect({ reader: rpcReader, writer: rpcWriter }, clientLogger);
rpcReader.start();
// The client may have replaced `console`; point it back at the log.
guardConsole();

const ctx = createHost(nvim, hostLogger, hostLogger.path);
process.on('SIGTERM', () => {
  hostLogger.info('SIGTERM received; exiting');
  // Neovim stops its jobs this way when it quits (`:q!` too): what a reply has not yet on disk.
  ctx.recovery.flushSync();
  // Chats held in files: what was not written yet.
  ctx.fileAdapter.flushSync();
  exitHost(0);
});
// Written once the host is idle (or before any other line, or as it exits): the log's first line
// makes the redactor (its expressions, the environment's secrets), ~1.5 ms that neither the
// start nor the first requests wait for (docs/testing.md, "Where the time goes").
hostLogger.defer(
  'info',
  `host started (node ${process.version}, pid ${String(process.pid)}), ready ${(process.uptime() * 1000).toFixed(1)} ms after the process started`,
);

// Once idle after the start, the host warms what a first tool loop needs, then writes its code
// cache if it started without one (src/host/warmup.ts, src/host/boot.ts).
// A request or a tool call (not a background job) that runs keeps the host from being idle, even
// while Neovim is quiet: warming would take the thread from them.
const idle = new IdleWatch(
  IDLE_MS,
  () => ctx.sessions.any((session) => session.requestRunning) || ctx.executor.runsInForeground(),
);
void idle.idle().then(() => {
  hostLogger.flushDeferred();
  // The channel goes to Node's streams (loading them here, not in the start). The read that waits
  // in the pool hands over once it returns: asking Neovim for something brings its bytes now.
  rpcWriter.handOver();
  rpcReader.handOver();
  nvim.request('nvim_get_chan_info', [0]).catch(() => undefined);
});
void warmWhenIdle(idle, {
  validator: ctx.validator,
  sandboxBackends: ctx.sandboxBackends,
  probes: ctx.probes,
  tools: () => ctx.catalogue.registry.list(),
  sandbox: () => ctx.config.held()?.config.sandbox,
  done: () => {
    const saver = globalThis as { [key: symbol]: (() => void) | undefined };
    saver[Symbol.for('flemma.saveCodeCache')]?.();
    trace('warm:over');
  },
});

nvim.on(
  'request',
  (
    method: string,
    args: unknown[],
    response: { send(value: unknown, isError?: boolean): void },
  ) => {
    const answered = idle.request();
    dispatch(ctx, method, args[0] ?? null)
      .then(
        (result) => {
          response.send(result ?? null);
        },
        (error: unknown) => {
          hostLogger.warn(`request '${method}' failed`, error);
          response.send(describe(error), true);
        },
      )
      .finally(answered);
  },
);

nvim.on('notification', (method: string, args: unknown[]) => {
  idle.touch();
  if (method === CALL) {
    // Asynchronous request from Lua: [id, method, params]; the answer goes back as a Lua call.
    const [id, name, params] = args as [number, string, unknown];
    const answered = idle.request();
    dispatch(ctx, name, params ?? null)
      .then(
        (result) => {
          ctx.lua.notify('rpc.reply', { id, ok: true, result: result ?? null });
        },
        (error: unknown) => {
          hostLogger.warn(`call '${name}' failed`, error);
          ctx.lua.notify('rpc.reply', { id, ok: false, error: describe(error) });
        },
      )
      .finally(answered);
    return;
  }
  dispatch(ctx, method, args[0] ?? null).catch((error: unknown) => {
    hostLogger.warn(`notification '${method}' failed`, error);
  });
});

/** Neovim went away (it quit, or died): the host ends with it, which is no error. */
function neovimGone(why: string): void {
  hostLogger.info(`${why}; exiting`);
  // A reply streaming when Neovim died: what arrived since the record's last write.
  ctx.recovery.flushSync();
  ctx.fileAdapter.flushSync();
  exitHost(0);
}
nvim.on('disconnect', () => {
  neovimGone('Neovim disconnected');
});
// Neovim closed the channel before the host read the end of its stdin: a write found it gone.
onChannelClosed(() => {
  neovimGone('Neovim closed the channel');
});
