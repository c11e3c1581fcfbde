// `flemma run` as a user runs it: the built dist/cli.js as a child process (npm test builds it
// first), in a home of its own (state, config, cache), against a fake provider on 127.0.0.1.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { execa } from 'execa';
import { afterEach } from 'vitest';
import { ROOT } from './paths.js';

export const CLI = join(ROOT, 'dist', 'cli.js');

/** A place for one run: its chat file, its home and the environment pointing there. */
export interface CliHome {
  dir: string;
  chat: string;
  env: Record<string, string>;
  /** The chat file's text now. */
  text(): string;
  /** Writes `$XDG_CONFIG_HOME/flemma/config.json`. */
  config(options: Record<string, unknown>): void;
}

/**
 * A home in `root`: the project `root/project` (the working directory) with `chat.chat` holding
 * `lines`, and the user's directories beside it (not in the project: a project holding the
 * cache or the home is judged otherwise); Anthropic reached at `url`.
 */
export function cliHome(root: string, lines: readonly string[], url: string): CliHome {
  const dir = join(root, 'project');
  mkdirSync(dir);
  const chat = join(dir, 'chat.chat');
  writeFileSync(chat, `${lines.join('\n')}\n`);
  const env = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: join(root, 'home'),
    XDG_STATE_HOME: join(root, 'state'),
    XDG_CONFIG_HOME: join(root, 'config'),
    XDG_DATA_HOME: join(root, 'data'),
    XDG_CACHE_HOME: join(root, 'cache'),
    ANTHROPIC_API_KEY: 'sk-ant-cli-test-0123456789',
    ANTHROPIC_BASE_URL: url,
  };
  return {
    dir,
    chat,
    env,
    text: () => readFileSync(chat, 'utf8'),
    config(options) {
      mkdirSync(join(env.XDG_CONFIG_HOME, 'flemma'), { recursive: true });
      writeFileSync(join(env.XDG_CONFIG_HOME, 'flemma', 'config.json'), JSON.stringify(options));
    },
  };
}

const running = new Set<{ kill(): boolean }>();

// A child a failing test left waiting does not outlive it.
afterEach(() => {
  for (const child of running) child.kill();
  running.clear();
});

/**
 * Starts `flemma <args>` in the home's directory with its environment alone (its result: exit
 * code, stdout, stderr; never throws).
 */
export function flemma(home: Pick<CliHome, 'dir' | 'env'>, args: readonly string[]) {
  const child = execa(process.execPath, [CLI, ...args], {
    cwd: home.dir,
    env: home.env,
    extendEnv: false,
    reject: false,
    stdin: 'ignore',
  } as const);
  running.add(child);
  return child;
}

/** Resolves with the first line of the child's stdout that `match` accepts. */
export function stdoutLine(
  child: { stdout: Readable },
  match: (line: string) => boolean,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      const found = lines.find(match);
      if (found !== undefined) resolve(found);
    });
    child.stdout.once('end', () => {
      reject(new Error('stdout ended before the line came'));
    });
  });
}
