// Completion in a chat's frontmatter (docs/completion.md): option names and their values from the
// configuration's schema (src/core/config/schema-data.ts), tool and preset names in the lists
// that hold them. Where the cursor stands is read from the text before it:
// - Lua: `flemma.opt.<path>` names an option (`flemma.opt.tools.` offers what is under `tools`);
//   a string after `=`, `:append(`, `:prepend(`, `:remove(`, `+` or `-` is a value of it, inside
//   a table constructor too (`= { "read", "` offers tools); the last `flemma.opt.…` of the line
//   counts (`= flemma.opt.tools - "`); after `= ` a boolean or a quoted choice.
// - JSON: the keys on the way from the top (`"flemma"` first, then the options; `$set`,
//   `$append`, `$prepend`, `$remove` stand for their list), a key or a string value being typed.
// - YAML: the same, the keys read from the indentation (block lists and `[a, b` flow lists).
import {
  describe,
  lookup,
  schemaRoot,
  type SchemaNode,
  tableMember,
  topShortcuts,
} from '../config/schema-data.js';
import { bytes, type CompleteItem, prefixMatcher } from './items.js';

/** What the cursor is on: an option name under `path`, or a value of the option `path`. */
export interface FrontmatterQuery {
  target: 'key' | 'value' | 'bare';
  /** The option path as written (shortcuts and aliases allowed), `[]` for the top. */
  path: string[];
  prefix: string;
  start: number;
}

/** The names lists of tools can hold: the tools defined now and the approval presets. */
export interface Names {
  tools: readonly string[];
  presets: readonly string[];
}

/** `$set`, `$append`, `$prepend`, `$remove`: they edit the list they are under. */
const LIST_OP = /^\$(?:set|append|prepend|remove)$/u;

function query(
  target: FrontmatterQuery['target'],
  path: string[],
  before: string,
  prefix: string,
): FrontmatterQuery {
  return { target, path, prefix, start: bytes(before) - bytes(prefix) };
}

/** Lua: the current line's `flemma.opt.…` before the cursor. */
function luaQuery(before: string): FrontmatterQuery | undefined {
  const key = /flemma\.opt\.([\w.]*)$/u.exec(before);
  if (key !== null) {
    const parts = (key[1] ?? '').split('.');
    const prefix = parts.pop() ?? '';
    return query('key', parts, before, prefix);
  }
  const value =
    /^.*flemma\.opt\.([\w.]+)(\s*=\s*|:(?:append|prepend|remove)\(\s*|\s*[-+]\s*)(.*)$/u.exec(
      before,
    );
  if (value === null) return undefined;
  const path = (value[1] ?? '').split('.');
  const rest = value[3] ?? '';
  const quoted = /^\{?(?:\s*(["'])[^"']*\1\s*,)*\s*["']([^"']*)$/u.exec(rest);
  if (quoted !== null) return query('value', path, before, quoted[2] ?? '');
  if (/^\s*=\s*$/u.test(value[2] ?? '') && /^\w*$/u.test(rest)) {
    return query('bare', path, before, rest);
  }
  return undefined;
}

interface Frame {
  array: boolean;
  key?: string | undefined;
  expectKey: boolean;
}

/** The option path of a JSON or YAML key path: under `"flemma"`, list operators left out. */
function optionPath(keys: string[]): string[] | undefined {
  if (keys[0] !== 'flemma') return undefined;
  return keys.slice(1).filter((key) => !LIST_OP.test(key));
}

/** JSON: the frames open before the cursor, and the string being typed (undefined: none). */
function jsonFrames(text: string): { frames: Frame[]; open?: string } {
  const frames: Frame[] = [];
  let stringStart = -1;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    const top = frames[frames.length - 1];
    if (stringStart >= 0) {
      if (char === '\\') i++;
      else if (char === '"') {
        if (top !== undefined && !top.array && top.expectKey) top.key = text.slice(stringStart, i);
        stringStart = -1;
      }
      continue;
    }
    if (char === '"') stringStart = i + 1;
    else if (char === '{') frames.push({ array: false, expectKey: true });
    else if (char === '[') frames.push({ array: true, expectKey: false });
    else if (char === '}' || char === ']') frames.pop();
    else if (char === ':' && top !== undefined) top.expectKey = false;
    else if (char === ',' && top !== undefined && !top.array) {
      top.expectKey = true;
      top.key = undefined;
    }
  }
  return stringStart >= 0 ? { frames, open: text.slice(stringStart) } : { frames };
}

function jsonQuery(lines: readonly string[], before: string): FrontmatterQuery | undefined {
  const { frames, open } = jsonFrames([...lines, before].join('\n'));
  const top = frames[frames.length - 1];
  if (open === undefined || top === undefined || open.includes('\n')) return undefined;
  const keyMode = !top.array && top.expectKey;
  const keys = frames
    .slice(0, keyMode ? -1 : undefined)
    .filter((frame) => !frame.array)
    .map((frame) => frame.key ?? '');
  if (keyMode && keys.length === 0) return query('key', ['flemma:'], before, open);
  const path = optionPath(keys);
  if (path === undefined) return undefined;
  return query(keyMode ? 'key' : 'value', path, before, open);
}

/** YAML: the keys of the lines above whose indentation holds the cursor's line. */
function yamlKeys(lines: readonly string[], indent: number): string[] {
  const stack: { indent: number; key: string }[] = [];
  for (const line of lines) {
    const match = /^(\s*)(?:-\s+)?["']?([\w$-]+)["']?:(?:\s|$)/u.exec(line);
    if (match === null) continue;
    const depth = (match[1] ?? '').length;
    while (stack.length > 0 && (stack[stack.length - 1]?.indent ?? 0) >= depth) stack.pop();
    stack.push({ indent: depth, key: match[2] ?? '' });
  }
  return stack.filter((entry) => entry.indent < indent).map((entry) => entry.key);
}

function yamlQuery(lines: readonly string[], before: string): FrontmatterQuery | undefined {
  const indent = (/^\s*/u.exec(before)?.[0] ?? '').length;
  const key = /^\s*([\w$-]*)$/u.exec(before);
  const keys = yamlKeys(lines, indent);
  if (key !== null) {
    if (indent === 0) return query('key', ['flemma:'], before, key[1] ?? '');
    const path = optionPath(keys);
    return path === undefined ? undefined : query('key', path, before, key[1] ?? '');
  }
  const value =
    /^\s*["']?([\w$-]+)["']?:\s+(?:\[(?:[^,\]]*,\s*)*)?["']?([^"',\]\s]*)$/u.exec(before) ??
    /^\s*-\s+()["']?([^"'\s]*)$/u.exec(before);
  if (value === null) return undefined;
  const path = optionPath(value[1] === '' ? keys : [...keys, value[1] ?? '']);
  return path === undefined ? undefined : query('value', path, before, value[2] ?? '');
}

/** Where the cursor is in a frontmatter of `lang`; `lines`: its lines above the cursor's. */
export function frontmatterQuery(
  lang: string,
  lines: readonly string[],
  before: string,
): FrontmatterQuery | undefined {
  if (lang === 'lua') return luaQuery(before);
  if (lang === 'json') return jsonQuery(lines, before);
  if (lang === 'yaml') return yamlQuery(lines, before);
  return undefined;
}

/** Option paths whose lists hold tool names; the first group also takes presets. */
const PRESET_LISTS = [/^tools\.auto_approve$/u, /^tools\.presets\.[^.]+\.(?:approve|deny)$/u];
const TOOL_LISTS = [
  /^tools$/u,
  /^tools\.policy\.(?:allow|deny)$/u,
  /^tools\.hooks\.(?:confirm|log|silent)$/u,
  /^agents\.[^.]+\.tools$/u,
];

/** The object an option path leads to (a union's table member), or undefined. */
function objectAt(path: readonly string[]): SchemaNode | undefined {
  const node = path.length === 0 ? schemaRoot() : nodeAt(path)?.node;
  if (node === undefined) return undefined;
  return node.kind === 'union' ? tableMember(node) : node;
}

function nodeAt(path: readonly string[]): { node: SchemaNode; canonical: string } | undefined {
  const found = lookup(path);
  return 'error' in found ? undefined : { node: found.node, canonical: found.canonical.join('.') };
}

function keyItems(path: readonly string[], prefix: string): CompleteItem[] {
  if (path[0] === 'flemma:')
    return prefixMatcher(prefix)('flemma') ? [{ word: 'flemma', kind: 'option' }] : [];
  const node = objectAt(path);
  if (node === undefined) return [];
  const names = new Set([...Object.keys(node.fields ?? {}), ...Object.keys(node.aliases ?? {})]);
  if (path.length === 0) for (const name of topShortcuts()) names.add(name);
  const matches = prefixMatcher(prefix);
  return [...names]
    .filter(matches)
    .sort()
    .map((name) => {
      const field = nodeAt([...path, name])?.node;
      const item: CompleteItem = { word: name, kind: 'option' };
      if (field !== undefined) {
        item.menu = field.kind;
        item.info = describe(field);
      }
      return item;
    });
}

/** The choices of a node: an enum's values, a union's enums and booleans. */
function choices(node: SchemaNode): { values: string[]; booleans: boolean } {
  if (node.kind === 'enum') return { values: [...(node.values ?? [])], booleans: false };
  if (node.kind === 'boolean') return { values: [], booleans: true };
  if (node.kind !== 'union') return { values: [], booleans: false };
  const parts = (node.members ?? []).map(choices);
  return {
    values: parts.flatMap((part) => part.values),
    booleans: parts.some((part) => part.booleans),
  };
}

/** The items for a value of the option `path` (`bare`: not yet in quotes). */
function valueItems(q: FrontmatterQuery, names: Names): CompleteItem[] {
  const found = nodeAt(q.path);
  if (found === undefined) return [];
  const matches = prefixMatcher(q.prefix.replace(/^["']/u, ''));
  const out: CompleteItem[] = [];
  const quote = (word: string): string => (q.target === 'bare' ? JSON.stringify(word) : word);
  const tools = PRESET_LISTS.some((re) => re.test(found.canonical));
  if (tools || TOOL_LISTS.some((re) => re.test(found.canonical))) {
    if (tools) for (const name of names.presets) out.push({ word: quote(name), kind: 'preset' });
    for (const name of names.tools) out.push({ word: quote(name), kind: 'tool' });
    return out.filter((item) => matches(item.word.replace(/^"/u, '')));
  }
  const { values, booleans } = choices(found.node);
  for (const value of values)
    out.push({ word: quote(value), kind: 'value', menu: found.canonical });
  if (booleans && q.target === 'bare')
    for (const word of ['true', 'false']) out.push({ word, kind: 'value' });
  return out.filter((item) => matches(item.word.replace(/^"/u, '')));
}

/** The items for what the cursor is on. */
export function frontmatterItems(q: FrontmatterQuery, names: Names): CompleteItem[] {
  return q.target === 'key' ? keyItems(q.path, q.prefix) : valueItems(q, names);
}
