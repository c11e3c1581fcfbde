// XML tool calling, inbound: the ```` ```xml ```` blocks of a streamed reply read into tool uses
// (the format and the decisions are in xml.ts).
import type { ProviderEvent } from '../provider/types.js';
import { type XmlLibrary, asRecord, isPlainObject, typeOf } from './xml-library.js';

/** One parsed call. */
export interface XmlCall {
  name: string;
  input: Record<string, unknown>;
}

export type BlockParse =
  | { kind: 'calls'; calls: XmlCall[] }
  /** Not a tool block (other XML, or none): the text stays as it is. */
  | { kind: 'text' }
  | { kind: 'error'; message: string };

type XNode = Record<string, unknown>;

/** Passes a reply's events through an extractor (a new one per attempt). */
export async function* extractXmlToolCalls(
  events: AsyncIterable<ProviderEvent>,
  extractor: XmlToolExtractor,
): AsyncGenerator<ProviderEvent> {
  for await (const event of events) yield* extractor.push(event);
  yield* extractor.end();
}

/** Parses the body of an ```` ```xml ```` block (`schemas` by tool name convert the values). */
export function parseToolBlock(
  lib: Pick<XmlLibrary, 'XMLParser' | 'XMLValidator'>,
  body: string,
  schemas: (name: string) => Record<string, unknown> | undefined,
): BlockParse {
  if (!/<tools?[\s>/]/.test(body)) return { kind: 'text' };
  const valid = lib.XMLValidator.validate(body);
  if (valid !== true) {
    // Other XML that merely mentions a tool element is still text when it does not start with one.
    if (!/^\s*<tools?[\s>/]/.test(body)) return { kind: 'text' };
    return { kind: 'error', message: `line ${String(valid.err.line)}: ${valid.err.msg}` };
  }
  const parser = new lib.XMLParser({
    preserveOrder: true,
    ignoreAttributes: false,
    attributeNamePrefix: '',
    trimValues: false,
    parseTagValue: false,
    parseAttributeValue: false,
    cdataPropName: '#cdata',
  });
  const roots = elements(parser.parse(body) as XNode[]);
  if (roots.length === 0 || !roots.every(([name]) => name === 'tool' || name === 'tools')) {
    return roots.some(([name]) => name === 'tool' || name === 'tools')
      ? { kind: 'error', message: 'only <tool> elements may stand at the top of a tool block' }
      : { kind: 'text' };
  }
  const tools: XNode[] = [];
  for (const [name, node] of roots) {
    if (name === 'tool') tools.push(node);
    else
      for (const [inner, child] of elements(children(node)))
        if (inner === 'tool') tools.push(child);
  }
  const calls: XmlCall[] = [];
  for (const node of tools) {
    const attrs = asRecord(node[':@']) ?? {};
    const toolName = typeof attrs['name'] === 'string' ? attrs['name'].trim() : '';
    if (toolName === '') return { kind: 'error', message: 'a <tool> element has no name="…"' };
    const schema = schemas(toolName);
    const kids = elements(children(node));
    const actions = kids.filter(([kid]) => kid === 'action');
    const argumentSets = actions.length > 0 ? actions.map(([, action]) => action) : [node];
    for (const args of argumentSets) {
      const value = convert(args, schema ?? { type: 'object' });
      calls.push({ name: toolName, input: isPlainObject(value) ? value : {} });
    }
  }
  return { kind: 'calls', calls };
}

/** The element children of a preserveOrder node list, as `[name, node]`. */
function elements(nodes: XNode[]): [string, XNode][] {
  const out: [string, XNode][] = [];
  for (const node of nodes) {
    const name = Object.keys(node).find((key) => key !== ':@' && !key.startsWith('#'));
    if (name !== undefined) out.push([name, node]);
  }
  return out;
}

function children(node: XNode): XNode[] {
  const name = Object.keys(node).find((key) => key !== ':@' && !key.startsWith('#'));
  const value = name === undefined ? undefined : node[name];
  return Array.isArray(value) ? (value as XNode[]) : [];
}

/** The text of an element: CDATA verbatim, other text cleaned (see the note at the top). */
function textOf(node: XNode): string {
  const kids = children(node);
  const cdata = kids.filter((kid) => kid['#cdata'] !== undefined);
  if (cdata.length > 0) {
    return cdata
      .map((kid) =>
        (kid['#cdata'] as XNode[])
          .map((t) => (typeof t['#text'] === 'string' ? t['#text'] : ''))
          .join(''),
      )
      .join('');
  }
  const raw = kids.map((kid) => (typeof kid['#text'] === 'string' ? kid['#text'] : '')).join('');
  if (!raw.includes('\n')) return raw.trim();
  return raw.replace(/^[ \t]*\r?\n/, '').replace(/\r?\n[ \t]*$/, '');
}

function convert(node: XNode, schema: Record<string, unknown> | undefined): unknown {
  const kids = elements(children(node));
  let type = schema === undefined ? undefined : typeOf(schema);
  // Without a schema, a list of `<item>` elements is an array.
  if (type === undefined && kids.length > 0 && kids.every(([key]) => key === 'item')) {
    type = 'array';
  }
  if (type === 'object' || (type === undefined && kids.length > 0)) {
    if (kids.length === 0) return parseJsonOr(textOf(node), {});
    const properties = asRecord(schema?.['properties']) ?? {};
    const out: Record<string, unknown> = {};
    for (const [key, kid] of kids) {
      const value = convert(kid, asRecord(properties[key]));
      if (key in out && type === undefined) {
        const existing = out[key];
        out[key] = Array.isArray(existing)
          ? [...(existing as unknown[]), value]
          : [existing, value];
      } else {
        out[key] = value;
      }
    }
    return out;
  }
  if (type === 'array') {
    if (kids.length === 0) {
      const text = textOf(node);
      return text === '' ? [] : parseJsonOr(text, text);
    }
    const items = asRecord(schema?.['items']);
    return kids.map(([, kid]) => convert(kid, items));
  }
  const text = textOf(node);
  if (type === 'number' || type === 'integer') {
    const number = Number(text);
    return text !== '' && Number.isFinite(number) ? number : text;
  }
  if (type === 'boolean') {
    if (/^true$/i.test(text)) return true;
    if (/^false$/i.test(text)) return false;
    return text;
  }
  if (type === 'null') return text === '' ? null : text;
  return text;
}

function parseJsonOr(text: string, fallback: unknown): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return fallback;
  }
}

const OPENER = /^ {0,3}(`{3,})[ \t]*xml[ \t]*$/i;

/**
 * Turns ```` ```xml ```` tool blocks in a stream of provider events into `tool_use` events. Text
 * outside such blocks passes through as it arrives (a line that may become a block's opening fence
 * is held until it is complete); a block is held until its closing fence and then becomes tool
 * uses, or goes out unchanged (with a warning when it looked like a tool call but did not parse).
 */
export class XmlToolExtractor {
  /** The start of the current line, held back because it may be an opening fence. */
  private held = '';
  /** Some of the current line already went out: it is not a fence. */
  private lineStarted = false;
  /** The lines of an open block (opener included), and its fence. */
  private block: string[] | undefined;
  private fence = '';
  private partial = '';
  /** Blank lines held back: before a tool block they go (the block brings its own spacing). */
  private blank = '';
  /** Tool uses just went out: text after them starts on a line of its own, after a blank one. */
  private afterCalls = false;

  constructor(
    private readonly lib: Pick<XmlLibrary, 'XMLParser' | 'XMLValidator'>,
    private readonly schemas: (name: string) => Record<string, unknown> | undefined,
    private readonly newId: () => string,
  ) {}

  /** The events to pass on for one event. */
  push(event: ProviderEvent): ProviderEvent[] {
    if (event.type === 'text') return this.text(event.text);
    if (event.type === 'done') return [...this.end(), event];
    return [event];
  }

  /** What is still held when the stream ends. */
  end(): ProviderEvent[] {
    const out: ProviderEvent[] = [];
    if (this.block !== undefined) {
      // An unclosed block: the reply ended inside it.
      const lines = this.block;
      const original = lines.map((line) => line + '\n').join('') + this.partial;
      const body = [...lines.slice(1), this.partial].join('\n');
      this.block = undefined;
      this.partial = '';
      out.push(...this.finishBlock(original, body));
    }
    const rest = this.blank + this.held;
    if (rest !== '') out.push({ type: 'text', text: rest });
    this.blank = '';
    this.held = '';
    this.lineStarted = false;
    return out;
  }

  private text(text: string): ProviderEvent[] {
    const out: ProviderEvent[] = [];
    let emitted = '';
    const flushText = (): void => {
      if (emitted !== '') out.push({ type: 'text', text: emitted });
      emitted = '';
    };
    const emit = (chunk: string): void => {
      if (chunk === '') return;
      if (this.afterCalls) {
        this.afterCalls = false;
        if (this.blank === '' && !chunk.startsWith('\n')) emitted += '\n';
      }
      emitted += this.blank + chunk;
      this.blank = '';
    };
    const pieces = text.split('\n');
    pieces.forEach((piece, index) => {
      const complete = index < pieces.length - 1;
      if (this.block !== undefined) {
        if (!complete) {
          this.partial += piece;
          return;
        }
        const line = this.partial + piece;
        this.partial = '';
        this.block.push(line);
        const closer = /^ {0,3}(`{3,})[ \t]*$/.exec(line);
        if (closer !== null && (closer[1] ?? '').length >= this.fence.length) {
          const lines = this.block;
          this.block = undefined;
          flushText();
          const original = lines.map((l) => l + '\n').join('');
          out.push(...this.finishBlock(original, lines.slice(1, -1).join('\n')));
        }
        return;
      }
      if (complete) {
        const line = this.held + piece;
        const started = this.lineStarted;
        const opener = started ? null : OPENER.exec(line);
        this.held = '';
        this.lineStarted = false;
        if (opener !== null) {
          flushText();
          this.block = [line];
          this.fence = opener[1] ?? '```';
          return;
        }
        if (!started && line.trim() === '') {
          this.blank += line + '\n';
          return;
        }
        emit(line + '\n');
        return;
      }
      this.held += piece;
      if (this.held === '') return;
      if (this.lineStarted || !/^ {0,3}(`*|`{3,}[ \t]*(x|xm|xml)?[ \t]*)$/i.test(this.held)) {
        emit(this.held);
        this.held = '';
        this.lineStarted = true;
      }
    });
    flushText();
    return out;
  }

  /** A finished (or, at the end, unfinished) block: tool uses, or its text back. */
  private finishBlock(original: string, body: string): ProviderEvent[] {
    let parsed: BlockParse;
    try {
      parsed = parseToolBlock(this.lib, body, this.schemas);
    } catch (error) {
      parsed = { kind: 'error', message: error instanceof Error ? error.message : String(error) };
    }
    if (parsed.kind === 'calls' && parsed.calls.length > 0) {
      this.blank = '';
      this.afterCalls = true;
      return parsed.calls.map((call) => ({
        type: 'tool_use' as const,
        id: this.newId(),
        name: call.name,
        input: call.input,
      }));
    }
    const out: ProviderEvent[] = [{ type: 'text', text: this.blank + original }];
    this.blank = '';
    if (parsed.kind === 'error') {
      out.unshift({
        type: 'warning',
        message: `The reply's XML tool call could not be read (${parsed.message}); it is kept as text and nothing ran.`,
      });
    }
    return out;
  }
}
