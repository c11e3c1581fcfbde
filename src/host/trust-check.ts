// What a buffer's trust decision refuses, as diagnostics (`flemma.frontmatter` namespace): the
// frontmatter's problem, each option a file that is not trusted may not change, and each file
// reference it may not read. Shown while the user edits, so nothing is a surprise at send time.
import { homedir } from 'node:os';
import { dirname } from 'node:path';
import type { ChatDocument, Message } from '../core/chat/ast.js';
import { EMPTY_TRUST_DIGEST, trustDigest } from '../core/config/trust.js';
import type { DocumentState } from '../editor/documents.js';
import type { HostBase } from './base.js';
import { type ReferenceScope, refusedReferences } from '../core/chat/references.js';
import { findSensitive, sensitiveEntries } from '../core/tools/sandbox/sensitive.js';
import type { BufferSettings } from './buffer-settings.js';

export interface TrustDiagnostic {
  /** 0-based line. */
  lnum: number;
  severity: 'error' | 'warning';
  message: string;
}

/**
 * Where the buffer's file references are read from (the chat file's directory, or Neovim's
 * current directory for a buffer with no file) and where they may lead: anywhere in a trusted
 * file, only inside that directory's tree in one that is not.
 */
export function referenceScope(editor: BufferSettings): { baseDir: string; scope: ReferenceScope } {
  const filename = editor.facts.filename;
  const baseDir = filename === null ? editor.facts.cwd : dirname(filename);
  if (editor.trust.trusted) return { baseDir, scope: {} };
  // Keys and `.env` files are not read even inside the tree (docs/security.md).
  const { entries } = sensitiveEntries(editor.config.tools['sensitive_paths'], {
    home: homedir(),
    env: process.env,
    editorDirs: editor.facts.editor_dirs,
  });
  return {
    baseDir,
    scope: {
      confineTo: baseDir,
      isSensitive: (path) => findSensitive([path], entries) !== undefined,
    },
  };
}

/** What `:Flemma status` lists as refused: each option and file reference, with its line. */
export function refusedItems(
  document: ChatDocument,
  editor: BufferSettings,
  readsResults: (toolName: string) => boolean,
): { what: string; line: number }[] {
  const { baseDir, scope } = referenceScope(editor);
  const items = [
    ...editor.refused.map((item) => ({ what: item.key, line: item.line })),
    ...refusedReferences(document, baseDir, scope, readsResults).map((item) => ({
      what: `@${item.raw}`,
      line: item.line,
    })),
  ];
  const seen = new Set<string>();
  return items
    .filter((item) => {
      const id = `${item.what}\0${String(item.line)}`;
      if (seen.has(id)) return false;
      seen.add(id);
      return true;
    })
    .sort((a, b) => a.line - b.line);
}

/** The message for an option a file that is not trusted may not change. */
export function refusedKeyMessage(key: string): string {
  return `${key} is not applied: this chat file is not trusted (:trust applies it)`;
}

/**
 * The diagnostics of a buffer whose tree is `document` and whose context is `editor`;
 * `readsResults` says which tools' results have their file references read.
 */
export function trustDiagnostics(
  document: ChatDocument,
  editor: BufferSettings,
  readsResults: (toolName: string) => boolean,
): TrustDiagnostic[] {
  const items: TrustDiagnostic[] = [];
  const fm = document.frontmatter;
  if (editor.problem !== undefined) {
    const line = /^frontmatter line (\d+): /.exec(editor.problem);
    items.push({
      lnum: line === null ? (fm?.span.startLine ?? 1) - 1 : Number(line[1]) - 1,
      severity: editor.untrusted === true ? 'warning' : 'error',
      message: line === null ? editor.problem : editor.problem.slice(line[0].length),
    });
  }
  const seen = new Set<string>();
  for (const refused of editor.refused) {
    const id = `${refused.key}\0${String(refused.line)}`;
    if (seen.has(id)) continue;
    seen.add(id);
    items.push({
      lnum: refused.line - 1,
      severity: 'warning',
      message: refusedKeyMessage(refused.key),
    });
  }
  if (!editor.trust.trusted) {
    const lines = new Set<number>();
    for (const message of document.messages) {
      if (message.role !== 'System' && message.role !== 'You') continue;
      for (const segment of message.segments) {
        if (segment.kind !== 'expression' && segment.kind !== 'code') continue;
        if (lines.has(segment.span.startLine)) continue;
        lines.add(segment.span.startLine);
        items.push({
          lnum: segment.span.startLine - 1,
          severity: 'warning',
          message: `${segment.kind === 'code' ? '{% … %}' : '{{ … }}'} is not run: this chat file is not trusted (:trust runs it)`,
        });
      }
    }
  }
  const { baseDir, scope } = referenceScope(editor);
  for (const refused of refusedReferences(document, baseDir, scope, readsResults)) {
    items.push({
      lnum: refused.line - 1,
      severity: 'warning',
      message: `@${refused.raw}: ${refused.why}`,
    });
  }
  return items.sort((a, b) => a.lnum - b.lnum);
}

/** Quiet time after a frontmatter edit before it is checked (ms). */
const CHECK_MS = 300;

export interface TrustCheckDeps {
  base: Pick<HostBase, 'lua' | 'documents' | 'logger'>;
  /** The buffer's context (its trust decision, its frontmatter applied). */
  context(bufnr: number, document: ChatDocument): Promise<BufferSettings>;
  /** Which tools' results have their file references read. */
  readsResults(toolName: string): boolean;
  /** Each message's part of the trust digest, across parses (`trustDigest`). */
  memo: WeakMap<Message, string>;
}

/**
 * Keeps each buffer's trust diagnostics current: after what the trust decides changed (the
 * frontmatter, template code or file references; or the chat opened), it judges the buffer once
 * things are quiet, without sending; after `:trust`, at once.
 */
export class TrustChecker {
  private readonly keys = new Map<number, string>();
  private readonly timers = new Map<number, NodeJS.Timeout>();

  constructor(private readonly deps: TrustCheckDeps) {}

  /** The buffer was parsed: check it again soon when what needs trust in it changed. */
  parsed(state: DocumentState): void {
    const fm = state.document.frontmatter;
    const digest = trustDigest(state.document, this.deps.memo);
    const key =
      fm === undefined && digest === EMPTY_TRUST_DIGEST
        ? ''
        : `${String(fm?.span.startLine)}\0${digest}`;
    const previous = this.keys.get(state.bufnr);
    if (previous === key) return;
    this.keys.set(state.bufnr, key);
    clearTimeout(this.timers.get(state.bufnr));
    if (key === '') {
      // Gone: clear what an earlier one showed.
      if (previous !== undefined && previous !== '') {
        this.deps.base.lua.notify('frontmatter.diagnostics', { bufnr: state.bufnr, items: [] });
      }
      return;
    }
    const timer = setTimeout(() => {
      this.timers.delete(state.bufnr);
      this.check(state.bufnr, 'frontmatter');
    }, CHECK_MS);
    timer.unref();
    this.timers.set(state.bufnr, timer);
  }

  /** The buffer's trust changed (`:trust`): judge it again now. */
  trustChanged(bufnr: number): void {
    clearTimeout(this.timers.get(bufnr));
    this.timers.delete(bufnr);
    this.check(bufnr, 'trust');
  }

  forget(bufnr: number): void {
    this.keys.delete(bufnr);
    clearTimeout(this.timers.get(bufnr));
    this.timers.delete(bufnr);
  }

  private check(bufnr: number, what: string): void {
    void this.diagnose(bufnr).catch((error: unknown) => {
      this.deps.base.logger.warn(`checking the ${what} of buffer ${String(bufnr)} failed`, error);
    });
  }

  private async diagnose(bufnr: number): Promise<void> {
    const state = await this.deps.base.documents.parsed(bufnr);
    if (state === undefined) return;
    const editor = await this.deps.context(bufnr, state.document);
    const items = trustDiagnostics(state.document, editor, (name) => this.deps.readsResults(name));
    this.deps.base.lua.notify('frontmatter.diagnostics', { bufnr, items });
  }
}
