// `:Flemma chats` (docs/picker.md): what one chat shows in the picker, told from the parts of its
// file the host reads — its head (the frontmatter: `title`, `provider`, `model`; else the first
// line of the first `@You:`) and its tail (the last exchange, for the preview) — and the line
// each chat is listed with. Nothing here reads a file or runs a frontmatter: a Lua frontmatter is
// read only in its literal forms (`../config/lua-literal.ts`).
import type { ChatDocument } from '../chat/ast.js';
import { parseLines } from '../chat/parser.js';
import {
  type FrontmatterOps,
  type YamlParser,
  jsonFrontmatter,
  yamlFrontmatter,
} from '../config/frontmatter.js';
import { luaLiteralFrontmatter } from '../config/lua-literal.js';
import { formatCost, oneLine } from '../tasks/status.js';

/** What the head of a chat's file says of it. */
export interface ChatHead {
  /** The frontmatter's `title`, else the first line of the first `@You:` (may be empty). */
  title: string;
  /** The frontmatter's `provider` / `model`, else `default` (the configuration's). */
  provider: string;
  model: string;
}

/** One chat of the picker. */
export interface ChatEntry extends ChatHead {
  path: string;
  /** Milliseconds since the epoch. */
  mtime: number;
  /** Bytes. */
  size: number;
  /** USD this host's requests of the chat cost (absent: none was made, or none had a price). */
  cost?: number;
}

/** The most characters of a title the picker shows. */
const TITLE_MAX = 80;

const DEFAULT = 'default';

/** The frontmatter's operations and variables, read without running anything. */
function frontmatterOps(
  document: ChatDocument,
  yaml: YamlParser | undefined,
): FrontmatterOps | undefined {
  const frontmatter = document.frontmatter;
  if (frontmatter === undefined) return undefined;
  const language = frontmatter.language.toLowerCase();
  const parsed =
    language === 'lua'
      ? luaLiteralFrontmatter(frontmatter.code, 2)
      : language === 'json'
        ? jsonFrontmatter(frontmatter.code, 2)
        : (language === 'yaml' || language === 'yml') && yaml !== undefined
          ? yamlFrontmatter(frontmatter.code, 2, yaml)
          : undefined;
  return parsed === undefined || 'error' in parsed ? undefined : parsed;
}

/** The string an option's `set` gives, the last one winning. */
function setString(ops: FrontmatterOps | undefined, name: string): string | undefined {
  let value: string | undefined;
  for (const op of ops?.ops ?? []) {
    if (op.op === 'set' && op.path.length === 1 && op.path[0] === name) {
      if (typeof op.value === 'string' && op.value !== '') value = op.value;
    }
  }
  return value;
}

/** The first non-empty line of the first `@You:` message of `lines` (the document's). */
function firstUserLine(document: ChatDocument, lines: readonly string[]): string {
  const first = document.messages.find((message) => message.role === 'You');
  if (first === undefined) return '';
  for (let line = first.span.startLine; line <= first.span.endLine; line++) {
    const text = (lines[line - 1] ?? '').replace(line === first.span.startLine ? /^@You:/ : '', '');
    if (text.trim() !== '') return text;
  }
  return '';
}

/** Lines after a first `@You:` the head's title is looked for in. */
const TITLE_LINES = 8;

/**
 * The lines of a head worth parsing: up to a few lines after its first `@You:` (the parse is the
 * cost of a listing; a title is on one of those lines).
 */
function headLines(text: string): string[] {
  const lines = text.split('\n');
  const you = lines.findIndex((line) => line.startsWith('@You:'));
  return you < 0 ? lines : lines.slice(0, you + TITLE_LINES);
}

/**
 * What the head of a chat's file (`text`: its first bytes, cut after a whole line) says of it.
 * `yaml` reads a YAML frontmatter (without it, one is not read).
 */
export function headOf(text: string, yaml: YamlParser | undefined): ChatHead {
  const lines = headLines(text);
  const document = parseLines(lines);
  const ops = frontmatterOps(document, yaml);
  const title = ops?.variables['title'];
  return {
    title: oneLine(
      typeof title === 'string' && title.trim() !== '' ? title : firstUserLine(document, lines),
      TITLE_MAX,
    ),
    provider: setString(ops, 'provider') ?? DEFAULT,
    model: setString(ops, 'model') ?? DEFAULT,
  };
}

const MARKER = /^@[A-Za-z][\w-]*:/;

/**
 * The last exchange of a chat from the tail of its file (`text`, cut before a whole line; `cut`
 * when the file holds more before it): from its last `@You:` to the end. A tail holding no
 * `@You:` (the reply alone is longer) starts at its first message, after a line that says so.
 */
export function lastExchange(text: string, cut: boolean): string[] {
  const lines = text.replace(/\n$/, '').split('\n');
  const first = lines.findIndex((line) => MARKER.test(line));
  if (first < 0) return cut ? ['…', ...lines] : lines;
  const rest = lines.slice(first);
  const messages = parseLines(rest).messages;
  let start: number | undefined;
  for (const message of messages) if (message.role === 'You') start = message.span.startLine - 1;
  if (start !== undefined) return rest.slice(start);
  return cut || first > 0 ? ['…', ...rest] : rest;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** How long ago `mtime` was, at `now` (both in milliseconds): `just now`, `5 min ago`, `2 h ago`, … */
export function relativeAge(mtime: number, now: number): string {
  const ago = Math.max(0, now - mtime);
  if (ago < MINUTE) return 'just now';
  if (ago < HOUR) return `${String(Math.floor(ago / MINUTE))} min ago`;
  if (ago < DAY) return `${String(Math.floor(ago / HOUR))} h ago`;
  if (ago < 30 * DAY) return `${String(Math.floor(ago / DAY))} d ago`;
  return new Date(mtime).toISOString().slice(0, 10);
}

/** A file's size: `812 B`, `4.2 KB`, `1.0 MB`. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${String(bytes)} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** The model as listed: `provider/model`, or `default` when the chat sets neither. */
function modelText(entry: ChatHead): string {
  if (entry.provider === DEFAULT && entry.model === DEFAULT) return DEFAULT;
  return `${entry.provider}/${entry.model}`;
}

/** The line a chat is listed with; `name` is its file as shown (relative where it can be). */
export function entryLine(entry: ChatEntry, name: string, now: number): string {
  const parts = [
    entry.title === '' ? '(untitled)' : entry.title,
    modelText(entry),
    relativeAge(entry.mtime, now),
    ...(entry.cost === undefined ? [] : [formatCost(entry.cost)]),
    formatSize(entry.size),
    name,
  ];
  return parts.join(' · ');
}
