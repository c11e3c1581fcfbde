// `complete:items` (docs/completion.md): what the completion of a chat buffer offers, asked by
// Lua without waiting (a `call`): a reference's paths and MCP resources, a frontmatter's option
// names and values, tool and preset names.
//
// Decisions:
// - A path is completed one directory at a time: the directory being typed is read (`readdir`),
//   never the tree under it, so the first page costs the same in a 100-file and a 100,000-file
//   project. Its entries are judged by the `.gitignore` rules from the work tree's top down to it
//   (src/core/complete/gitignore.ts); `.git` is never listed.
// - Each directory's judged listing is kept, keyed by its own modification time and those of
//   the ignore files that applied: a file added or removed, or an edited `.gitignore`, reads it
//   again; a warm listing costs a few `stat`s. At most `MAX_DIRS` listings are kept (the oldest
//   read goes first).
// - Completing is not reading: the names of a directory are offered wherever it is, in a file
//   that is trusted or not; what a reference may read when the chat is sent is decided then.
import type { Dirent } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';

import { presetTable } from '../core/approval/presets.js';
import { frontmatterItems, frontmatterQuery } from '../core/complete/frontmatter.js';
import { type IgnoreRule, ignoredBy, parseIgnore } from '../core/complete/gitignore.js';
import {
  beforeCol,
  type CompleteAnswer,
  type CompleteRequest,
  type CompleteItem,
  none,
  page,
  prefixMatcher,
} from '../core/complete/items.js';
import {
  encodeName,
  referenceQuery,
  resourceItems,
  serverItems,
} from '../core/complete/reference.js';
import type { McpCatalog } from '../core/tools/mcp/types.js';

/** One entry of a directory: its name and whether it is a directory. */
export interface DirEntry {
  name: string;
  dir: boolean;
}

/** Listings kept at most. */
const MAX_DIRS = 256;

interface Listing {
  key: string;
  entries: DirEntry[];
}

async function mtimeOf(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).mtimeMs;
  } catch {
    return undefined;
  }
}

/** The work tree holding `dir` (the nearest directory with a `.git`), or undefined. */
async function workTreeOf(dir: string): Promise<string | undefined> {
  for (let current = dir; ; current = dirname(current)) {
    if ((await mtimeOf(join(current, '.git'))) !== undefined) return current;
    if (dirname(current) === current) return undefined;
  }
}

/** The ignore files that apply to `dir`, lowest precedence first, with their bases. */
function ignoreFiles(top: string, dir: string): { file: string; base: string }[] {
  const files = [{ file: join(top, '.git', 'info', 'exclude'), base: '' }];
  const rel = relative(top, dir);
  const parts = rel === '' ? [] : rel.split('/');
  for (let depth = 0; depth <= parts.length; depth++) {
    const base = parts.slice(0, depth).join('/');
    files.push({ file: join(top, base, '.gitignore'), base });
  }
  return files;
}

async function entryOf(dir: string, entry: Dirent): Promise<DirEntry> {
  if (!entry.isSymbolicLink()) return { name: entry.name, dir: entry.isDirectory() };
  try {
    return { name: entry.name, dir: (await stat(join(dir, entry.name))).isDirectory() };
  } catch {
    return { name: entry.name, dir: false };
  }
}

function byName(a: DirEntry, b: DirEntry): number {
  const dotA = a.name.startsWith('.');
  const dotB = b.name.startsWith('.');
  if (dotA !== dotB) return dotA ? 1 : -1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** Directory listings judged by `.gitignore`, kept while unchanged (see the decisions above). */
export class PathLister {
  private readonly listings = new Map<string, Listing>();

  /** The entries of `dir` that git would not ignore, sorted; [] when it cannot be read. */
  async list(dir: string): Promise<DirEntry[]> {
    const top = await workTreeOf(dir);
    const files = top === undefined ? [] : ignoreFiles(top, dir);
    const times = await Promise.all([dir, ...files.map((f) => f.file)].map(mtimeOf));
    if (times[0] === undefined) return [];
    const key = times.map(String).join(':');
    const kept = this.listings.get(dir);
    if (kept?.key === key) return kept.entries;
    const entries = await this.read(dir, top, files, times.slice(1));
    this.listings.delete(dir);
    this.listings.set(dir, { key, entries });
    if (this.listings.size > MAX_DIRS) {
      const oldest = this.listings.keys().next().value;
      if (oldest !== undefined) this.listings.delete(oldest);
    }
    return entries;
  }

  private async read(
    dir: string,
    top: string | undefined,
    files: { file: string; base: string }[],
    times: (number | undefined)[],
  ): Promise<DirEntry[]> {
    const rules: IgnoreRule[] = [];
    for (const [index, { file, base }] of files.entries()) {
      if (times[index] === undefined) continue;
      rules.push(...parseIgnore(await readFile(file, 'utf8').catch(() => ''), base));
    }
    let dirents: Dirent[];
    try {
      dirents = await readdir(dir, { withFileTypes: true });
    } catch {
      return [];
    }
    const rel = top === undefined ? '' : relative(top, dir);
    const entries = await Promise.all(
      dirents.filter((entry) => entry.name !== '.git').map((entry) => entryOf(dir, entry)),
    );
    return entries
      .filter(
        (entry) => !ignoredBy(rules, rel === '' ? entry.name : `${rel}/${entry.name}`, entry.dir),
      )
      .sort(byName);
  }
}

/** What the answer is made from besides the request. */
export interface CompleteSources {
  paths: PathLister;
  mcp: () => McpCatalog;
  tools: () => string[];
  /** The user's `tools.presets` (the built-ins are always offered). */
  presets: () => unknown;
}

function pathBase(typed: string, dir: string): string {
  if (typed.startsWith('~/')) return join(homedir(), typed.slice(2));
  return resolve(dir, typed);
}

async function pathItems(
  sources: CompleteSources,
  base: string,
  typed: string,
  prefix: string,
): Promise<CompleteItem[]> {
  const matches = prefixMatcher(prefix);
  const entries = (await sources.paths.list(base)).filter((entry) => matches(entry.name));
  return entries.map((entry) => {
    const name = encodeName(entry.name, !entry.dir) + (entry.dir ? '/' : '');
    return { word: typed + name, abbr: name, kind: entry.dir ? 'dir' : 'file' };
  });
}

async function referenceAnswer(
  sources: CompleteSources,
  request: CompleteRequest,
): Promise<CompleteAnswer> {
  const q = referenceQuery(beforeCol(request.line, request.col));
  if (q === undefined) return none(request.col);
  switch (q.kind) {
    case 'path':
      return page(
        await pathItems(sources, pathBase(q.dir, request.dir), q.typed, q.prefix),
        q.start,
      );
    case 'server':
      return page(serverItems(sources.mcp(), q.prefix), q.start);
    case 'resource':
      return page(resourceItems(sources.mcp(), q.server, q.prefix), q.start);
    case 'start': {
      const here = q.prefix === '' || q.prefix === '.' || q.prefix === './';
      const files = here ? await pathItems(sources, request.dir, './', '') : [];
      const parent =
        '../'.startsWith(q.prefix) && q.prefix !== '' ? [{ word: '../', kind: 'dir' }] : [];
      const servers = 'mcp:'.startsWith(q.prefix) ? serverItems(sources.mcp(), '') : [];
      return page([...files, ...parent, ...servers], q.start);
    }
  }
}

function frontmatterAnswer(sources: CompleteSources, request: CompleteRequest): CompleteAnswer {
  const q = frontmatterQuery(request.lang, request.lines, beforeCol(request.line, request.col));
  if (q === undefined) return none(request.col);
  const presets = [...presetTable(sources.presets()).presets.keys()].sort();
  const tools = [...sources.tools()].sort();
  return page(frontmatterItems(q, { tools, presets }), q.start);
}

/** `complete:items`: the items for the cursor's place, and the column they replace from. */
export async function completeItems(
  sources: CompleteSources,
  request: CompleteRequest,
): Promise<CompleteAnswer> {
  return request.where === 'frontmatter'
    ? frontmatterAnswer(sources, request)
    : await referenceAnswer(sources, request);
}
