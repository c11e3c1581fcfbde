// The task service over a fake of the chats on files: its slots (`tools.task.max_concurrent`),
// the numbers of children started at once, the child's layer and trust, and the calls it refuses.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/core/config/config.js';
import type { ToolContext } from '../../src/core/tools/registry.js';
import type { FileChat, OpenOptions, RunOptions, RunOutcome } from '../../src/files/api.js';
import type { BufferSettings } from '../../src/host/buffer-settings.js';
import { TaskService } from '../../src/host/tasks/service.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs();

const TOTALS = { turns: 1, cost: 0, inputTokens: 1, outputTokens: 1 };

/** Chats on files that run until the test ends each one. */
class FakeFiles {
  readonly opened: { path: string; options: OpenOptions }[] = [];
  readonly running: string[] = [];
  private readonly ends = new Map<string, (outcome: RunOutcome) => void>();
  private waiters: (() => void)[] = [];

  open(path: string, options: OpenOptions): Promise<FileChat> {
    this.opened.push({ path, options });
    return Promise.resolve({ bufnr: 2 ** 30 + this.opened.length, path, lines: () => [] });
  }

  run(chat: FileChat, _options?: RunOptions): Promise<RunOutcome> {
    this.running.push(chat.path);
    for (const waiter of this.waiters.splice(0)) waiter();
    return new Promise((resolve) => this.ends.set(chat.path, resolve));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  end(path: string, text: string): void {
    this.ends.get(path)?.({ ...TOTALS, kind: 'done', text });
  }

  async runningCount(count: number): Promise<void> {
    while (this.running.length < count) await new Promise<void>((r) => this.waiters.push(r));
  }
}

function service(dir: string, data: Record<string, unknown> = {}) {
  const files = new FakeFiles();
  const settings = {
    config: parseConfig({
      tools: { auto_approve: ['$default'], __list: ['read', 'grep'] },
      ...data,
    }),
    facts: { cwd: dir, filename: join(dir, 'notes.chat'), sandbox_override: null },
    trust: { trusted: false, why: 'untrusted' },
  } as unknown as BufferSettings;
  const tasks = new TaskService({
    files,
    parent: () => Promise.resolve(settings),
    offered: () => ['read', 'grep'],
    spent: () => 0,
    logger: { info: () => undefined, warn: () => undefined },
  });
  /** A call's context; `unsaved`: its chat has no file. */
  const ctx = (id: string, unsaved = false) =>
    ({
      bufnr: 3,
      tool_id: id,
      __filename: unsaved ? undefined : join(dir, 'notes.chat'),
      signal: new AbortController().signal,
    }) as unknown as ToolContext;
  return { files, tasks, ctx };
}

describe('the task service', () => {
  it('runs at most tools.task.max_concurrent children; each started at once takes its own number', async () => {
    const dir = tempDir('flemma-tasks-');
    const tools = {
      auto_approve: ['$default'],
      __list: ['read', 'grep'],
      task: { max_concurrent: 2 },
    };
    const { files, tasks, ctx } = service(dir, { tools });
    const child = (n: string): string => join(dir, 'notes.tasks', `${n}-find.chat`);
    const calls = ['a', 'b', 'c'].map((id) =>
      tasks.run({ prompt: `Find ${id}`, name: 'find' }, ctx(id)),
    );
    await files.runningCount(2);
    expect([...files.running].sort()).toEqual([child('01'), child('02')]);
    files.end(child('01'), 'A found.');
    await files.runningCount(3);
    expect(files.running[2]).toBe(child('03'));
    files.end(child('02'), 'B found.');
    files.end(child('03'), 'C found.');
    const results = await Promise.all(calls);
    expect(results.map((result) => (result.ok ? result.output : result.error)).sort()).toEqual([
      "A found.\n\nThe task's chat: notes.tasks/01-find.chat",
      "B found.\n\nThe task's chat: notes.tasks/02-find.chat",
      "C found.\n\nThe task's chat: notes.tasks/03-find.chat",
    ]);
    // The child has the parent's trust and runs under the parent's tools section, narrowed.
    const first = files.opened[0];
    expect(first?.options.trust).toEqual({ trusted: false, why: 'untrusted' });
    expect(first?.options.configLayer?.[0]).toEqual({
      path: ['tools'],
      value: { ...tools, __list: ['grep', 'read'] },
    });
    expect(readFileSync(child('01'), 'utf8')).toContain('"agent": "explorer"');
  });

  it('refuses a chat without a file, an unknown profile and a profile with none of the tools', async () => {
    const dir = tempDir('flemma-tasks-');
    const { tasks, ctx } = service(dir, {
      agents: { shell: { description: 'Shell.', tools: ['bash'] } },
    });
    expect(await tasks.run({ prompt: 'x' }, ctx('a', true))).toEqual({
      ok: false,
      error: 'The chat has no file yet: write it, then its tasks go beside it',
    });
    expect(await tasks.run({ prompt: 'x', agent: 'nope' }, ctx('b'))).toEqual({
      ok: false,
      error: "Unknown agent profile 'nope' (this chat has: explorer, shell)",
    });
    expect(await tasks.run({ prompt: 'x', agent: 'shell' }, ctx('c'))).toEqual({
      ok: false,
      error: "The profile 'shell' has none of this chat's tools (it lists bash)",
    });
  });
});
