// `:Flemma compact` (docs/context.md, "Compaction"): the chat's own model, asked through the
// send's request builder (provider, model, credential, parameters as the buffer resolves them),
// summarises the conversation; the summary goes into a new `.chat` file beside the old one, which
// Lua then opens. The old file is never written: the buffer is only read. Cancel (`<C-c>`, which
// reaches the session) and every failure leave no new file and no temporary file.
import { basename, dirname } from 'node:path';
import { assemblePrompt } from '../core/chat/prompt.js';
import {
  type CarriedParts,
  carriedParts,
  compactedChat,
  compactPrompt,
  continuationNames,
  summaryRequest,
  waitingCall,
} from '../core/context/compact.js';
import {
  type ProviderAdapter,
  ProviderError,
  type ProviderEvent,
  type ProviderRequest,
} from '../core/provider/types.js';
import { ProgressThrottle, withRetries } from '../core/provider/retry.js';
import { writeFirstFree } from '../core/util/files.js';
import type { HostBase } from './base.js';
import type { PreparedRequest, RequestBuilder } from './send/request.js';
import type { UsageTracker } from './usage.js';

/** How a compaction ended; undefined when it never asked the model (it said why). */
export type CompactStatus = 'completed' | 'cancelled' | 'errored';

/** What Lua knows of the buffer when the command runs. */
export interface CompactTarget {
  /** The buffer's file, absolute. */
  file: string;
  /** The buffer has changes not written to `file`. */
  modified: boolean;
}

export interface CompactDeps {
  base: Pick<HostBase, 'lua' | 'notify' | 'documents' | 'hooks' | 'logger'>;
  requests: Pick<RequestBuilder, 'prepare'>;
  usage: Pick<UsageTracker, 'begin' | 'finish'>;
}

/** How the summary and its writing went (`Compactor.write`). */
interface Outcome {
  status: CompactStatus;
  /** The new chat's path; undefined when none was written. */
  written: string | undefined;
  /** Why it failed (when it errored). */
  failure: string | undefined;
  /** The model's warnings (a reply cut at the output limit). */
  warnings: string[];
}

/**
 * Writes `text` as the chat that continues `file`, beside it, under the first free name of
 * `continuationNames` (`writeFirstFree`: a temporary file linked to the name, never replacing a
 * file); returns its path.
 */
export async function writeContinuation(file: string, text: string): Promise<string> {
  const name = basename(file);
  return writeFirstFree(dirname(file), `${name}.compact`, continuationNames(name), text);
}

export class Compactor {
  constructor(private readonly deps: CompactDeps) {}

  private tell(level: 'info' | 'warn' | 'error', message: string): void {
    this.deps.base.notify[level](message);
  }

  /** Compact the buffer's chat; `controller` is the session's, which `<C-c>` aborts. */
  async run(
    bufnr: number,
    target: CompactTarget,
    controller: AbortController,
  ): Promise<CompactStatus | undefined> {
    if (!(await this.ready(bufnr))) return undefined;
    const prepared = await this.deps.requests.prepare(bufnr, undefined, undefined, 'summary');
    // The reason (a frontmatter error, no credential, …) was told.
    if (prepared === undefined) return undefined;
    if (controller.signal.aborted) return this.cancelled(bufnr);
    const request = summaryRequest(prepared.request, compactPrompt(prepared.config.data));
    const parts = carriedParts(prepared.state.document, prepared.state.lines);
    const outcome = await this.write(bufnr, target, controller, prepared, request, parts);
    const { status, written, warnings } = outcome;
    if (status === 'cancelled') return this.cancelled(bufnr);
    if (written === undefined) {
      this.tell('error', `compact failed, nothing written: ${outcome.failure ?? 'unknown error'}`);
      this.deps.base.hooks.post('compact:finished', { bufnr, status });
      return status;
    }
    await this.announce(bufnr, target, written, parts, warnings);
    return status;
  }

  /** Whether the chat can be compacted: it has messages, and no tool call waits for its result. */
  private async ready(bufnr: number): Promise<boolean> {
    const state = await this.deps.base.documents.attach(bufnr);
    if (state === undefined) return false;
    const prompt = assemblePrompt(state.document);
    if (prompt.messages.length === 0) {
      this.tell('warn', 'compact: nothing to compact yet');
      return false;
    }
    const waiting = waitingCall(prompt.pendingToolCalls);
    if (waiting !== undefined) {
      // The new chat could not carry the call (its result would answer nothing there).
      this.tell(
        'warn',
        `compact: ${waiting.name} (line ${String(waiting.line)}) waits for its result: run or reject it first`,
      );
      return false;
    }
    return true;
  }

  /**
   * The summary asked for (the indicator on meanwhile) and the new chat written beside the old
   * one: how it went, the new file (undefined when none was written), why it failed.
   */
  private async write(
    bufnr: number,
    target: CompactTarget,
    controller: AbortController,
    prepared: PreparedRequest,
    request: ProviderRequest,
    parts: CarriedParts,
  ): Promise<Outcome> {
    const { base } = this.deps;
    const meter = this.deps.usage.begin(bufnr, prepared);
    const row = Math.max(prepared.state.lines.length - 1, 0);
    await base.lua.call('progress.start', { bufnr, row });
    base.lua.notify('progress.update', { bufnr, phase: 'compacting', characters: 0 });
    let summary = '';
    const warnings: string[] = [];
    let status: CompactStatus = 'completed';
    let written: string | undefined;
    const aborted = (): boolean => controller.signal.aborted;
    let failure: string | undefined;
    try {
      summary = await this.summarise(
        bufnr,
        prepared.adapter,
        request,
        controller,
        (event) => {
          meter.observe(event);
        },
        () => prepared.reauthorize(),
        warnings,
      );
      // NOTE: read through a function: the cancel happens while the summary streams.
      if (aborted()) throw controller.signal.reason;
      if (summary.trim() === '') {
        throw new Error(`${prepared.providerName}: the model answered with no summary`);
      }
      const text = compactedChat({ from: basename(target.file), summary, parts });
      written = await writeContinuation(target.file, text);
    } catch (error) {
      status = aborted() ? 'cancelled' : 'errored';
      if (status === 'errored') {
        failure =
          error instanceof ProviderError
            ? error.describe()
            : error instanceof Error
              ? error.message
              : String(error);
        base.logger.warn(`compact of buffer ${String(bufnr)} failed: ${failure}`);
      }
    } finally {
      // Before the message: after an error message, Neovim waits a second before it handles
      // the next request, and the spinner would go on meanwhile.
      await base.lua.call('progress.stop', { bufnr }).catch(() => false);
      this.deps.usage.finish(bufnr, status === 'completed');
    }
    return { status, written, failure, warnings };
  }

  /** The new chat opened in the window, the user told what was done, `compact:finished` posted. */
  private async announce(
    bufnr: number,
    target: CompactTarget,
    written: string,
    parts: CarriedParts,
    warnings: string[],
  ): Promise<void> {
    const { base } = this.deps;
    // The file is written whatever happens to the window (an error there only means no `:edit`).
    const opened: { opened: boolean; bufnr?: number } = await base.lua
      .call('compact.open', { bufnr, path: written })
      .catch((error: unknown) => {
        base.logger.warn(`opening ${written} failed: ${String(error)}`);
        return { opened: false };
      });
    const name = basename(written);
    const from = basename(target.file);
    const notes = [
      opened.opened ? `Compacted into ${name}` : `Compacted into ${name} (open it with :edit)`,
    ];
    if (target.modified)
      notes.push(`the buffer's unsaved changes were compacted: ${from} on disk is behind`);
    else notes.push(`${from} is unchanged`);
    if (parts.user.length === 0) notes.push('no unanswered message to carry over');
    // A reply cut at the output limit is written as it came: the message says so.
    notes.push(...warnings);
    this.tell(target.modified || warnings.length > 0 ? 'warn' : 'info', notes.join('; '));
    base.hooks.post('compact:finished', {
      bufnr,
      status: 'completed',
      file: written,
      ...(opened.bufnr === undefined ? {} : { new_bufnr: opened.bufnr }),
    });
  }

  private cancelled(bufnr: number): CompactStatus {
    this.tell('info', 'compact cancelled, nothing written');
    this.deps.base.hooks.post('compact:finished', { bufnr, status: 'cancelled' });
    return 'cancelled';
  }

  /**
   * The model's summary: the text of its reply (thinking and tool calls are left out). Retries a
   * request that failed before any text as the send does, and resolves the credential again
   * once after a 401; the indicator shows the characters so far.
   */
  private async summarise(
    bufnr: number,
    first: ProviderAdapter,
    request: ProviderRequest,
    controller: AbortController,
    observe: (event: ProviderEvent) => void,
    reauthorize: () => Promise<ProviderAdapter | undefined>,
    warnings: string[],
  ): Promise<string> {
    const { lua } = this.deps.base;
    let text = '';
    const attempt = async (adapter: ProviderAdapter): Promise<string> => {
      text = '';
      warnings.length = 0;
      const progress = new ProgressThrottle<number>((characters) => {
        lua.notify('progress.update', { bufnr, phase: 'compacting', characters });
      });
      try {
        for await (const event of adapter.stream(request, controller.signal)) {
          observe(event);
          if (event.type === 'warning') warnings.push(event.message);
          if (event.type !== 'text') continue;
          text += event.text;
          progress.push(text.length);
        }
        return text;
      } finally {
        progress.close();
      }
    };
    const { signal } = controller;
    return withRetries(
      { adapter: first, signal, attempt, hasContent: () => text !== '' },
      {
        reauthorize,
        retrying: (next) => {
          lua.notify('progress.update', { bufnr, phase: 'retrying', attempt: next });
        },
      },
    );
  }
}
