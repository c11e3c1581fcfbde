// A host with no Neovim (`flemma run`): the same services as the Neovim host, every chat a file.
import type { FileChats, HeadlessOptions } from './api.js';

export interface HeadlessHost {
  readonly files: FileChats;
  /** Stop what the host started (MCP servers, background processes). */
  close(): Promise<void>;
}

export function createHeadlessHost(_options: HeadlessOptions): HeadlessHost {
  throw new Error('createHeadlessHost: not built yet (branch s4-filechat, in progress)');
}
