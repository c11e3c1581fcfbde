// An agent's file requests, served by Flemma (docs/agents.md, "Files and terminals"): each goes
// through the code path of the chat's own tool of that kind, prepared as the executor prepares a
// call (src/host/tools/prepare.ts: the sandbox, the roots, the undo journal, the write gate).
//
// Decisions:
// - `fs/read_text_file`: the path must be absolute; with `sandbox.roots` it must be inside them
//   (the `read` tool's rule); a sensitive place (as written or where its links lead) is refused,
//   since no approval question guards the read; in a chat that is not trusted, so is a path
//   outside the project (what such a chat's file references may read). A buffer showing the file
//   gives its text, unsaved changes included (one request to Neovim); else the file, bounded.
// - `fs/write_text_file`: written by the `write` tool itself, so under its policy (the sandbox's
//   writable paths, the roots, no link followed out of them, in the step that opens the file),
//   and through its undo journal. No approval is asked again: the agent asks before it writes
//   (`session/request_permission`, judged by the approval chain), and a write is held to the
//   policy whatever was answered. Every sensitive place is refused (the write tool allows one the
//   user approved for that call; an agent's write is tied to no question). A file open in a
//   buffer with unsaved changes is refused (nothing you wrote is lost); a buffer without them
//   takes the new text; so is the chat's own file (its reply is being written). Only during a
//   turn of the chat, whose reply records the write.
import { randomBytes } from 'node:crypto';
import type {
  ReadTextFileRequest,
  ReadTextFileResponse,
  WriteTextFileRequest,
} from '@agentclientprotocol/sdk';
import type { ToolCall } from '../../core/approval/chain.js';
import { judgePath, projectDirs } from '../../core/approval/scope.js';
import type { Config } from '../../core/config/config.js';
import { FAILED, NOT_FOUND, ServeError, absolutePath, selectLines } from '../../core/acp/fs.js';
import { writeLine } from '../../core/acp/writes.js';
import type { ToolDefinition } from '../../core/tools/registry.js';
import { readTool } from '../../core/tools/definitions/read.js';
import { toolPath, writeTool } from '../../core/tools/definitions/write.js';
import { type WriteGate, sensitiveGate } from '../../core/tools/sandbox/gate.js';
import { resolveReal } from '../../core/tools/sandbox/paths.js';
import { describeSensitive, sensitiveEntries } from '../../core/tools/sandbox/sensitive.js';
import {
  FileReadError,
  TOOL_READ_LIMIT_BYTES,
  readTextBounded,
} from '../../core/util/bounded-read.js';
import type { LuaBridge } from '../../editor/lua.js';
import type { BufferSettings, EditorFacts } from '../buffer-settings.js';
import { type PreparePorts, type PreparedCall, prepareCall } from '../tools/prepare.js';
import type { UndoService } from '../undo/service.js';

/** The chat an agent's request is served for, as its running turn has it. */
export interface AgentScope {
  bufnr: number;
  agent: string;
  editor: Pick<BufferSettings, 'config' | 'facts'> & Partial<Pick<BufferSettings, 'trust'>>;
  /** The agent's working directory (the chat file's directory). */
  cwd: string;
  /** The running turn's cancel; undefined between turns. */
  turn: AbortSignal | undefined;
  /** A block of lines of the running turn's reply; undefined between turns. */
  note: ((lines: string[]) => void) | undefined;
}

export interface ServePorts {
  prepare: PreparePorts;
  lua: Pick<LuaBridge, 'call' | 'notify'>;
  undo: Pick<UndoService, 'record'>;
  home: string;
  env: Readonly<Record<string, string | undefined>>;
}

/** The gate of an agent's write: every sensitive place refused (no question approved one). */
export function agentGate(
  ports: Pick<ServePorts, 'home' | 'env'>,
): (call: ToolCall, config: Config, facts: EditorFacts) => WriteGate {
  return (_call, config, facts) =>
    sensitiveGate(
      sensitiveEntries(config.tools['sensitive_paths'], {
        home: ports.home,
        env: ports.env,
        editorDirs: facts.editor_dirs,
      }).entries,
      [],
    );
}

/** The call of our tool `def` the request stands for, prepared as the executor would. */
export function prepareFor(
  ports: ServePorts,
  scope: AgentScope,
  def: ToolDefinition,
  input: Record<string, unknown>,
  signal: AbortSignal,
): Promise<PreparedCall> {
  const id = `acp_${def.name}_${randomBytes(4).toString('hex')}`;
  const { config, facts } = scope.editor;
  return prepareCall(
    { bufnr: scope.bufnr, id, name: def.name, input },
    def,
    config,
    facts,
    signal,
    {
      ...ports.prepare,
      gate: agentGate(ports),
    },
  );
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The agent's file requests of one host. */
export class AgentFiles {
  constructor(private readonly ports: ServePorts) {}

  /** `fs/read_text_file` (see the decisions above). */
  async read(scope: AgentScope, params: ReadTextFileRequest): Promise<ReadTextFileResponse> {
    const path = absolutePath(params.path);
    const abs = await this.readable(scope, path);
    const open = await this.ports.lua.call('acp.buffer', { path: abs });
    let text = open.text;
    if (text === undefined) {
      try {
        text = await readTextBounded(abs, { maxBytes: TOOL_READ_LIMIT_BYTES });
      } catch (error) {
        const why = error instanceof FileReadError ? error.message : reasonOf(error);
        throw new ServeError(FAILED, `Cannot read ${path}: ${why}`);
      }
    }
    if (text === undefined) throw new ServeError(NOT_FOUND, `File not found: ${path}`);
    return { content: selectLines(text, params.line, params.limit) };
  }

  /** Where a read of `path` goes, or the policy's refusal. */
  private async readable(scope: AgentScope, path: string): Promise<string> {
    const { config, facts, trust } = scope.editor;
    const prepared = await prepareFor(
      this.ports,
      scope,
      readTool,
      { path },
      new AbortController().signal,
    );
    const where = await toolPath(prepared.execCtx, path, false);
    if (!where.ok) throw new ServeError(FAILED, where.error);
    const { entries } = sensitiveEntries(config.tools['sensitive_paths'], {
      home: this.ports.home,
      env: this.ports.env,
      editorDirs: facts.editor_dirs,
    });
    const project = projectDirs({
      cwd: facts.cwd,
      filename: facts.filename,
      home: this.ports.home,
      roots: prepared.execCtx.sandbox.roots.map((root) => root.path),
    });
    const judged = judgePath(path, where.abs, project, entries, false);
    if (judged.sensitive !== undefined) {
      throw new ServeError(
        FAILED,
        `Sensitive place: read denied – ${path} is under ${describeSensitive(judged.sensitive)}`,
      );
    }
    if (trust?.trusted !== true && !judged.inProject) {
      throw new ServeError(
        FAILED,
        `Read denied – ${path} is outside the project, and this chat is not trusted (:trust)`,
      );
    }
    return where.abs;
  }

  /** `fs/write_text_file` (see the decisions above). */
  async write(scope: AgentScope, params: WriteTextFileRequest): Promise<void> {
    const path = absolutePath(params.path);
    const { turn, note } = scope;
    if (turn === undefined || note === undefined) {
      throw new ServeError(FAILED, 'Write denied – no turn of this chat is running');
    }
    if (typeof params.content !== 'string') throw new ServeError(FAILED, 'No content provided');
    const chatFile = scope.editor.facts.filename;
    if (chatFile !== null && resolveReal(path) === resolveReal(chatFile)) {
      throw new ServeError(FAILED, `Write denied – ${path} is this chat's own file`);
    }
    const open = await this.ports.lua.call('acp.buffer', { path });
    if (open.modified === true) {
      throw new ServeError(
        FAILED,
        `Write denied – ${path} is open in Neovim with unsaved changes: save or discard them first`,
      );
    }
    const input = { path, content: params.content };
    const prepared = await prepareFor(this.ports, scope, writeTool, input, turn);
    const outcome = await writeTool.execute?.(input, prepared.execCtx);
    if (outcome === undefined || !outcome.ok) {
      throw new ServeError(FAILED, outcome?.error ?? 'Cannot write');
    }
    const id = prepared.execCtx.tool_id;
    const journal = prepared.journal;
    if (journal !== undefined) {
      const { bufnr, editor } = scope;
      await this.ports.undo.record(bufnr, editor.facts, id, journal.entries, journal.limits);
    }
    note([writeLine(id, path)]);
    this.ports.lua.notify('files.changed', { path, running: false });
  }
}
