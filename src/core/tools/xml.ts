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
// Pure: the XML library is passed in (loaded with import() by the host, `loadXml`). The reply's
// blocks are read in xml-extract.ts; this module builds the prompt and the messages sent back.

import type { EvaluatedMessage } from '../provider/types.js';
import { nameGlob } from '../util/glob.js';
import { type XmlLibrary, asRecord, isPlainObject, typeOf } from './xml-library.js';

export { type XmlLibrary, loadXml } from './xml-library.js';
export {
  type BlockParse,
  type XmlCall,
  XmlToolExtractor,
  extractXmlToolCalls,
  parseToolBlock,
} from './xml-extract.js';

export type ToolCalling = 'native' | 'xml';

/** What the system prompt section needs to know about a tool. */
export interface PromptTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  systemPrompt?: string | undefined;
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
