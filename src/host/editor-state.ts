// What the host keeps of each chat buffer's editor side (docs/architecture.md, "The message
// budget"): the buffer's settings as Lua last answered them (`BufferSettings`: the configuration
// with the frontmatter applied, the trust decision, the editor's facts, the provider environment
// variables), kept until Lua says that something in them changed. Lua pushes that, rather than
// the host pulling it at every step:
// - `editor:state {bufnr?, stale = true}` when the configuration's generation, a trust decision,
//   the working directory, the buffer's name or the sandbox switch changed;
// - `{env, facts}` with every user-initiated notification (`chat:cycle`, `chat:send`): `:let
//   $X = …` cannot be observed by an autocmd, so each action of the user brings the environment
//   as it is then.
// The host asks Lua (`editor.context`, one round trip) only when it holds nothing for the buffer,
// or when the frontmatter's text (its question) or the configuration changed: a Lua frontmatter is
// evaluated once per text and trust, not at every step.
import type { ChatDocument, Message } from '../core/chat/ast.js';
import type { ToolNames } from '../core/config/frontmatter.js';
import type { LuaBridge } from '../editor/lua.js';
import type { ContextParams, EditorFacts } from '../editor/protocol/wire.js';
import type { PushedState } from '../editor/protocol/pushed.js';

export type { PushedState };
import type { ConfigStore } from './config.js';
import {
  type BufferSettings,
  type SettingsOptions,
  settingsQuestion,
  resolveSettings,
} from './buffer-settings.js';

/** What one buffer's settings were asked with, and Lua's answer resolved. */
interface Held {
  /** The question without the digest: the frontmatter and the configuration's generation. */
  key: string;
  settings: BufferSettings;
  /** The frontmatter's text the settings were asked for. */
  code: string | undefined;
}

export interface EditorStatesDeps {
  lua: Pick<LuaBridge, 'call' | 'notify'>;
  config: ConfigStore;
  /** Each message's part of the trust digest, across parses. */
  memo: WeakMap<Message, string>;
  tools: () => ToolNames;
}

/**
 * What held settings answer: the question's generation and frontmatter (a trusted buffer's new
 * digest is told, `origins` is asked each time).
 */
function keyOf(
  params: Pick<ContextParams, 'frontmatter'> & { generation?: number | undefined },
): string {
  return JSON.stringify([params.generation, params.frontmatter]);
}

export class EditorStates {
  private readonly held = new Map<number, Held>();
  /** Questions asked and not answered yet, by buffer: a second asker waits for the same answer. */
  private readonly asking = new Map<number, { key: string; answer: Promise<BufferSettings> }>();

  constructor(private readonly deps: EditorStatesDeps) {}

  /**
   * The buffer's settings for its tree `document`: held ones when their question is the same,
   * else Lua's answer (one round trip). `origins` (`:Flemma status`) always asks.
   */
  async get(
    bufnr: number,
    document: ChatDocument | undefined,
    options: SettingsOptions = {},
  ): Promise<BufferSettings> {
    const question = await settingsQuestion(bufnr, document, {
      ...options,
      memo: this.deps.memo,
      config: this.deps.config,
    });
    const { digest } = question.params;
    const key = keyOf(question.params);
    const held = this.held.get(bufnr);
    if (held !== undefined && held.key === key && options.origins !== true) {
      return this.current(bufnr, held, digest);
    }
    const asking = this.asking.get(bufnr);
    if (asking !== undefined && asking.key === key && options.origins !== true) {
      return asking.answer;
    }
    const answer = this.deps.lua
      .call('editor.context', question.params)
      .then((raw) => resolveSettings(question, raw, this.deps.tools()));
    this.asking.set(bufnr, { key, answer });
    try {
      const settings = await answer;
      // A question asked before a `stale` push is answered with what was true then: kept only
      // while nothing went stale meanwhile.
      if (this.asking.get(bufnr)?.answer === answer) {
        const generation = this.deps.config.held()?.generation;
        const heldKey = keyOf({ ...question.params, generation });
        this.held.set(bufnr, { key: heldKey, settings, code: document?.frontmatter?.code });
      }
      return settings;
    } finally {
      if (this.asking.get(bufnr)?.answer === answer) this.asking.delete(bufnr);
    }
  }

  /**
   * Held settings for a tree whose digest may be another: a trusted buffer's new digest is told
   * to Lua (a notification), which records it as what is trusted, as its answer would have.
   * A buffer that is not trusted stays so until Lua says otherwise (it fails closed).
   */
  private current(bufnr: number, held: Held, digest: string | undefined): BufferSettings {
    const { settings } = held;
    if (digest === undefined || digest === settings.digest) return settings;
    if (settings.trust.trusted) this.deps.lua.notify('trust.seen', { bufnr, digest });
    const next = { ...settings, digest };
    held.settings = next;
    return next;
  }

  /**
   * A new parse of a buffer whose settings the host holds: when its frontmatter's text changed,
   * they are asked now (a Lua frontmatter runs in Neovim), so that the next step waits only if
   * that answer is still outstanding.
   */
  parsed(bufnr: number, document: ChatDocument): void {
    const held = this.held.get(bufnr);
    if (held === undefined || held.code === document.frontmatter?.code) return;
    this.get(bufnr, document).catch(() => undefined);
  }

  /** Lua said that what the buffer's settings hold changed (every buffer's, without `bufnr`). */
  stale(bufnr?: number): void {
    if (bufnr === undefined) {
      this.held.clear();
      this.asking.clear();
      return;
    }
    this.held.delete(bufnr);
    this.asking.delete(bufnr);
  }

  /** What a user's action brought along: the environment and the editor's facts as they are now. */
  pushed(bufnr: number, state: PushedState): void {
    const held = this.held.get(bufnr);
    if (held === undefined) return;
    held.settings = {
      ...held.settings,
      ...(state.env === undefined ? {} : { env: state.env }),
      ...(state.facts === undefined ? {} : { facts: state.facts }),
    };
  }

  /** These tool ids' statuses were set here (`trust.confirm`): they are honoured from now on. */
  confirmed(bufnr: number, ids: readonly string[]): void {
    const held = this.held.get(bufnr);
    const placeholders = held?.settings.trust.placeholders;
    if (held === undefined || placeholders === undefined) return;
    const left = Object.fromEntries(
      Object.entries(placeholders).filter(([id]) => !ids.includes(id)),
    );
    held.settings = { ...held.settings, trust: { ...held.settings.trust, placeholders: left } };
  }

  /** The editor's facts held for the buffer (no round trip), if any. */
  facts(bufnr: number): EditorFacts | undefined {
    return this.held.get(bufnr)?.settings.facts;
  }

  /** What a chat made by this buffer inherits of it (its environment and facts), if held. */
  inherited(bufnr: number): { env: Record<string, string>; facts: EditorFacts } | undefined {
    const settings = this.held.get(bufnr)?.settings;
    return settings === undefined ? undefined : { env: settings.env, facts: settings.facts };
  }

  forget(bufnr: number): void {
    this.stale(bufnr);
  }
}
