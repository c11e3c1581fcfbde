// XML tool calling (CodeCompanion's original scheme), a fallback for models without native tool
// calling: no tool specs go to the provider; the system prompt describes each offered tool and the
// XML format instead, and an ```` ```xml ```` block of `<tool name="…">` elements in the reply is
// turned into ordinary tool uses (written as `**Tool Use:**` blocks, so the usual cycle applies).
// On the next request the tool uses and their results travel as text the model can read.
//
// The format (docs/tools.md, "XML tool calling"):
//
//     ```xml
//     <tool name="calculator">
//       <action>
//         <num1>100</num1>
//         <operation>multiply</operation>
//       </action>
//     </tool>
//     ```
//
// - One fenced block may hold several `<tool>` elements (or a `<tools>` element around them); a
//   `<tool>` with several `<action>` children is one call per action. Without `<action>`, the
//   children of `<tool>` itself are the arguments.
// - Values are read by the tool's JSON Schema: numbers, integers and booleans are converted, an
//   array is its child elements (`<item>`, any name) or JSON text, an object its child elements
//   or JSON text (without a schema: `<item>` children make an array, other children an object); anything else is text (`<![CDATA[…]]>` keeps `<` and `&` as they are). Text on
//   one line is trimmed; text over several lines loses the line break after the opening tag and
//   the indentation before the closing tag.
// - A fenced `xml` block whose top-level elements are not `<tool>`/`<tools>` is ordinary text.
//   One that is a tool block but does not parse stays in the reply as text, with a warning.
// - The system prompt section is built from sorted tools only, so it is byte-stable.
//
// Pure: the XML library is passed in (loaded with import() by the host, `loadXml`).

import type { EvaluatedMessage, ProviderEvent } from '../provider/types.js';
import { nameGlob } from '../util/glob.js';

export type ToolCalling = 'native' | 'xml';

/** What the system prompt section needs to know about a tool. */
export interface PromptTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  systemPrompt?: string | undefined;
}

/** The parts of fast-xml-parser this module uses. */
export interface XmlLibrary {
  XMLParser: new (options: Record<string, unknown>) => { parse(xml: string): unknown };
  XMLValidator: { validate(xml: string): true | { err: { msg: string; line: number } } };
  XMLBuilder: new (options: Record<string, unknown>) => { build(value: unknown): string };
}

/**
 * fast-xml-parser, loaded on first use (it is not part of the host's start-up bundle; the module
 * system keeps it once loaded).
 */
export async function loadXml(): Promise<XmlLibrary> {
  const m = (await import('fast-xml-parser')) as unknown as Partial<XmlLibrary> & {
    default?: XmlLibrary;
  };
  return (m.XMLParser === undefined && m.default !== undefined ? m.default : m) as XmlLibrary;
}

// ---------------------------------------------------------------------------------------------
// The switch

const MODES: readonly string[] = ['native', 'xml'];

/**
 * `tools.calling` for a provider and model: a mode, or a table whose most specific key wins —
 * `"<provider>:<model>"` (a model part with `*` is a glob over names, src/core/util/glob.ts),
 * then `"<provider>"`, then `default` — and `native` when nothing matches.
 */
export function callingMode(setting: unknown, provider: string, model: string): ToolCalling {
  if (typeof setting === 'string')
    return MODES.includes(setting) ? (setting as ToolCalling) : 'native';
  if (typeof setting !== 'object' || setting === null) return 'native';
  const table = setting as Record<string, unknown>;
  const pick = (value: unknown): ToolCalling | undefined =>
    typeof value === 'string' && MODES.includes(value) ? (value as ToolCalling) : undefined;
  const exact = pick(table[`${provider}:${model}`]);
  if (exact !== undefined) return exact;
  // Wildcard keys, the longest pattern first (more specific), ties by key.
  const patterns = Object.keys(table)
    .filter((key) => key.startsWith(`${provider}:`) && key.includes('*'))
    .sort((a, b) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));
  for (const key of patterns) {
    const matches = nameGlob(key.slice(provider.length + 1));
    const mode = pick(table[key]);
    if (mode !== undefined && matches(model)) return mode;
  }
  return pick(table[provider]) ?? pick(table['default']) ?? 'native';
}

// ---------------------------------------------------------------------------------------------
// The system prompt

const XML_INSTRUCTIONS = `# Tools

You can use the tools listed below. To call a tool, reply with an XML code block of this form:

\`\`\`xml
<tool name="TOOL_NAME">
  <action>
    <PARAMETER_NAME>VALUE</PARAMETER_NAME>
  </action>
</tool>
\`\`\`

Rules:
- Put each argument in its own element inside \`<action>\`, named after the parameter.
- Write text as it is, but wrap text containing \`<\` or \`&\` in \`<![CDATA[ … ]]>\`.
- For an array, repeat an \`<item>\` element per entry; for an object, nest one element per key.
- To call several tools, put several \`<tool>\` elements in the same block.
- After the block, stop and wait: the results come back in the next message as \`<tool_result>\` elements.

## Available tools`;

/**
 * The section appended to the system prompt for the tools offered: in native mode the tools'
 * own `systemPrompt`s (empty when none has one); in XML mode the format, then every tool's
 * `systemPrompt` or a description generated from its schema. Sorted by name; byte-stable.
 */
export function toolsSystemSection(
  tools: readonly PromptTool[],
  mode: ToolCalling,
  build?: XmlLibrary['XMLBuilder'],
): string {
  const sorted = [...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (mode === 'native') {
    const texts = sorted
      .map((tool) => tool.systemPrompt?.trim() ?? '')
      .filter((text) => text !== '');
    return texts.join('\n\n');
  }
  if (sorted.length === 0) return '';
  const parts = [XML_INSTRUCTIONS];
  for (const tool of sorted) {
    const own = tool.systemPrompt?.trim();
    parts.push(own !== undefined && own !== '' ? own : defaultToolPrompt(tool, build));
  }
  return parts.join('\n\n');
}

/** A tool's description for XML calling, from its schema (when it brings no `system_prompt`). */
export function defaultToolPrompt(
  tool: PromptTool,
  build: XmlLibrary['XMLBuilder'] | undefined,
): string {
  const properties = asRecord(tool.inputSchema['properties']) ?? {};
  const required = new Set(
    Array.isArray(tool.inputSchema['required']) ? (tool.inputSchema['required'] as string[]) : [],
  );
  const lines = [`### \`${tool.name}\``, '', tool.description.trim()];
  const names = Object.keys(properties).sort();
  if (names.length > 0) {
    lines.push('', 'Parameters:');
    for (const name of names) {
      const schema = asRecord(properties[name]) ?? {};
      const type = typeOf(schema) ?? 'any';
      const notes = [type, required.has(name) ? 'required' : 'optional'];
      const enumValues = Array.isArray(schema['enum']) ? (schema['enum'] as unknown[]) : undefined;
      if (enumValues !== undefined) notes.push(`one of ${enumValues.map(String).join(', ')}`);
      const description =
        typeof schema['description'] === 'string' ? `: ${schema['description']}` : '';
      lines.push(`- \`${name}\` (${notes.join(', ')})${description}`);
    }
  }
  if (build !== undefined) {
    const example: Record<string, unknown> = {};
    for (const name of names) example[name] = exampleValue(asRecord(properties[name]) ?? {});
    lines.push('', 'Example:', '', '```xml', renderCall(build, tool.name, example), '```');
  }
  return lines.join('\n');
}

function exampleValue(schema: Record<string, unknown>): unknown {
  if (Array.isArray(schema['enum']) && schema['enum'].length > 0) return schema['enum'][0];
  if (schema['default'] !== undefined) return schema['default'];
  const type = typeOf(schema);
  if (type === 'array') return [exampleValue(asRecord(schema['items']) ?? {})];
  if (type === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, sub] of Object.entries(asRecord(schema['properties']) ?? {})) {
      out[key] = exampleValue(asRecord(sub) ?? {});
    }
    return out;
  }
  return `(${type ?? 'value'})`;
}

// ---------------------------------------------------------------------------------------------
// Outbound: tool uses and results as text

/** A tool call as the model writes it (no id: results come back in call order). */
export function renderCall(
  Builder: XmlLibrary['XMLBuilder'],
  name: string,
  input: unknown,
): string {
  const builder = new Builder({
    format: true,
    indentBy: '  ',
    ignoreAttributes: false,
    attributeNamePrefix: '@_',
    suppressEmptyNode: false,
  });
  const action = toXmlValue(isPlainObject(input) ? input : {});
  return builder.build({ tool: { '@_name': name, action } }).trimEnd();
}

function toXmlValue(value: unknown): unknown {
  if (Array.isArray(value)) return { item: value.map(toXmlValue) };
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, sub] of Object.entries(value)) out[key] = toXmlValue(sub);
    return out;
  }
  if (value === null || value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * The messages of a request as an XML-calling model reads them: an assistant's tool uses become
 * ```` ```xml ```` text blocks, a user's tool results become `<tool_result>` text (other parts,
 * such as images a result carries, stay as they are).
 */
export function xmlMessages(
  messages: readonly EvaluatedMessage[],
  lib: Pick<XmlLibrary, 'XMLBuilder'>,
): EvaluatedMessage[] {
  return messages.map((message): EvaluatedMessage => {
    if (message.role === 'assistant') {
      return {
        role: 'assistant',
        parts: message.parts.map((part) =>
          part.kind === 'tool_use'
            ? {
                kind: 'text' as const,
                text: '```xml\n' + renderCall(lib.XMLBuilder, part.name, part.input) + '\n```',
              }
            : part,
        ),
      };
    }
    const parts: typeof message.parts = [];
    for (const part of message.parts) {
      if (part.kind !== 'tool_result') {
        parts.push(part);
        continue;
      }
      const text = part.parts
        .map((p) => (p.kind === 'text' ? p.text : p.kind === 'text_file' ? p.text : ''))
        .filter((t) => t !== '')
        .join('\n');
      const status = part.isError ? 'error' : 'success';
      parts.push({
        kind: 'text',
        text: `<tool_result name="${escapeAttribute(part.name)}" status="${status}">\n${text}\n</tool_result>`,
      });
      for (const p of part.parts) if (p.kind !== 'text' && p.kind !== 'text_file') parts.push(p);
    }
    return { role: 'user', parts };
  });
}

function escapeAttribute(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

// ---------------------------------------------------------------------------------------------
// Inbound: XML blocks in a streamed reply

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

function typeOf(schema: Record<string, unknown>): string | undefined {
  const type = schema['type'];
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) return type.find((t) => t !== 'null') as string | undefined;
  if (schema['properties'] !== undefined) return 'object';
  return undefined;
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

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return asRecord(value) !== undefined;
}
