// Fakes for the tool executor's ports (src/host/tools/executor.ts and its parts), so that its
// unit tests run without Neovim: what the executor tells the editor, the hooks, the user and the
// result writer is recorded in order; a placeholder write settles when the test says.
import { type Config, parseConfig } from '../../src/core/config/config.js';
import { noSandbox } from '../../src/core/tools/context.js';
import {
  ToolRegistry,
  type ToolDefinition,
  type ToolOutcome,
} from '../../src/core/tools/registry.js';
import type { SandboxState } from '../../src/core/tools/sandbox/index.js';
import type { TruncateFs } from '../../src/core/tools/truncate.js';
import { SchemaValidator } from '../../src/core/tools/validate.js';
import { Redactor } from '../../src/core/secrets/redact.js';
import type { HookEmitter } from '../../src/editor/hooks.js';
import type { LuaBridge } from '../../src/editor/lua.js';
import type { WriteScheduler } from '../../src/editor/writequeue.js';
import type { EditorFacts } from '../../src/editor/protocol/wire.js';
import type { ExecutorDeps } from '../../src/host/tools/executor.js';

/** Everything the fakes saw, in order: `kind name detail`. */
export class Journal {
  readonly entries: string[] = [];
  readonly saved: { path: string; data: string }[] = [];

  add(entry: string): void {
    this.entries.push(entry);
  }

  /** The entries that start with `prefix`. */
  of(prefix: string): string[] {
    return this.entries.filter((entry) => entry.startsWith(prefix));
  }
}

export const FACTS: EditorFacts = {
  cwd: '/work',
  filename: '/work/a.chat',
  sandbox_override: null,
};

export function config(tools: Record<string, unknown> = {}): Config {
  return parseConfig({ tools: { show_spinner: true, ...tools } });
}

/** A promise with its resolve, for a port that settles when the test says. */
export function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve: (value: T) => void = () => undefined;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** A promise that settles when the test opens it. */
export interface Gate {
  promise: Promise<void>;
  resolve(): void;
}

export function gate(): Gate {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** A tool whose calls return when the test says (`release(id, outcome)`). */
export class HeldTool {
  readonly started: string[] = [];
  readonly signals = new Map<string, AbortSignal>();
  private readonly waiting = new Map<string, (outcome: ToolOutcome) => void>();
  private readonly startWaiters: (() => void)[] = [];

  constructor(readonly name: string) {}

  def(): ToolDefinition {
    return {
      name: this.name,
      description: 'a tool the test holds',
      inputSchema: { type: 'object', properties: { n: { type: 'number' } } },
      execute: (_input, ctx) =>
        new Promise<ToolOutcome>((resolve) => {
          this.started.push(ctx.tool_id);
          this.signals.set(ctx.tool_id, ctx.signal);
          this.waiting.set(ctx.tool_id, resolve);
          for (const waiter of this.startWaiters.splice(0)) waiter();
        }),
    };
  }

  release(id: string, outcome: ToolOutcome = { ok: true, output: `done ${id}` }): void {
    this.waiting.get(id)?.(outcome);
    this.waiting.delete(id);
  }

  /** Settles once `count` calls have started. */
  async startedCount(count: number): Promise<void> {
    while (this.started.length < count) {
      await new Promise<void>((resolve) => this.startWaiters.push(resolve));
    }
  }
}

/** A tool that answers at once. */
export function quickTool(name: string, output = `${name} ran`): ToolDefinition {
  return {
    name,
    description: 'a quick tool',
    inputSchema: { type: 'object' },
    execute: () => Promise.resolve({ ok: true, output }),
  };
}

export interface FakePorts {
  deps: ExecutorDeps;
  journal: Journal;
  registry: ToolRegistry;
  /** Settles the placeholder write of `id` (`ensurePlaceholder`). */
  place(id: string, row?: number): void;
  /** The `git status` note of the turn; undefined: none is being taken. */
  note: Gate | undefined;
}

/** What the executor tells the editor, the hooks, the user and the log, written down. */
function recorders(
  journal: Journal,
): Pick<ExecutorDeps, 'editor' | 'writes' | 'autopilotArmed' | 'hooks' | 'notify' | 'logger'> {
  const say = (prefix: string) => (name: string, data?: unknown) => {
    journal.add(
      data === undefined ? `${prefix} ${name}` : `${prefix} ${name} ${JSON.stringify(data)}`,
    );
  };
  return {
    editor: { notify: say('lua') } as Pick<LuaBridge, 'notify'>,
    // What rides with a result's write reaches Lua as a notification does: written down alike.
    writes: {
      noticeAfterWrites: (method: string, params: unknown) => {
        say('lua')(method, params);
        return Promise.resolve(true);
      },
    } as Pick<WriteScheduler, 'noticeAfterWrites'>,
    autopilotArmed: () => false,
    hooks: {
      post: say('hook'),
      emit: (name: string, data: unknown) => {
        say('hook')(name, data);
        return Promise.resolve();
      },
    } as Pick<HookEmitter, 'post' | 'emit'>,
    notify: { info: say('notify info'), warn: say('notify warn'), error: say('notify error') },
    logger: { error: say('log error'), info: say('log info'), redactor: new Redactor() },
  };
}

/** The result writer: results written down; placeholders placed on demand. */
function fakeResults(
  journal: Journal,
  placements: Map<string, (row: number | undefined) => void>,
): ExecutorDeps['results'] {
  return {
    inject: (_bufnr, id, outcome, _replace, queued) => {
      journal.add(`inject ${id} ${JSON.stringify(outcome)}`);
      // Its edit is queued now: what follows it rides with it (`writes` below).
      queued?.();
      return Promise.resolve(true);
    },
    held: () => Promise.resolve(),
    fresh: () => Promise.resolve(undefined),
    ensurePlaceholder: (_bufnr, id) => {
      journal.add(`placeholder ${id}`);
      return new Promise<number | undefined>((resolve) => {
        placements.set(id, (row) => {
          journal.add(`placed ${id}`);
          resolve(row);
        });
      });
    },
  };
}

function fakeCatalogue(
  registry: ToolRegistry,
  builtin: ReadonlySet<string>,
): ExecutorDeps['catalogue'] {
  return {
    registry,
    middleware: { chain: () => [] },
    isBuiltin: (name: string) => builtin.has(name),
    originOf: (name: string) => (builtin.has(name) ? 'builtin' : 'lua'),
    filterRefusal: () => undefined,
    policyBlocks: () => false,
  } as unknown as ExecutorDeps['catalogue'];
}

function fakeUndo(
  journal: Journal,
  enabled: boolean,
  fake: Pick<FakePorts, 'note'>,
): NonNullable<ExecutorDeps['undo']> {
  return {
    limits: () => ({ enabled, max_bytes: 1000, max_total_bytes: 10000, max_age_days: 1 }),
    noted: () => fake.note?.promise ?? Promise.resolve(),
    record: (_bufnr, _facts, id, entries) => {
      journal.add(`record ${id} ${String(entries.entries.size)}`);
      return Promise.resolve();
    },
  };
}

/** The executor's ports as fakes; `builtin` tools count as Flemma's own. */
export function fakePorts(
  tools: ToolDefinition[],
  options: { builtin?: string[]; sandbox?: Partial<SandboxState>; undo?: boolean } = {},
): FakePorts {
  const journal = new Journal();
  const registry = new ToolRegistry();
  for (const def of tools) registry.register(def);
  const placements = new Map<string, (row: number | undefined) => void>();
  const truncateFs: TruncateFs = {
    writeFile: (path, data) => {
      journal.saved.push({ path, data: Buffer.from(data).toString() });
      return Promise.resolve();
    },
    tmpdir: () => '/tmp',
  };
  const fake: FakePorts = {
    journal,
    registry,
    note: undefined,
    place: (id, row = 3) => {
      placements.get(id)?.(row);
    },
    deps: undefined as unknown as ExecutorDeps,
  };
  fake.deps = {
    ...recorders(journal),
    validator: new SchemaValidator(),
    sandbox: () =>
      Promise.resolve({ access: noSandbox, enabled: false, rwPaths: [], ...options.sandbox }),
    catalogue: fakeCatalogue(registry, new Set(options.builtin ?? [])),
    lua: {
      setSandbox: (id, state) => {
        journal.add(`sandbox ${id} ${state === undefined ? 'off' : 'on'}`);
      },
      runsInLua: () => false,
    },
    results: fakeResults(journal, placements),
    undo: fakeUndo(journal, options.undo === true, fake),
    truncateFs,
    home: '/home/u',
    env: {},
  };
  return fake;
}
