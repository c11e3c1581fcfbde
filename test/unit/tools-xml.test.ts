// XML tool calling (src/core/tools/xml.ts): the switch, the system prompt section (C-15), the
// parsing of XML tool blocks in a streamed reply, and the text a model without tool calling reads.
import { beforeAll, describe, expect, it } from 'vitest';
import type { ProviderEvent } from '../../src/core/provider/types.js';
import {
  type PromptTool,
  type XmlLibrary,
  XmlToolExtractor,
  callingMode,
  loadXml,
  parseToolBlock,
  toolsSystemSection,
  xmlMessages,
} from '../../src/core/tools/xml.js';
import { toolResultPart, toolUsePart } from '../helpers/evaluated-parts.js';

let lib: XmlLibrary;

beforeAll(async () => {
  lib = await loadXml();
});

const CALCULATOR: PromptTool = {
  name: 'calculator',
  description: 'Do a calculation on two numbers.',
  inputSchema: {
    type: 'object',
    properties: {
      num1: { type: 'number', description: 'The first number' },
      num2: { type: 'number' },
      operation: { type: 'string', enum: ['add', 'multiply'] },
    },
    required: ['num1', 'num2', 'operation'],
  },
};

const NOTES: PromptTool = {
  name: 'notes',
  description: 'Write notes.',
  inputSchema: {
    type: 'object',
    properties: {
      text: { type: 'string' },
      tags: { type: 'array', items: { type: 'string' } },
      urgent: { type: 'boolean' },
      meta: { type: 'object', properties: { count: { type: 'integer' } } },
    },
  },
  systemPrompt: '## Notes tool\nUse it to remember things.',
};

const schemas = (name: string): Record<string, unknown> | undefined =>
  [CALCULATOR, NOTES].find((tool) => tool.name === name)?.inputSchema;

describe('tools.calling', () => {
  it('is a mode, or a table where provider:model beats provider beats default', () => {
    expect(callingMode(undefined, 'anthropic', 'claude')).toBe('native');
    expect(callingMode('xml', 'anthropic', 'claude')).toBe('xml');
    expect(callingMode('bogus', 'anthropic', 'claude')).toBe('native');
    const table = {
      default: 'xml',
      anthropic: 'native',
      'openai_compatible:llama*': 'xml',
      'openai_compatible:llama3-tools': 'native',
      openai_compatible: 'native',
    };
    expect(callingMode(table, 'anthropic', 'claude')).toBe('native');
    expect(callingMode(table, 'gemini', 'gemini-2.5')).toBe('xml');
    expect(callingMode(table, 'openai_compatible', 'llama2')).toBe('xml');
    expect(callingMode(table, 'openai_compatible', 'llama3-tools')).toBe('native');
    expect(callingMode(table, 'openai_compatible', 'qwen')).toBe('native');
  });
});

describe('the system prompt section (C-15)', () => {
  it('native: each offered tool’s own system_prompt exactly once, byte-stable, gone with the tool', () => {
    const first = toolsSystemSection([NOTES, CALCULATOR], 'native');
    const second = toolsSystemSection([CALCULATOR, NOTES], 'native');
    expect(first).toBe('## Notes tool\nUse it to remember things.');
    expect(second).toBe(first);
    expect(first.split('Use it to remember things.').length - 1).toBe(1);
    expect(toolsSystemSection([CALCULATOR], 'native')).toBe('');
  });

  it('xml: the format, then every tool (its system_prompt, or one made from its schema)', () => {
    const section = toolsSystemSection([NOTES, CALCULATOR], 'xml', lib.XMLBuilder);
    expect(section).toBe(toolsSystemSection([CALCULATOR, NOTES], 'xml', lib.XMLBuilder));
    expect(section.startsWith('# Tools\n')).toBe(true);
    expect(section).toContain('<tool name="TOOL_NAME">');
    expect(section).toContain('### `calculator`');
    expect(section).toContain('- `num1` (number, required): The first number');
    expect(section).toContain('- `operation` (string, required, one of add, multiply)');
    expect(section).toContain('<tool name="calculator">\n  <action>\n    <num1>(number)</num1>');
    expect(section.split('## Notes tool').length - 1).toBe(1);
    // Sorted by name: calculator before notes.
    expect(section.indexOf('### `calculator`')).toBeLessThan(section.indexOf('## Notes tool'));
    expect(toolsSystemSection([], 'xml', lib.XMLBuilder)).toBe('');
  });
});

describe('parsing a tool block', () => {
  it('reads a calculator block (docs/tools.md, "XML tool calling"), converting values by the schema', () => {
    const body = `<tool name="calculator">
  <action>
    <num1>100</num1>
    <num2>50</num2>
    <operation>multiply</operation>
  </action>
</tool>`;
    expect(parseToolBlock(lib, body, schemas)).toEqual({
      kind: 'calls',
      calls: [{ name: 'calculator', input: { num1: 100, num2: 50, operation: 'multiply' } }],
    });
  });

  it('arrays, objects, booleans, CDATA, multi-line text, several tools and actions', () => {
    const body = `<tools>
  <tool name="notes">
    <action>
      <text>
line one
  line two
      </text>
      <tags><item>a</item><item>b</item></tags>
      <urgent>TRUE</urgent>
      <meta><count>3</count></meta>
    </action>
    <action>
      <text><![CDATA[if a < b & c then]]></text>
      <tags>["x"]</tags>
    </action>
  </tool>
  <tool name="calculator"><num1>1</num1><num2>2</num2><operation>add</operation></tool>
</tools>`;
    expect(parseToolBlock(lib, body, schemas)).toEqual({
      kind: 'calls',
      calls: [
        {
          name: 'notes',
          input: {
            text: 'line one\n  line two',
            tags: ['a', 'b'],
            urgent: true,
            meta: { count: 3 },
          },
        },
        { name: 'notes', input: { text: 'if a < b & c then', tags: ['x'] } },
        { name: 'calculator', input: { num1: 1, num2: 2, operation: 'add' } },
      ],
    });
  });

  it('a tool it does not know is still a call (the cycle answers "not found")', () => {
    expect(
      parseToolBlock(lib, '<tool name="foo"><action><x>1</x></action></tool>', schemas),
    ).toEqual({ kind: 'calls', calls: [{ name: 'foo', input: { x: '1' } }] });
  });

  it('other XML is text; a broken tool block is an error', () => {
    expect(parseToolBlock(lib, '<config><a>1</a></config>', schemas)).toEqual({ kind: 'text' });
    expect(parseToolBlock(lib, '<p>use <tool> tags</p>', schemas)).toEqual({ kind: 'text' });
    const broken = parseToolBlock(
      lib,
      '<tool name="calculator"><num1>1 < 2</num1></tool>',
      schemas,
    );
    expect(broken.kind).toBe('error');
    expect(parseToolBlock(lib, '<tool><action/></tool>', schemas)).toEqual({
      kind: 'error',
      message: 'a <tool> element has no name="…"',
    });
  });
});

/** Feeds `chunks` as text events (then done) and returns what comes out. */
function extract(chunks: string[]): ProviderEvent[] {
  let n = 0;
  const extractor = new XmlToolExtractor(lib, schemas, () => `xml_${String(++n)}`);
  const out: ProviderEvent[] = [];
  for (const text of chunks) out.push(...extractor.push({ type: 'text', text }));
  out.push(...extractor.push({ type: 'done', stopReason: 'end_turn' }));
  return out;
}

/** The text of the text events, joined. */
function textOf(events: ProviderEvent[]): string {
  return events.map((e) => (e.type === 'text' ? e.text : '')).join('');
}

/** Text events joined, other events kept. */
function merged(events: ProviderEvent[]): ProviderEvent[] {
  const out: ProviderEvent[] = [];
  for (const event of events) {
    const last = out[out.length - 1];
    if (event.type === 'text' && last?.type === 'text') last.text += event.text;
    else out.push(event.type === 'text' ? { ...event } : event);
  }
  return out;
}

const REPLY = [
  'Let me calculate.\n',
  '\n```xml\n<tool name="calculator">\n  <action>\n    <num1>100</num1>\n',
  '    <num2>50</num2>\n    <operation>multiply</operation>\n  </action>\n</tool>\n```\n',
  'Done.',
].join('');

describe('the stream extractor', () => {
  it('turns an XML block into a tool use, at any chunking, keeping the text around it', () => {
    const expected: ProviderEvent[] = [
      // The blank line before the block goes: the tool use block brings its own spacing.
      { type: 'text', text: 'Let me calculate.\n' },
      {
        type: 'tool_use',
        id: 'xml_1',
        name: 'calculator',
        input: { num1: 100, num2: 50, operation: 'multiply' },
      },
      { type: 'text', text: '\nDone.' },
      { type: 'done', stopReason: 'end_turn' },
    ];
    expect(merged(extract([REPLY]))).toEqual(expected);
    // One character at a time, and cut at every third character.
    expect(merged(extract(REPLY.split(/(?=[\s\S])/u)))).toEqual(expected);
    expect(merged(extract(REPLY.match(/[\s\S]{1,3}/g) ?? []))).toEqual(expected);
  });

  it('passes text through as it arrives (only a possible fence is held)', () => {
    let n = 0;
    const extractor = new XmlToolExtractor(lib, schemas, () => `xml_${String(++n)}`);
    expect(extractor.push({ type: 'text', text: 'Hello wor' })).toEqual([
      { type: 'text', text: 'Hello wor' },
    ]);
    expect(extractor.push({ type: 'text', text: 'ld\n``' })).toEqual([
      { type: 'text', text: 'ld\n' },
    ]);
    expect(extractor.push({ type: 'text', text: '`js\n' })).toEqual([
      { type: 'text', text: '```js\n' },
    ]);
  });

  it('keeps a block that is not a tool call, and a broken one with a warning', () => {
    const other = 'Here:\n```xml\n<config/>\n```\nok';
    expect(merged(extract([other]))).toEqual([
      { type: 'text', text: other },
      { type: 'done', stopReason: 'end_turn' },
    ]);
    const broken = 'Try:\n```xml\n<tool name="calculator"><num1>1 < 2</num1></tool>\n```\n';
    const events = extract([broken]);
    const warning = events.find((e) => e.type === 'warning');
    expect(warning?.type === 'warning' ? warning.message : '').toMatch(
      /XML tool call could not be read .*kept as text/,
    );
    expect(textOf(events)).toBe(broken);
    expect(events.some((e) => e.type === 'tool_use')).toBe(false);
  });

  it('reads a block the reply ended inside of, and gives back an unfinished one as text', () => {
    const unclosed = 'X\n```xml\n<tool name="calculator"><num1>1</num1></tool>';
    expect(merged(extract([unclosed]))).toMatchObject([
      { type: 'text', text: 'X\n' },
      { type: 'tool_use', name: 'calculator', input: { num1: 1 } },
      { type: 'done' },
    ]);
    const cut = 'X\n```xml\n<tool name="calculator"><num1>1</nu';
    const events = extract([cut]);
    expect(textOf(events)).toBe(cut);
  });
});

describe('messages for a model without tool calling', () => {
  it('writes tool uses as XML blocks and results as <tool_result> text', () => {
    const out = xmlMessages(
      [
        {
          role: 'assistant',
          parts: [
            { kind: 'text', text: 'Calculating.' },
            toolUsePart('xml_1', 'calculator', { num1: 100, tags: ['a'] }),
          ],
        },
        {
          role: 'user',
          parts: [
            toolResultPart('xml_1', 'calculator', '5000'),
            toolResultPart('xml_2', 'notes', 'boom', { isError: true }),
            { kind: 'text', text: 'Thanks' },
          ],
        },
      ],
      lib,
    );
    expect(out).toEqual([
      {
        role: 'assistant',
        parts: [
          { kind: 'text', text: 'Calculating.' },
          {
            kind: 'text',
            text:
              '```xml\n<tool name="calculator">\n  <action>\n    <num1>100</num1>\n' +
              '    <tags>\n      <item>a</item>\n    </tags>\n  </action>\n</tool>\n```',
          },
        ],
      },
      {
        role: 'user',
        parts: [
          {
            kind: 'text',
            text: '<tool_result name="calculator" status="success">\n5000\n</tool_result>',
          },
          { kind: 'text', text: '<tool_result name="notes" status="error">\nboom\n</tool_result>' },
          { kind: 'text', text: 'Thanks' },
        ],
      },
    ]);
    // What the model wrote reads back as the same call.
    const block = (out[0]?.parts[1] as { text: string }).text;
    expect(parseToolBlock(lib, block.slice('```xml\n'.length, -'\n```'.length), schemas)).toEqual({
      kind: 'calls',
      calls: [{ name: 'calculator', input: { num1: 100, tags: ['a'] } }],
    });
  });
});
