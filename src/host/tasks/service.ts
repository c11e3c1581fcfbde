// The `task` tool's runs (docs/tasks.md): a call's child chat is written beside its parent
// (`notes.chat` → `notes.tasks/01-find-callers.chat`), opened as a chat on a file with the
// parent's trust, approval and sandbox narrowed by its profile (src/core/tasks/narrow.ts), run by
// the host's own loop until its turn ends, and its final message and path are the call's result.
//
// Decisions:
// - At most `tools.task.max_concurrent` children of one chat run at once; more calls wait for a
//   slot here. They take no slot of the executor's `tools.max_concurrent` (a child's own tools
//   run in the child's chat, so a parent's slots held by waiting tasks could never free).
// - The parent's cancel (its call's signal: `<C-c>`, `:Flemma tool:cancel`) cancels the child
//   run; the child's file keeps what it wrote, its reply marked as aborted.
// - The child's cost is the host session's, as every request's: the parent's
//   `limits.max_session_cost` is handed down, and the child's own cap is the lower of its
//   profile's `max_cost` and what the session may still spend.
// - A child's call that waits is decided by the user, never here: `<M-CR>` on the parent's
//   `task` call only shows it (the child's file at the call, its diff); `:Flemma tool:approve` /
//   `reject` on the `task` call decide all the child's waiting calls, a decision in the child's
//   buffer (or its diff) the one call. The decision is applied to the file chat when it is read
//   again, never written into the child's buffer (which would then hold unsaved changes).
import { mkdir } from 'node:fs/promises';
import { readdirSync, realpathSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import type { Config } from '../../core/config/config.js';
import { autopilotSettings } from '../../core/loop/autopilot.js';
import {
  type ChildEnd,
  childChatText,
  nextTaskNumber,
  taskFileName,
  taskResult,
  taskSlug,
  tasksDirName,
} from '../../core/tasks/files.js';
import { type ChildPlan, childLayer, narrowChild } from '../../core/tasks/narrow.js';
import {
  type AgentProfile,
  DEFAULT_AGENT,
  type ProfileSet,
  disabledProfiles,
  mergeProfiles,
  profilesFromConfig,
} from '../../core/tasks/profiles.js';
import type { TaskInput } from '../../core/tools/definitions/task.js';
import type { ToolContext, ToolOutcome } from '../../core/tools/registry.js';
import { writeFirstFree } from '../../core/util/files.js';
import type * as Files from '../../files/api.js';
import type { BufferSettings } from '../buffer-settings.js';
import type { FileLogger } from '../log.js';
import { ProjectAgents } from './project.js';

export interface TaskServiceDeps {
  files: Pick<Files.FileChats, 'open' | 'run' | 'close'>;
  /** The parent chat's settings (its configuration as its frontmatter left it, its trust). */
  parent: (bufnr: number) => Promise<BufferSettings | undefined>;
  /** The tools a chat's request offers. */
  offered: (config: Config, cwd: string) => string[];
  /** What the host's session has cost so far (every chat's requests, children's too). */
  spent: () => number;
  logger: Pick<FileLogger, 'info' | 'warn'>;
  /** A child's progress: its state line in the parent's preview of its call (status.ts). */
  progress?: (parent: number, toolId: string, event: Files.RunEvent, child: ChildOf) => void;
  /** A child's run ended (the parent's preview of its call goes; `:Flemma tasks` keeps it). */
  ended?: (parent: number, toolId: string, end: ChildEnd, child: ChildOf) => void;
  /** Decide the calls `ids` that wait in the child chat `child` (as the user would). */
  decide?: (child: number, ids: string[], decision: ChildDecision) => Promise<void>;
  /**
   * `<M-CR>` on the parent's `task` call whose child waits: the child's file is shown at its
   * first waiting call (and that call's diff, when it changes a file); nothing is decided.
   */
  show?: (parent: number, path: string, calls: readonly Files.WaitingCall[]) => void;
}

/** The user's decision on a child's waiting calls. */
export type ChildDecision =
  | { status: 'approved'; /** The call as the user changed it in its diff. */ use?: ChildUse }
  | { status: 'rejected'; message?: string };

/** A call's name and input. */
export interface ChildUse {
  name: string;
  input: Record<string, unknown>;
}

/** A child as its parent names it: its profile, its file relative to the parent's directory. */
export interface ChildOf {
  profile: string;
  file: string;
}

/** A chat's children waiting for a slot, and how many run. */
interface Slots {
  running: number;
  waiting: (() => void)[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `tools.task.max_concurrent` of a configuration's data (at least 1; 4 when unset). */
function maxConcurrent(data: Readonly<Record<string, unknown>>): number {
  const tools = isRecord(data['tools']) ? data['tools'] : {};
  const task = isRecord(tools['task']) ? tools['task'] : {};
  const value = task['max_concurrent'];
  return typeof value === 'number' && value >= 1 ? Math.floor(value) : 4;
}

/** `tools.task.project_agents`: the project's profiles are read. */
function projectAgents(data: Readonly<Record<string, unknown>>): boolean {
  const tools = isRecord(data['tools']) ? data['tools'] : {};
  const task = isRecord(tools['task']) ? tools['task'] : {};
  return task['project_agents'] === true;
}

function endOf(outcome: Files.RunOutcome): ChildEnd {
  switch (outcome.kind) {
    case 'done':
      return { kind: 'done', text: outcome.text };
    case 'approval':
      return { kind: 'approval', tool: outcome.calls.map((call) => call.name).join(', ') };
    case 'max_turns':
      return { kind: 'max_turns', turns: outcome.turns };
    case 'max_cost':
      return { kind: 'max_cost', cost: outcome.cost };
    case 'cancelled':
      return { kind: 'cancelled' };
    case 'error':
      return { kind: 'error', message: outcome.message };
  }
}

/** A task call whose child waits: its file, the calls that wait, and what lets it go on. */
interface Waiting {
  path: string;
  calls: readonly Files.WaitingCall[];
  /** The user decided the calls `ids` (of `calls`): the child is read again and goes on. */
  go: (ids: string[], decision: ChildDecision) => void;
}

/** The decision the child goes on with, and on which of its calls. */
interface Decided {
  ids: string[];
  decision: ChildDecision;
}

/** The same file, links and `..` resolved where the file exists. */
function samePath(a: string, b: string): boolean {
  const real = (path: string): string => {
    try {
      return realpathSync(path);
    } catch {
      return resolve(path);
    }
  };
  return real(a) === real(b);
}

/** Resolves as cancelled once `signal` aborts. */
function whenAborted(signal: AbortSignal): Promise<ChildEnd> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve({ kind: 'cancelled' });
    else {
      signal.addEventListener(
        'abort',
        () => {
          resolve({ kind: 'cancelled' });
        },
        { once: true },
      );
    }
  });
}

/** The folder of a parent chat's tasks: `notes.chat` → `notes.tasks/`. */
function tasksDir(parentFile: string): string {
  return join(dirname(parentFile), tasksDirName(basename(parentFile)));
}

export class TaskService {
  private readonly slots = new Map<number, Slots>();
  private readonly project = new ProjectAgents();

  constructor(private readonly deps: TaskServiceDeps) {}

  /** The profiles a chat may use: built-in, setup's (or its frontmatter's), the project's. */
  profiles(config: Pick<Config, 'data'>, cwd: string | undefined): ProfileSet {
    const project =
      cwd !== undefined && projectAgents(config.data)
        ? this.project.read(cwd)
        : { profiles: [], problems: [] };
    return mergeProfiles(profilesFromConfig(config.data), project, disabledProfiles(config.data));
  }

  /** Run one `task` call to its end. */
  async run(input: TaskInput, ctx: ToolContext): Promise<ToolOutcome> {
    const parentFile = ctx.__filename;
    if (parentFile === undefined) {
      return {
        ok: false,
        error: 'The chat has no file yet: write it, then its tasks go beside it',
      };
    }
    // Its file's number is taken now, before anything is awaited: tasks started at once are
    // numbered in the order of their calls.
    const number = this.reserveNumber(tasksDir(parentFile));
    const settings = await this.deps.parent(ctx.bufnr);
    if (settings === undefined) return { ok: false, error: 'The chat is not loaded' };
    const { config } = settings;
    const cwd = settings.facts.cwd;
    const profile = this.profileFor(input.agent, config, cwd);
    if (typeof profile === 'string') return { ok: false, error: profile };
    const plan = this.plan(profile, config, cwd);
    if (plan.tools.length === 0) {
      return {
        ok: false,
        error: `The profile '${profile.name}' has none of this chat's tools (it lists ${profile.tools.join(', ')})`,
      };
    }
    if (plan.withheld.length > 0) {
      this.deps.logger.info(
        `task ${ctx.tool_id}: ${plan.withheld.join(', ')} of profile ${profile.name} withheld (not the parent's)`,
      );
    }
    await this.slot(ctx.bufnr, maxConcurrent(config.data), ctx.signal);
    try {
      if (ctx.signal.aborted) return { ok: false, error: 'The task was cancelled' };
      return await this.runChild(input, ctx, { parentFile, settings, profile, plan, number });
    } finally {
      this.release(ctx.bufnr);
    }
  }

  private profileFor(name: string | undefined, config: Config, cwd: string): AgentProfile | string {
    const set = this.profiles(config, cwd);
    for (const problem of set.problems) this.deps.logger.warn(`agent profiles: ${problem}`);
    const wanted = name ?? DEFAULT_AGENT;
    const found = set.profiles.find((profile) => profile.name === wanted);
    if (found !== undefined) return found;
    const names = set.profiles.map((profile) => profile.name).join(', ');
    return `Unknown agent profile '${wanted}' (this chat has: ${names === '' ? 'none' : names})`;
  }

  private plan(profile: AgentProfile, config: Config, cwd: string): ChildPlan {
    const limit = config.maxSessionCost;
    return narrowChild(profile, {
      tools: this.deps.offered(config, cwd),
      provider: config.provider,
      ...(config.model === undefined ? {} : { model: config.model }),
      maxTurns: autopilotSettings(config.tools).maxTurns,
      ...(limit === undefined ? {} : { budgetLeft: limit - this.deps.spent() }),
    });
  }

  private async runChild(
    input: TaskInput,
    ctx: ToolContext,
    parts: {
      parentFile: string;
      settings: BufferSettings;
      profile: AgentProfile;
      plan: ChildPlan;
      number: number;
    },
  ): Promise<ToolOutcome> {
    const { parentFile, settings, profile, plan } = parts;
    const dir = tasksDir(parentFile);
    const text = childChatText(
      plan,
      { parent: relative(dir, parentFile), toolId: ctx.tool_id },
      input.prompt,
      profile.system,
    );
    const path = await this.writeChild(dir, taskSlug(input.name, input.prompt), text, parts.number);
    const shown = relative(dirname(parentFile), path);
    const child: ChildOf = { profile: profile.name, file: shown };
    const open: Files.OpenOptions = {
      trust: settings.trust,
      configLayer: childLayer(plan, settings.config.data, settings.approval),
      parent: ctx.bufnr,
    };
    // What the child may still do: its limits hold across the runs an approval splits it into.
    const left = { turns: plan.maxTurns, cost: plan.maxCost };
    const options = (): Files.RunOptions => ({
      maxTurns: left.turns,
      ...(left.cost === undefined ? {} : { maxCost: left.cost }),
      signal: ctx.signal,
      autopilot: true,
      onEvent: (event) => {
        // A wait is told once the run has ended with its placeholders written (`approval`).
        if (event.type !== 'attention') this.deps.progress?.(ctx.bufnr, ctx.tool_id, event, child);
      },
    });
    const closed = (async (): Promise<ChildEnd> => {
      let chat: Files.FileChat | undefined;
      try {
        chat = await this.deps.files.open(path, open);
        for (;;) {
          const outcome = await this.deps.files.run(chat, options());
          if (outcome.kind !== 'approval' || ctx.signal.aborted) return endOf(outcome);
          left.turns = Math.max(1, left.turns - outcome.turns);
          if (left.cost !== undefined) left.cost = Math.max(0, left.cost - outcome.cost);
          // While it waits, the file is the user's (open in a buffer, edited, saved); the parent's
          // call stays running. Decided (from the parent or the child's buffer), the child is read
          // again, takes the decision and goes on.
          await this.deps.files.close(chat);
          chat = undefined;
          const decided = await this.approval(ctx, path, outcome.calls, child);
          if (decided === undefined) return { kind: 'cancelled' };
          chat = await this.deps.files.open(path, open);
          await this.deps.decide?.(chat.bufnr, decided.ids, decided.decision);
        }
      } catch (error) {
        return { kind: 'error', message: (error as Error).message };
      } finally {
        // The child is forgotten once its run is over (its file stays), also after a cancel.
        if (chat !== undefined) await this.deps.files.close(chat);
      }
    })();
    // A cancel answers at once: the child's run stops meanwhile and marks its reply aborted.
    const end = await Promise.race([closed, whenAborted(ctx.signal)]);
    this.deps.ended?.(ctx.bufnr, ctx.tool_id, end, child);
    return taskResult(end, shown);
  }

  /** Task calls whose child waits for an approval, by `<parent>:<tool id>`. */
  private readonly waiting = new Map<string, Waiting>();

  /**
   * `<M-CR>` on the parent's `task` call whose child waits shows the child's waiting calls
   * (`show`); on one of the waiting calls in the child's own buffer (its file `file`) it approves
   * that call and the child goes on. Whether the call was one.
   */
  approveWaiting(bufnr: number, toolId: string, file?: string | null): boolean {
    const parent = this.waiting.get(`${String(bufnr)}:${toolId}`);
    if (parent !== undefined) {
      this.deps.show?.(bufnr, parent.path, parent.calls);
      return true;
    }
    return this.decideWaiting(bufnr, toolId, file, { status: 'approved' });
  }

  /**
   * A decision (`:Flemma tool:approve`, `tool:reject`, the diff's keys) on the parent's `task`
   * call whose child waits decides all the child's waiting calls; on one of the waiting calls in
   * the child's own buffer (its file `file`), that call. Whether the call was one.
   */
  decideWaiting(
    bufnr: number,
    toolId: string,
    file: string | null | undefined,
    decision: ChildDecision,
  ): boolean {
    const parent = this.waiting.get(`${String(bufnr)}:${toolId}`);
    if (parent !== undefined) {
      parent.go(
        parent.calls.map((call) => call.id),
        decision,
      );
      return true;
    }
    const child = this.childWaiting(toolId, file);
    if (child === undefined) return false;
    child.go([toolId], decision);
    return true;
  }

  /** Whether `toolId` is a waiting call of a child (the file of its buffer is then needed). */
  waitsInChild(toolId: string): boolean {
    return [...this.waiting.values()].some((entry) =>
      entry.calls.some((call) => call.id === toolId),
    );
  }

  private childWaiting(toolId: string, file: string | null | undefined): Waiting | undefined {
    if (file == null) return undefined;
    return [...this.waiting.values()].find(
      (entry) => samePath(entry.path, file) && entry.calls.some((call) => call.id === toolId),
    );
  }

  /**
   * The child's `calls` wait: the parent's preview says so and the user is called; resolves with
   * the user's decision, undefined when the call is cancelled first.
   */
  private approval(
    ctx: ToolContext,
    path: string,
    calls: readonly Files.WaitingCall[],
    child: ChildOf,
  ): Promise<Decided | undefined> {
    const names = [...new Set(calls.map((call) => call.name))];
    // The preview says what waits, and the parent's attention is called (status.ts); the
    // approved calls starting in the child take the line back to running.
    const waits: Files.RunEvent = { type: 'attention', reason: 'approval', tools: names };
    this.deps.progress?.(ctx.bufnr, ctx.tool_id, waits, child);
    const key = `${String(ctx.bufnr)}:${ctx.tool_id}`;
    return new Promise((resolve) => {
      const cancel = (): void => {
        this.waiting.delete(key);
        resolve(undefined);
      };
      ctx.signal.addEventListener('abort', cancel, { once: true });
      this.waiting.set(key, {
        path,
        calls,
        go: (ids, decision) => {
          ctx.signal.removeEventListener('abort', cancel);
          this.waiting.delete(key);
          resolve({ ids, decision });
        },
      });
    });
  }

  /**
   * The number of a task's file in `dir`: one more than the highest there and than those handed
   * out already (kept, so that tasks started at once take one number each whatever their names).
   * Synchronous, so that the calls of one reply are numbered in their order.
   */
  private reserveNumber(dir: string): number {
    let existing: string[] = [];
    try {
      existing = readdirSync(dir);
    } catch {
      // No folder yet: the first task makes it.
    }
    const number = Math.max(nextTaskNumber(existing), (this.numbers.get(dir) ?? 0) + 1);
    this.numbers.set(dir, number);
    return number;
  }

  /**
   * Writes a child's text as `NN-slug.chat` of `dir` (made when missing), from its number `first`
   * on to the first free one, and returns its path, never replacing a file.
   */
  private async writeChild(
    dir: string,
    slug: string,
    text: string,
    first: number,
  ): Promise<string> {
    await mkdir(dir, { recursive: true });
    const numbers = this.numbers;
    function* names(): Generator<string, never> {
      for (let number = first; ; number++) {
        numbers.set(dir, Math.max(numbers.get(dir) ?? 0, number));
        yield taskFileName(number, slug);
      }
    }
    return writeFirstFree(dir, 'task', names(), text);
  }

  /** The last number handed out in each tasks folder. */
  private readonly numbers = new Map<string, number>();

  /** Wait for one of the chat's `limit` slots (or the call's cancel). */
  private slot(bufnr: number, limit: number, signal: AbortSignal): Promise<void> {
    const slots = this.slots.get(bufnr) ?? { running: 0, waiting: [] };
    this.slots.set(bufnr, slots);
    if (slots.running < limit) {
      slots.running += 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const start = (): void => {
        signal.removeEventListener('abort', cancel);
        slots.running += 1;
        resolve();
      };
      const cancel = (): void => {
        slots.waiting = slots.waiting.filter((entry) => entry !== start);
        slots.running += 1;
        resolve();
      };
      slots.waiting.push(start);
      signal.addEventListener('abort', cancel, { once: true });
    });
  }

  private release(bufnr: number): void {
    const slots = this.slots.get(bufnr);
    if (slots === undefined) return;
    slots.running -= 1;
    const next = slots.waiting.shift();
    if (next !== undefined) next();
    else if (slots.running === 0) this.slots.delete(bufnr);
  }
}
