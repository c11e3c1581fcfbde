// `buffer:definition` and `buffer:hover`: `gd`, `gf` and the language server ask the host, which
// holds every chat buffer's tree (docs/navigation.md). The answer comes from the tree once every
// change Neovim sent before the question is parsed.
import { statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, resolve } from 'node:path';
import {
  type DefinitionAnswer,
  type FileProbe,
  type NavigationPlace,
  definitionAt,
  hoverAt,
} from '../core/chat/navigation.js';
import type { DocumentState } from '../editor/documents.js';

/** Where the question is asked: a position in a chat buffer and where its references start. */
export interface NavigationParams {
  bufnr: number;
  /** 0-based row. */
  row: number;
  /** 0-based byte column. */
  col: number;
  /** The buffer's name (`nvim_buf_get_name`), empty for a buffer without one. */
  file: string;
  /** Neovim's current directory (references of a buffer without a name start there). */
  cwd: string;
  /** `gf`: only file references and `include()` count; `null` when there is none. */
  files_only?: boolean;
}

export type DefinitionResult = DefinitionAnswer;
/** Markdown, or null when there is nothing to say. */
export type HoverResult = string | null;

/** The buffers the host follows: the tree of one, once every change received is parsed. */
export interface FollowedBuffers {
  attach(bufnr: number): Promise<DocumentState | undefined>;
}

export class NavigationParamsError extends Error {
  override name = 'NavigationParamsError';
}

function isCount(value: unknown, min: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min;
}

/** The params of a navigation question, checked. */
export function navigationParams(params: unknown): NavigationParams {
  const p = (params ?? {}) as Record<string, unknown>;
  const { bufnr, row, col, file, cwd } = p;
  if (
    !isCount(bufnr, 1) ||
    !isCount(row, 0) ||
    !isCount(col, 0) ||
    typeof file !== 'string' ||
    typeof cwd !== 'string'
  ) {
    throw new NavigationParamsError(
      `expected { bufnr, row, col, file, cwd }, got ${JSON.stringify(params)}`,
    );
  }
  return { bufnr, row, col, file, cwd, files_only: p['files_only'] === true };
}

const probe: FileProbe = (path) => {
  try {
    const stat = statSync(path);
    return stat.isDirectory() ? 'directory' : { size: stat.size };
  } catch {
    return 'missing';
  }
};

function placeOf(params: NavigationParams): NavigationPlace {
  const baseDir = params.file === '' ? params.cwd : dirname(resolve(params.cwd, params.file));
  return { baseDir, home: homedir(), probe };
}

/** `buffer:definition`: where `gd` (or `gf`) leads; null for a buffer the host cannot follow. */
export async function definition(
  buffers: FollowedBuffers,
  raw: unknown,
): Promise<DefinitionResult> {
  const params = navigationParams(raw);
  const state = await buffers.attach(params.bufnr);
  if (state === undefined) return null;
  return definitionAt(
    state.document,
    state.lines,
    params.row,
    params.col,
    placeOf(params),
    params.files_only,
  );
}

/** `buffer:hover`: what is under the position, as Markdown. */
export async function hover(buffers: FollowedBuffers, raw: unknown): Promise<HoverResult> {
  const params = navigationParams(raw);
  const state = await buffers.attach(params.bufnr);
  if (state === undefined) return null;
  return hoverAt(state.document, state.lines, params.row, params.col, placeOf(params));
}
