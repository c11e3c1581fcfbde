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
import type { NavigationParams } from '../editor/protocol/wire.js';

export type DefinitionResult = DefinitionAnswer;
/** Markdown, or null when there is nothing to say. */
export type HoverResult = string | null;

/** The buffers the host follows: the tree of one, once every change received is parsed. */
export interface FollowedBuffers {
  attach(bufnr: number): Promise<DocumentState | undefined>;
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

/** `read` over the buffer's tree at the params' place; null for a buffer the host cannot follow. */
async function atPlace<R>(
  buffers: FollowedBuffers,
  params: NavigationParams,
  read: (state: DocumentState, place: NavigationPlace) => R,
): Promise<R | null> {
  const state = await buffers.attach(params.bufnr);
  return state === undefined ? null : read(state, placeOf(params));
}

/** `buffer:definition`: where `gd` (or `gf`) leads; null for a buffer the host cannot follow. */
export function definition(
  buffers: FollowedBuffers,
  params: NavigationParams,
): Promise<DefinitionResult> {
  return atPlace(buffers, params, (state, place) =>
    definitionAt(state.document, state.lines, params.row, params.col, place, params.files_only),
  );
}

/** `buffer:hover`: what is under the position, as Markdown. */
export function hover(buffers: FollowedBuffers, params: NavigationParams): Promise<HoverResult> {
  return atPlace(buffers, params, (state, place) =>
    hoverAt(state.document, state.lines, params.row, params.col, place),
  );
}
