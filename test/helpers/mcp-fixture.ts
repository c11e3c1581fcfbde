// The MCP server fixture (test/fixtures/mcp-server.mjs) as tests use it: a control server on
// 127.0.0.1 that every fixture process greets when it serves (so a test waits for a start or a
// restart as an event) and through which the test stops it or lets it go on.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { ROOT } from './paths.js';

export const MCP_FIXTURE = join(ROOT, 'test/fixtures/mcp-server.mjs');

/** One fixture process that said hello. */
export interface FixtureProcess {
  pid: number;
  /** The HTTP port it serves on (0 for stdio). */
  port: number;
  /** Makes it exit (code 3), as a crashing server would. */
  exit(): void;
  /** Lets a held server (MCP_FIXTURE_HOLD=1) start serving. */
  go(): void;
  /** Adds a tool, a resource and a prompt, and notifies the clients that the lists changed. */
  change(): void;
  /** Settles when the process is gone (its control connection closed). */
  readonly exited: Promise<void>;
}

export interface McpControl {
  readonly port: number;
  /** The next fixture process to say hello (earlier unclaimed ones first). */
  next(timeoutMs?: number): Promise<FixtureProcess>;
  close(): Promise<void>;
}

export async function startMcpControl(): Promise<McpControl> {
  const arrived: FixtureProcess[] = [];
  const waiting: ((fixture: FixtureProcess) => void)[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    socket.setEncoding('utf8');
    let buffered = '';
    const exited = new Promise<void>((resolve) =>
      socket.on('close', () => {
        resolve();
      }),
    );
    socket.on('data', (text: string) => {
      buffered += text;
      const match = /^hello (\d+) (\d+)\n/.exec(buffered);
      if (match === null) return;
      buffered = '';
      const fixture: FixtureProcess = {
        pid: Number(match[1]),
        port: Number(match[2]),
        exit: () => socket.write('exit\n'),
        go: () => socket.write('go\n'),
        change: () => socket.write('change\n'),
        exited,
      };
      const waiter = waiting.shift();
      if (waiter === undefined) arrived.push(fixture);
      else waiter(fixture);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    next: (timeoutMs = 15_000) => {
      const first = arrived.shift();
      if (first !== undefined) return Promise.resolve(first);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          const index = waiting.indexOf(settle);
          if (index >= 0) waiting.splice(index, 1);
          reject(new Error(`timed out after ${String(timeoutMs)} ms waiting for an MCP fixture`));
        }, timeoutMs);
        const settle = (fixture: FixtureProcess): void => {
          clearTimeout(timer);
          resolve(fixture);
        };
        waiting.push(settle);
      });
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
}

/** Starts the fixture over Streamable HTTP (port 0: any free port); it greets `control`. */
export function spawnHttpFixture(
  control: McpControl,
  port = 0,
  env: Record<string, string> = {},
): ChildProcess {
  return spawn(process.execPath, [MCP_FIXTURE, '--http', String(port)], {
    env: { ...process.env, ...env, MCP_FIXTURE_CONTROL: String(control.port) },
    stdio: 'ignore',
  });
}
