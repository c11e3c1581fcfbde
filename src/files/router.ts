// The router in front of the Lua bridge: a file chat's buffer, progress and send methods go to the
// file adapter (`./adapter.ts`), everything else (hooks, messages to the user, Lua tools, Lua
// resolvers) to Neovim when there is one. With no Neovim (`flemma run`), what only Neovim can do
// fails at once with an error naming it; what has a plain answer (the configuration, the
// environment, messages) is answered here.
import type { ConfigData } from '../core/config/config.js';
import { LuaBridge, type RpcPort } from '../editor/lua.js';
import type { LineListener, LineSource } from '../editor/documents.js';
import type {
  AfterResult,
  ApplyBatch,
  ApplyBatchAnswer,
  BufferResult,
  HostToLuaMethod,
  LuaAnswer,
  LuaNotification,
  LuaParams,
  LuaRequest,
} from '../editor/protocol/index.js';
import { isFileBufnr } from './api.js';
import { FILE_METHODS, type FileAdapter } from './adapter.js';

/** What a host with no Neovim answers itself. */
export interface Headless {
  config: ConfigData;
  env: Readonly<Record<string, string | undefined>>;
  notify(level: 'info' | 'warn' | 'error', message: string): void;
}

/** A Neovim that is not there: nothing reaches it. */
const NO_NEOVIM: RpcPort = {
  request: () => Promise.reject(new Error('no Neovim')),
  notify: () => undefined,
};

/** The bufnr a method's params name (a hook's in its data). */
function bufnrOf(method: HostToLuaMethod, params: unknown): number | undefined {
  const record = params as { bufnr?: unknown; data?: { bufnr?: unknown } } | null;
  const bufnr = method === 'hooks.emit' ? record?.data?.bufnr : record?.bufnr;
  return typeof bufnr === 'number' ? bufnr : undefined;
}

export class RoutedBridge extends LuaBridge {
  constructor(
    private readonly files: FileAdapter,
    neovim: RpcPort | undefined,
    private readonly headless: Headless | undefined,
    /** A notification the adapter failed to take (nothing waits for its answer). */
    private readonly failed: (method: string, error: unknown) => void,
  ) {
    super(neovim ?? NO_NEOVIM);
  }

  /** Whether the adapter answers this method. */
  private forFiles(method: HostToLuaMethod, params: unknown): boolean {
    if (!FILE_METHODS.has(method)) return false;
    const bufnr = bufnrOf(method, params);
    return bufnr !== undefined && isFileBufnr(bufnr);
  }

  /** A file chat's hooks are heard by its runner, then go where hooks go. */
  private heard(method: HostToLuaMethod, params: unknown): void {
    if (method === 'hooks.emit') {
      const bufnr = bufnrOf(method, params);
      if (bufnr !== undefined && isFileBufnr(bufnr)) this.files.heard(bufnr, method, params);
    } else if (method === 'notify') {
      const { message, level } = params as LuaParams<'notify'>;
      if (level === 'error' || level === 'warn') this.files.noticed(message);
    }
  }

  override call<M extends LuaRequest>(method: M, params: LuaParams<M>): Promise<LuaAnswer<M>> {
    this.heard(method, params);
    if (method === 'buffer.apply_batch') {
      return this.applyBatch(params as ApplyBatch);
    }
    if (this.forFiles(method, params)) {
      return this.files.answer(method, params);
    }
    if (method === 'template.render') {
      // Lua renders a file chat's templates with its file and its given trust.
      const render = params as LuaParams<'template.render'>;
      const file = this.files.templateFile(render.bufnr);
      if (file !== undefined) return this.route(method, { ...render, file });
    }
    return this.route(method, params);
  }

  /** A method with no file chat's bufnr: Neovim, or the answer of a host with no Neovim. */
  private route<M extends LuaRequest>(method: M, params: LuaParams<M>): Promise<LuaAnswer<M>> {
    if (this.headless !== undefined) {
      try {
        return Promise.resolve(answerWithoutNeovim(this.headless, method, params) as LuaAnswer<M>);
      } catch (error) {
        return Promise.reject(error instanceof Error ? error : new Error(String(error)));
      }
    }
    return super.call(method, params);
  }

  override notify<M extends LuaNotification>(method: M, params: LuaParams<M>): void {
    this.heard(method, params);
    if (this.forFiles(method, params)) {
      this.files.answer(method, params).catch((error: unknown) => {
        this.failed(method, error);
      });
      return;
    }
    if (this.headless === undefined) {
      super.notify(method, params);
      return;
    }
    try {
      answerWithoutNeovim(this.headless, method, params);
    } catch (error) {
      this.failed(method, error);
    }
  }

  /** Each buffer's edits where the buffer is; the calls that wait for them likewise. */
  private async applyBatch(params: ApplyBatch): Promise<ApplyBatchAnswer> {
    const batches = Array.isArray(params) ? params : params.batches;
    const after = Array.isArray(params) ? undefined : params.after;
    const results: (BufferResult | undefined)[] = batches.map((batch) =>
      isFileBufnr(batch.bufnr) ? this.files.applyBatch(batch) : undefined,
    );
    const theirs = batches.filter((batch) => !isFileBufnr(batch.bufnr));
    // What rides with the edits is heard as it would be on its own (a file chat's hooks).
    for (const [method, callParams] of after ?? [])
      this.heard(method as HostToLuaMethod, callParams);
    const mine = (after ?? []).map(([method, callParams]) =>
      this.forFiles(method as HostToLuaMethod, callParams),
    );
    const theirCalls = (after ?? []).filter((_, index) => mine[index] !== true);
    let answer: ApplyBatchAnswer = [];
    if (theirs.length > 0 || theirCalls.length > 0) {
      if (this.headless !== undefined) {
        const headless = this.headless;
        answer = {
          results: theirs.map(() => ({ status: 'gone', done: 0 })),
          after: theirCalls.map(([method, callParams]) => {
            try {
              const value = answerWithoutNeovim(headless, method as HostToLuaMethod, callParams);
              return { ok: true, value: value ?? null };
            } catch (error) {
              return { ok: false, error: error instanceof Error ? error.message : String(error) };
            }
          }),
        };
      } else {
        answer = await super.call(
          'buffer.apply_batch',
          theirCalls.length === 0 ? theirs : { batches: theirs, after: theirCalls },
        );
      }
    }
    const theirResults = Array.isArray(answer) ? answer : answer.results;
    let next = 0;
    const merged: BufferResult[] = results.map(
      (result) => result ?? theirResults[next++] ?? { status: 'retry' as const, done: 0 },
    );
    if (after === undefined) return merged;
    const theirAfter = Array.isArray(answer) ? [] : answer.after;
    // Neovim held its calls back (an edit is retried): every call waits for the next batch.
    if (theirCalls.length > 0 && theirAfter === null) return { results: merged, after: null };
    let other = 0;
    const afterResults: AfterResult[] = [];
    // A notice runs only when every edit of the files' batches was applied (as Lua's do).
    const applied = results.every(
      (result) =>
        result === undefined || (result.status === 'ok' && result.conflicts === undefined),
    );
    for (const [index, [method, callParams, notice]] of after.entries()) {
      if (mine[index] !== true) {
        afterResults.push(
          theirAfter?.[other++] ?? { ok: false, error: `${method} gave no answer` },
        );
        continue;
      }
      if (notice === true && !applied) {
        afterResults.push({ ok: false, held: true });
        continue;
      }
      try {
        const value = await this.files.answer(method as HostToLuaMethod, callParams as never);
        afterResults.push({ ok: true, value: value ?? null });
      } catch (error) {
        afterResults.push({
          ok: false,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
    return { results: merged, after: afterResults };
  }
}

/** The document store's lines: a file chat's from the adapter, a buffer's from Neovim. */
export function routedLines(files: FileAdapter, neovim: LineSource | undefined): LineSource {
  return {
    attach: (bufnr: number, listener: LineListener) => {
      if (isFileBufnr(bufnr)) return files.attach(bufnr, listener);
      return neovim === undefined ? Promise.resolve(false) : neovim.attach(bufnr, listener);
    },
    detach: (bufnr: number) => {
      if (isFileBufnr(bufnr)) return files.detach(bufnr);
      return neovim === undefined ? Promise.resolve() : neovim.detach(bufnr);
    },
  };
}

/** What Lua would need to run: named for the error. */
function needsNeovim(method: HostToLuaMethod, params: unknown): string {
  const record = (params ?? {}) as { name?: unknown; tool_name?: unknown };
  const name = typeof record.name === 'string' ? record.name : '';
  if (method.startsWith('tools.')) return `Lua tool ${name} needs Neovim`;
  if (method === 'approval.resolve') return `Lua approval resolver ${name} needs Neovim`;
  if (method === 'approval.config_decision')
    return 'a Lua tools.auto_approve function needs Neovim';
  if (method === 'secrets.resolve') return `Lua credential resolver for ${name} needs Neovim`;
  if (method.startsWith('sandbox.')) return `Lua sandbox backend ${name} needs Neovim`;
  if (method === 'template.render') return 'templates ({{ }}, {% %}, include()) need Neovim';
  if (method === 'slash.resolve') return 'their registry needs Neovim';
  return `${method} needs Neovim`;
}

/** A method with no file chat's bufnr, in a host with no Neovim. */
function answerWithoutNeovim(
  headless: Headless,
  method: HostToLuaMethod,
  params: unknown,
): unknown {
  switch (method) {
    case 'config.snapshot':
      return { generation: 1, config: headless.config };
    case 'env.first': {
      for (const name of (params as LuaParams<'env.first'>).names) {
        const value = headless.env[name];
        if (typeof value === 'string' && value.trim() !== '') return { name, value };
      }
      return null;
    }
    case 'notify': {
      const { message, level } = params as LuaParams<'notify'>;
      headless.notify(level ?? 'info', message);
      return null;
    }
    case 'hooks.emit':
    case 'notify.retract':
    case 'log.secrets':
    case 'mcp.catalog':
    case 'files.changed':
    case 'tools.cancel':
      return null;
    case 'files.status':
      return { modified: false };
    default:
      throw new Error(needsNeovim(method, params));
  }
}
