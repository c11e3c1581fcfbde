// The fixture corpus in test/fixtures/chat: realistic .chat files, each read into a compact
// summary of its tree (and, for some, of the prompt built from it) that is compared with values
// written out below. The summaries are deliberately lossy; the assertions after them check the
// details a summary cannot show.
import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type {
  ChatDocument,
  Diagnostic,
  Message,
  Segment,
  Span,
  ThinkingSegment,
  ToolResultSegment,
  ToolUseSegment,
} from '../../src/core/chat/ast.js';
import { classifyToolBlocks, resolutionText } from '../../src/core/chat/edits.js';
import { parseChat, parseLines, reparse, splitLines } from '../../src/core/chat/parser.js';
import {
  type AssistantPart,
  NO_RESULT_TEXT,
  type UserPart,
  assemblePrompt,
} from '../../src/core/chat/prompt.js';

const FIXTURE_DIR = new URL('../fixtures/chat/', import.meta.url);

const FIXTURES = [
  'basic_conversation',
  'coding_session',
  'interrupted_reply',
  'json_frontmatter',
  'legacy_placeholders',
  'malformed_document',
  'malformed_tools',
  'nested_backticks',
  'notes_and_roles',
  'parallel_incomplete',
  'pasted_fences',
  'placeholders',
  'result_formats',
  'templates_and_files',
  'thinking_signatures',
  'tool_calling',
] as const;

type FixtureName = (typeof FIXTURES)[number];

function fixture(name: FixtureName): string {
  return readFileSync(new URL(`${name}.chat`, FIXTURE_DIR), 'utf8');
}

const parse = (name: FixtureName): ChatDocument => parseChat(fixture(name));

// ---------------------------------------------------------------------------------------------
// Summaries

/** `7` for a one-line span, `7-11` otherwise. */
function lines(span: Span): string {
  return span.startLine === span.endLine
    ? String(span.startLine)
    : `${String(span.startLine)}-${String(span.endLine)}`;
}

/** `empty`, or the first line in quotes and how many more lines follow. */
function clip(text: string): string {
  if (text === '') return 'empty';
  const [first = '', ...rest] = text.split('\n');
  return rest.length === 0 ? `"${first}"` : `"${first}" +${String(rest.length)} lines`;
}

function tag(
  open: string,
  close: string,
  piece: { code: string; trimBefore: boolean; trimAfter: boolean },
): string {
  return `${open}${piece.trimBefore ? '-' : ''} ${piece.code} ${piece.trimAfter ? '-' : ''}${close}`;
}

function thinking(segment: ThinkingSegment): string {
  let out = 'thinking';
  if (segment.redacted) out += ' redacted';
  if (segment.signature !== undefined) {
    out += ` ${segment.signature.provider}:${segment.signature.value.slice(0, 8)}…`;
  }
  if (segment.selfClosing) return `${out} self-closing`;
  const count = segment.content === '' ? 0 : segment.content.split('\n').length;
  return `${out} (${count === 0 ? 'empty' : count === 1 ? '1 line' : `${String(count)} lines`})`;
}

function result(segment: ToolResultSegment): string {
  const words = [`result ${segment.toolUseId}`];
  if (segment.isError) words.push('error');
  if (segment.placeholder !== undefined) {
    words.push(`${segment.placeholder.status} (${segment.placeholder.form})`);
  }
  if (segment.meta !== undefined) words.push(JSON.stringify(segment.meta));
  words.push(clip(segment.content));
  if (segment.segments.some((piece) => piece.kind !== 'text')) {
    words.push(`→ ${segment.segments.map(summariseSegment).join(' ')}`);
  }
  return words.join(' ');
}

function summariseSegment(segment: Segment): string {
  switch (segment.kind) {
    case 'text':
      return 'text';
    case 'expression':
      return tag('{{', '}}', segment);
    case 'code':
      return tag('{%', '%}', segment);
    case 'file_reference':
      return `@${segment.path}${segment.mime === undefined ? '' : ` (${segment.mime})`}`;
    case 'thinking':
      return thinking(segment);
    case 'tool_use':
      return `use ${segment.name} ${segment.id} ${JSON.stringify(segment.input)}`;
    case 'tool_result':
      return result(segment);
    case 'aborted':
      return `aborted "${segment.message}"`;
    case 'slash_command':
      return `/${segment.name} ${JSON.stringify(segment.args)}`;
  }
}

/** The summary line of a tool use, built from the expected input object. */
const use = (name: string, id: string, input: unknown): string =>
  `use ${name} ${id} ${JSON.stringify(input)}`;

const summariseDiagnostic = (diagnostic: Diagnostic): string =>
  `${diagnostic.severity} ${diagnostic.code} ${lines(diagnostic.span)}`;

interface TreeSummary {
  /** `language lines`, or null without frontmatter. */
  frontmatter: string | null;
  /** Per message: `Role lines`, then one entry per segment. */
  messages: string[][];
  diagnostics: string[];
}

function summarise(document: ChatDocument): TreeSummary {
  return {
    frontmatter:
      document.frontmatter === undefined
        ? null
        : `${document.frontmatter.language} ${lines(document.frontmatter.span)}`,
    messages: document.messages.map((message) => [
      `${message.role} ${lines(message.span)}`,
      ...message.segments.map(summariseSegment),
    ]),
    diagnostics: document.diagnostics.map(summariseDiagnostic),
  };
}

function summarisePart(part: UserPart | AssistantPart): string {
  switch (part.kind) {
    case 'text':
      return `text ${clip(part.text)}`;
    case 'expression':
      return tag('{{', '}}', part);
    case 'code':
      return tag('{%', '%}', part);
    case 'file_reference':
      return `@${part.path}${part.mime === undefined ? '' : ` (${part.mime})`}`;
    case 'thinking':
      return `thinking ${part.redacted ? 'redacted' : (part.signature?.provider ?? 'unsigned')}`;
    case 'tool_use':
      return `use ${part.name} ${part.id}`;
    case 'tool_result': {
      const words = [`result ${part.name === '' ? '(no tool)' : part.name} ${part.toolUseId}`];
      if (part.isError) words.push('error');
      if (part.synthetic) words.push('synthetic');
      for (const piece of part.parts) words.push(summarisePart(piece));
      return words.join(' ');
    }
  }
}

interface PromptSummary {
  system: string[];
  /** Per message: `role line`, then one entry per part. */
  messages: string[][];
  /** `name id line N`, plus `aborted` for calls of an interrupted reply. */
  pending: string[];
  diagnostics: string[];
}

function summarisePrompt(document: ChatDocument): PromptSummary {
  const prompt = assemblePrompt(document);
  return {
    system: prompt.system.map(summarisePart),
    messages: prompt.messages.map((message) => {
      const parts: readonly (UserPart | AssistantPart)[] = message.parts;
      return [`${message.role} ${String(message.line)}`, ...parts.map(summarisePart)];
    }),
    pending: prompt.pendingToolCalls.map(
      (call) =>
        `${call.name} ${call.id} line ${String(call.line)}${call.aborted ? ' aborted' : ''}`,
    ),
    diagnostics: prompt.diagnostics.map(summariseDiagnostic),
  };
}

// ---------------------------------------------------------------------------------------------
// Accessors for the detailed checks

function message(document: ChatDocument, index: number): Message {
  const found = document.messages[index];
  if (found === undefined) throw new Error(`no message ${String(index)}`);
  return found;
}

function segmentsOf<K extends Segment['kind']>(
  document: ChatDocument,
  kind: K,
): Extract<Segment, { kind: K }>[] {
  return document.messages.flatMap((m) =>
    m.segments.filter((s): s is Extract<Segment, { kind: K }> => s.kind === kind),
  );
}

const toolUses = (document: ChatDocument): ToolUseSegment[] => segmentsOf(document, 'tool_use');
const toolResults = (document: ChatDocument): ToolResultSegment[] =>
  segmentsOf(document, 'tool_result');
const thinkings = (document: ChatDocument): ThinkingSegment[] => segmentsOf(document, 'thinking');

function at<T>(items: readonly T[], index: number): T {
  const item = items[index];
  if (item === undefined) throw new Error(`no item ${String(index)}`);
  return item;
}

/** The values of a message's text segments (to see exactly what was kept as text). */
const texts = (m: Message): string[] =>
  m.segments.flatMap((s) => (s.kind === 'text' ? [s.value] : []));

// ---------------------------------------------------------------------------------------------

describe('the fixture corpus', () => {
  it('lists every fixture file, and every fixture is tested below', () => {
    const files = readdirSync(FIXTURE_DIR)
      .filter((file) => file.endsWith('.chat'))
      .map((file) => file.slice(0, -'.chat'.length))
      .sort();
    expect(files).toEqual([...FIXTURES]);
  });
});

describe('fixture trees', () => {
  it('basic_conversation: lua frontmatter, ignored preamble, system prompt, two turns', () => {
    const d = parse('basic_conversation');
    expect(summarise(d)).toEqual({
      frontmatter: 'lua 1-4',
      messages: [
        ['System 7-10', 'text'],
        ['You 11-19', 'text', '{{ release }}', 'text'],
        ['Assistant 20-27', 'text'],
        ['You 28-30', 'text'],
        ['Assistant 31-38', 'text'],
        ['You 39-41'],
      ],
      diagnostics: [],
    });
    expect(d.frontmatter?.code).toBe('release = "0.4.2"\nflemma.opt.thinking = false');
    // Line 5 (the scratch note, with a template in it) belongs to no message.
    expect(d.messages.every((m) => m.span.startLine > 5)).toBe(true);
    expect(texts(message(d, 0))).toEqual([
      'You write short, friendly release notes for a Neovim plugin.\nPrefer bullet points. Never invent features.',
    ]);
    expect(d.lineCount).toBe(41);
  });

  it('json_frontmatter: a JSON object as frontmatter, its keys used as template variables', () => {
    const d = parse('json_frontmatter');
    expect(summarise(d)).toEqual({
      frontmatter: 'json 1-9',
      messages: [
        ['System 10-12', 'text', '{{ product }}', 'text'],
        ['You 13-19', 'text', '{{ customer }}', 'text'],
        ['Assistant 20-26', 'text'],
        ['You 27-29'],
      ],
      diagnostics: [],
    });
    expect(JSON.parse(d.frontmatter?.code ?? '')).toEqual({
      customer: 'Ana',
      product: 'Lumen Desk Lamp',
      flemma: { parameters: { temperature: 0.4 } },
    });
  });

  it('tool_calling: tool use, finished result, error result, signed thinking after the tool use', () => {
    const d = parse('tool_calling');
    expect(summarise(d)).toEqual({
      frontmatter: null,
      messages: [
        ['System 1-3', 'text'],
        ['You 4-6', 'text'],
        [
          'Assistant 7-19',
          'text',
          use('calculator', 'toolu_01A09q90qw90lq917835lgs0', { expression: '15 * 7' }),
          'thinking anthropic:EqQBCkYI… (1 line)',
        ],
        ['You 20-28', 'result toolu_01A09q90qw90lq917835lgs0 "105"', 'text'],
        [
          'Assistant 29-37',
          'text',
          use('calculator', 'toolu_01QpX8mW3nE5rT7yU9iO1aSd', { expression: '2 +* 3' }),
        ],
        [
          'You 38-44',
          'result toolu_01QpX8mW3nE5rT7yU9iO1aSd error "Invalid expression: [string "return 2 +* 3"]:1: unexpected symbol near \'*\'"',
        ],
        ['Assistant 45-47', 'text'],
        ['You 48-50'],
      ],
      diagnostics: [],
    });
    const [first] = toolUses(d);
    expect(first?.span).toEqual({ startLine: 10, endLine: 14 });
    expect(first?.fence).toEqual({
      ticks: '```',
      language: 'json',
      info: '',
      openLine: 12,
      closeLine: 14,
    });
    expect(at(thinkings(d), 0).content).toBe(
      'The user wants a product; use the calculator instead of mental arithmetic.',
    );
    expect(texts(message(d, 3))).toEqual(['Thanks! And what is 2 +* 3?']);
  });

  it('nested_backticks: 4-backtick fences around JSON and results that contain ```', () => {
    const d = parse('nested_backticks');
    expect(summarise(d)).toEqual({
      frontmatter: null,
      messages: [
        ['You 1-3', 'text'],
        [
          'Assistant 4-12',
          'text',
          use('write', 'toolu_01Hc7Tn2Vw9Lk4Pq6Rs8Xy3Z', {
            label: 'writing usage section',
            path: 'docs/README.md',
            content: '## Usage\n\n```lua\nrequire("flemma").setup({})\n```\n',
          }),
        ],
        [
          'You 13-21',
          'result toolu_01Hc7Tn2Vw9Lk4Pq6Rs8Xy3Z "Successfully wrote 49 bytes to docs/README.md"',
          'text',
        ],
        [
          'Assistant 22-29',
          use('read', 'toolu_01Bn5Mq8Wx2Ke7Lr4Tz9Pv6J', {
            label: 'reading README',
            path: 'docs/README.md',
            offset: null,
            limit: null,
          }),
        ],
        ['You 30-40', 'result toolu_01Bn5Mq8Wx2Ke7Lr4Tz9Pv6J "## Usage" +4 lines'],
        ['Assistant 41-51', 'text'],
        ['You 52-54'],
      ],
      diagnostics: [],
    });
    expect(at(toolUses(d), 0).fence.ticks).toBe('````');
    const read = at(toolResults(d), 1);
    expect(read.fence.ticks).toBe('````');
    expect(read.content).toBe('## Usage\n\n```lua\nrequire("flemma").setup({})\n```');
    // The assistant's own 4-backtick example stays text, inner fence and all.
    expect(texts(message(d, 5))).toEqual([
      'The file now reads:\n\n````markdown\n## Usage\n\n```lua\nrequire("flemma").setup({})\n```\n````',
    ]);
  });

  it('pasted_fences: role markers and tool blocks inside fences, lines that only look like fences', () => {
    const d = parse('pasted_fences');
    expect(summarise(d)).toEqual({
      frontmatter: null,
      messages: [
        ['You 1-8', 'text'],
        ['Assistant 9-11', 'text'],
        ['You 12-20', 'text'],
        ['Assistant 21-23', 'text'],
        ['You 24-26', 'text'],
        ['Assistant 27-29', 'text'],
        ['You 30-32', 'text'],
        ['Assistant 33-35', 'text'],
        ['You 36-44', 'text'],
        ['Assistant 45-59', 'text'],
        ['You 60-62'],
      ],
      diagnostics: [],
    });
    expect(at(texts(message(d, 0)), 0)).toContain(
      '```\n@You:\nWhat is the capital of France?\n```',
    );
    expect(at(texts(message(d, 2)), 0)).toContain('````md\n```\n@Assistant:\n```\n````');
    expect(texts(message(d, 4))).toEqual(['```How are you?```']);
    expect(texts(message(d, 6))).toEqual(['```Hello `World?']);
    // Tool blocks and thinking inside a code block are only examples: text, not structure.
    expect(at(texts(message(d, 8)), 0)).toContain('```\n**Tool Result:** `toolu_01Example`\n');
    expect(at(texts(message(d, 9)), 0)).toContain(
      '````markdown\n**Tool Use:** `bash` (`toolu_01Example`)\n',
    );
    expect(at(texts(message(d, 9)), 0)).toMatch(
      /<thinking>\nReasoning would go here\.\n<\/thinking>\n````$/,
    );
  });

  it('parallel_incomplete: two parallel tool uses, only the first answered', () => {
    const d = parse('parallel_incomplete');
    expect(summarise(d)).toEqual({
      frontmatter: 'lua 1-3',
      messages: [
        ['You 4-6', 'text'],
        [
          'Assistant 7-21',
          'text',
          use('read', 'toolu_01Ra8Ks3Ld6Mf9Ng2Ph5Qj7T', {
            label: 'reading Lua config',
            path: 'lua/flemma/config.lua',
            offset: null,
            limit: 40,
          }),
          use('read', 'toolu_01Wb4Xc7Yd1Ze5Af8Bg2Ch6D', {
            label: 'reading TS config',
            path: 'src/core/config.ts',
            offset: null,
            limit: 40,
          }),
        ],
        ['You 22-32', 'result toolu_01Ra8Ks3Ld6Mf9Ng2Ph5Qj7T "return {" +3 lines'],
      ],
      diagnostics: [],
    });
  });

  it('result_formats: malformed JSON and YAML results are plain text; file reference; error; duplicate', () => {
    const d = parse('result_formats');
    expect(summarise(d)).toEqual({
      frontmatter: null,
      messages: [
        ['You 1-3', 'text'],
        [
          'Assistant 4-17',
          use('bash', 'toolu_01Wt2Hx5Jc8Kv1Lb4Nm7Pq0R', {
            label: 'querying weather service',
            command: "curl -s 'localhost:8080/weather?city=Lisbon'",
            timeout: null,
          }),
          use('read', 'toolu_01Dp6Yf9Gs2Ht5Ju8Kw1Lx4M', {
            label: 'reading deploy config',
            path: 'deploy/app.yaml',
            offset: null,
            limit: null,
          }),
        ],
        [
          'You 18-35',
          'result toolu_01Wt2Hx5Jc8Kv1Lb4Nm7Pq0R "{ "result": 105, "unit": "celsius""',
          'result toolu_01Dp6Yf9Gs2Ht5Ju8Kw1Lx4M "service: weather" +3 lines',
          'text',
        ],
        ['Assistant 36-38', 'text'],
        ['You 39-41', 'text'],
        [
          'Assistant 42-49',
          use('read', 'toolu_01Sc3Rn6Tm9Vb2Wc5Xd8Ye1F', {
            label: 'viewing dashboard',
            path: 'screenshots/dashboard.png',
            offset: null,
            limit: null,
          }),
        ],
        [
          'You 50-56',
          'result toolu_01Sc3Rn6Tm9Vb2Wc5Xd8Ye1F "@./screenshots/dashboard.png;type=image/png" → @./screenshots/dashboard.png (image/png)',
        ],
        [
          'Assistant 57-65',
          'text',
          use('bash', 'toolu_01Kr7Lq0Mp3Nn6Oo9Pp2Qq5R', {
            label: 'restarting service',
            command: 'systemctl --user restart weather',
            timeout: 30,
          }),
        ],
        [
          'You 66-82',
          'result toolu_01Kr7Lq0Mp3Nn6Oo9Pp2Qq5R error "Failed to restart weather.service: Unit weather.service not found." +2 lines',
          'result toolu_01Kr7Lq0Mp3Nn6Oo9Pp2Qq5R empty',
          'text',
        ],
      ],
      diagnostics: ['warning tool-result-duplicate 75'],
    });
    const [json, yaml] = toolResults(d);
    expect(json?.fence.language).toBe('json');
    expect(yaml?.fence.language).toBe('yaml');
    expect(yaml?.segments).toMatchObject([
      { kind: 'text', value: 'service: weather\nreplicas: 2\nenv:\n  - CACHE_TTL=300' },
    ]);
    expect(at(toolResults(d), 2).segments).toEqual([
      {
        kind: 'file_reference',
        raw: './screenshots/dashboard.png;type=image/png',
        path: './screenshots/dashboard.png',
        mime: 'image/png',
        span: { startLine: 54, startCol: 0, endLine: 54, endCol: 43 },
      },
    ]);
  });

  it('thinking_signatures: anthropic, redacted, openai, vertex (self-closing and empty), unsigned', () => {
    const d = parse('thinking_signatures');
    expect(summarise(d)).toEqual({
      frontmatter: 'lua 1-3',
      messages: [
        ['You 4-6', 'text'],
        ['Assistant 7-16', 'text', 'thinking anthropic:ErUBCkYI… (4 lines)'],
        ['You 17-19', 'text'],
        ['Assistant 20-25', 'text', 'thinking redacted (1 line)'],
        ['You 26-28', 'text'],
        ['Assistant 29-37', 'text', 'thinking openai:gAAAAABo… (3 lines)'],
        ['You 38-40', 'text'],
        ['Assistant 41-45', 'text', 'thinking vertex:CiQB0e2K… self-closing'],
        ['You 46-48', 'text'],
        ['Assistant 49-54', 'text', 'thinking vertex:CiUB0e2K… (empty)'],
        ['You 55-57', 'text'],
        ['Assistant 58-64', 'text', 'thinking (1 line)'],
        ['You 65-67'],
      ],
      diagnostics: [],
    });
    const [anthropic, redacted, openai, selfClosing] = thinkings(d);
    expect(anthropic?.content).toBe(
      '2^61 - 1 = 2305843009213693951.\nThis is M61, a known Mersenne prime (Pervushin, 1883).\n\nAnswer yes and give the decimal value.',
    );
    expect(anthropic?.span).toEqual({ startLine: 10, endLine: 15 });
    expect(redacted?.signature).toBeUndefined();
    expect(redacted?.content).toMatch(/^EmwKAhgB.*8Y=$/);
    // Signatures are kept byte for byte: the provider checks them.
    expect(openai?.signature).toEqual({
      provider: 'openai',
      value:
        'gAAAAABoX2k7Qd1mV8sL3pR6tW9yB2eH5jN8qT1vX4zC7fI0kM3oS6uY9aD2gJ5lP8rU1wZ4bE7hK0nQ3tW6xA9cF2iL5oR8uX1',
    });
    expect(selfClosing).toMatchObject({ content: '', selfClosing: true, span: { startLine: 44 } });
  });

  it('interrupted_reply: abort markers in replies, one in user text, an aborted placeholder', () => {
    const d = parse('interrupted_reply');
    expect(summarise(d)).toEqual({
      frontmatter: null,
      messages: [
        ['You 1-3', 'text'],
        ['Assistant 4-11', 'text', 'aborted "Response interrupted by the user."'],
        ['You 12-16', 'text'],
        ['Assistant 17-19', 'text'],
        ['You 20-22', 'text'],
        [
          'Assistant 23-33',
          'text',
          use('bash', 'toolu_01Nq3Wr6Et9Yu2Io5Pa8Sd1F', {
            label: 'running write queue tests',
            command: 'npx vitest run test/unit/writequeue.test.ts',
            timeout: 120,
          }),
          'aborted "Response interrupted by the user."',
        ],
        ['You 34-41', 'result toolu_01Nq3Wr6Et9Yu2Io5Pa8Sd1F aborted (fence) empty'],
      ],
      diagnostics: [],
    });
    // In @You: the marker is ordinary text.
    expect(at(texts(message(d, 2)), 0)).toMatch(
      /\n<!-- flemma:aborted: Response interrupted by the user\. -->$/,
    );
  });

  it('placeholders: the current form, every status, user content in pending/approved/rejected blocks', () => {
    const d = parse('placeholders');
    expect(summarise(d)).toEqual({
      frontmatter: 'lua 1-3',
      messages: [
        ['System 4-6', 'text'],
        ['You 7-9', 'text'],
        [
          'Assistant 10-60',
          'text',
          use('bash', 'toolu_01Ab3Cd5Ef7Gh9Ij2Kl4Mn6P', {
            label: 'reading CI log',
            command: 'gh run view --log-failed | tail -n 20',
            timeout: null,
          }),
          use('bash', 'toolu_01Qr8St1Uv3Wx5Yz7Ab9Cd2E', {
            label: 'checking node version',
            command: 'node --version',
            timeout: null,
          }),
          use('ls', 'toolu_01Lz2Mx4Nc6Ov8Pb0Qn3Rm5S', {
            label: 'listing scripts',
            path: 'scripts',
            limit: null,
            max_depth: null,
          }),
          use('read', 'toolu_01Fg4Hi6Jk8Lm1No3Pq5Rs7T', {
            label: 'reading build script',
            path: 'scripts/build.mjs',
            offset: null,
            limit: null,
          }),
          use('write', 'toolu_01Uv9Wx2Yz4Ab6Cd8Ef1Gh3I', {
            label: 'pinning node version',
            path: '.nvmrc',
            content: '20\n',
          }),
          use('bash', 'toolu_01Jk5Lm7No9Pq2Rs4Tu6Vw8X', {
            label: 'reinstalling dependencies',
            command: 'rm -rf node_modules package-lock.json && npm install',
            timeout: 300,
          }),
          use('edit', 'toolu_01Yz1Ab3Cd5Ef7Gh9Ij2Kl4M', {
            label: 'bumping engines',
            path: 'package.json',
            oldText: '"node": ">=18"',
            newText: '"node": ">=20"',
          }),
          use('bash', 'toolu_01No6Pq8Rs1Tu3Vw5Xy7Za9B', {
            label: 'pushing the fix',
            command: "git commit -am 'ci: pin node 20' && git push",
            timeout: null,
          }),
        ],
        [
          'You 61-111',
          'result toolu_01Ab3Cd5Ef7Gh9Ij2Kl4Mn6P pending (fence) "build\tRun npm run build\t2024-11-04T09:12:44Z > node scripts/build.mjs" +4 lines',
          'result toolu_01Qr8St1Uv3Wx5Yz7Ab9Cd2E pending (fence) empty',
          'result toolu_01Lz2Mx4Nc6Ov8Pb0Qn3Rm5S approved (fence) empty',
          'result toolu_01Fg4Hi6Jk8Lm1No3Pq5Rs7T approved (fence) empty',
          'result toolu_01Uv9Wx2Yz4Ab6Cd8Ef1Gh3I approved (fence) "Actually write "20.18" so it matches the Dockerfile."',
          'result toolu_01Jk5Lm7No9Pq2Rs4Tu6Vw8X rejected (fence) "Don\'t delete the lockfile. Use `npm ci` instead."',
          'result toolu_01Yz1Ab3Cd5Ef7Gh9Ij2Kl4M denied (fence) empty',
          'result toolu_01No6Pq8Rs1Tu3Vw5Xy7Za9B rejected (fence) empty',
          'text',
        ],
      ],
      diagnostics: [],
    });
    const results = toolResults(d);
    // The fence is what makes a placeholder: tag `flemma:tool`, status in the info string.
    expect(results.map((r) => r.fence.info)).toEqual([
      'status=pending',
      'status=pending',
      'status=approve',
      'status=approved',
      'status=approved',
      'status=rejected',
      'status=denied',
      'status=rejected',
    ]);
    expect(results.every((r) => r.fence.language === 'flemma:tool' && !r.isError)).toBe(true);
    // Placeholders keep what the user typed as content, but it is not read for templates.
    expect(results.every((r) => r.segments.length === 0)).toBe(true);
    expect(at(results, 0).content.split('\n')).toHaveLength(5);
    expect(at(results, 0).content).toContain(
      "SyntaxError: The requested module 'node:fs/promises' does not provide an export named 'glob'",
    );
  });

  it('legacy_placeholders: the Flemma 0.11 header-suffix form, with an alias and content', () => {
    const d = parse('legacy_placeholders');
    expect(summarise(d)).toEqual({
      frontmatter: null,
      messages: [
        ['You 1-3', 'text'],
        [
          'Assistant 4-12',
          'text',
          use('bash', 'toolu_01Mv4Nb7Vc0Xz3Lk6Jh9Gf2D', {
            label: 'measuring build dir',
            command: 'du -sh build/',
            timeout: null,
          }),
        ],
        [
          'You 13-23',
          'result toolu_01Mv4Nb7Vc0Xz3Lk6Jh9Gf2D error "du: cannot access \'build/\': No such file or directory" +2 lines',
          'text',
        ],
        [
          'Assistant 24-56',
          'text',
          use('bash', 'toolu_01Sd5Fg8Hj1Kl4Zx7Cv0Bn3M', {
            label: 'measuring dist',
            command: 'du -sh dist/',
            timeout: null,
          }),
          use('bash', 'toolu_01Qw2Er5Ty8Ui1Op4As7Df0G', {
            label: 'removing temp files',
            command: "find dist/ -name '*.tmp' -delete",
            timeout: null,
          }),
          use('ls', 'toolu_01Zx3Cv6Bn9Ml2Kj5Hg8Fd1S', {
            label: 'listing dist',
            path: 'dist',
            limit: null,
            max_depth: 2,
          }),
          use('bash', 'toolu_01Pl0Ok9Ij8Uh7Yg6Tf5Rd4E', {
            label: 'clearing apt cache',
            command: 'sudo apt-get clean',
            timeout: null,
          }),
          use('bash', 'toolu_01Aq1Sw2De3Fr4Gt5Hy6Ju7K', {
            label: 'checking free space',
            command: 'df -h .',
            timeout: null,
          }),
        ],
        [
          'You 57-86',
          'result toolu_01Sd5Fg8Hj1Kl4Zx7Cv0Bn3M approved (suffix) empty',
          'result toolu_01Qw2Er5Ty8Ui1Op4As7Df0G rejected (suffix) "Only delete *.tmp files older than a day: add -mtime +1."',
          'result toolu_01Zx3Cv6Bn9Ml2Kj5Hg8Fd1S pending (suffix) empty',
          'result toolu_01Pl0Ok9Ij8Uh7Yg6Tf5Rd4E denied (suffix) empty',
          'result toolu_01Aq1Sw2De3Fr4Gt5Hy6Ju7K pending (suffix) "Filesystem      Size  Used Avail Use% Mounted on" +1 lines',
        ],
      ],
      diagnostics: [],
    });
    // The legacy form has a plain fence; the status is in the header.
    expect(toolResults(d).map((r) => r.fence.language)).toEqual(['', '', '', '', '', '']);
  });

  it('templates_and_files: expressions, code with trim markers, every file reference form', () => {
    const d = parse('templates_and_files');
    expect(summarise(d)).toEqual({
      frontmatter: 'lua 1-4',
      messages: [
        [
          'System 5-10',
          'text',
          '{{ reviewer }}',
          'text',
          '{{ os.date("%Y-%m-%d") }}',
          'text',
          '{% if reviewer == "Priya" then %}',
          'text',
          '{% end %}',
        ],
        [
          'You 11-20',
          'text',
          '{% for _, file in ipairs(files) do -%}',
          'text',
          '{{ file }}',
          'text',
          '{%- end %}',
          'text',
          '@./docs/style.md',
          'text',
          '@~/notes/review-checklist.md',
          'text',
          '@./screenshots/ci failure.png',
          'text',
          '@/tmp/ci-run-4812.log (text/plain)',
          'text',
        ],
        ['Assistant 21-28', 'text'],
        [
          'You 29-33',
          'text',
          '@../flemma.nvim/lua/flemma/parser.lua',
          'text',
          '@/home/priya/notes/parser.md',
        ],
        [
          'Assistant 34-41',
          use('read', 'toolu_01Ty6Ui9Op2As5Df8Gh1Jk4L', {
            label: 'reading diagram',
            path: 'docs/parser-diagram.png',
            offset: null,
            limit: null,
          }),
        ],
        [
          'You 42-49',
          'result toolu_01Ty6Ui9Op2As5Df8Gh1Jk4L "@./docs/parser-diagram.png;type=image/png" → @./docs/parser-diagram.png (image/png)',
        ],
      ],
      diagnostics: [],
    });
    // As written (the read result's own reference is nested in the result, see the summary).
    const references = segmentsOf(d, 'file_reference');
    expect(references.map((r) => r.raw)).toEqual([
      './docs/style.md',
      '~/notes/review-checklist.md',
      './screenshots/ci%20failure.png',
      '//tmp/ci-run-4812.log;type=text/plain',
      '../flemma.nvim/lua/flemma/parser.lua',
      '/home/priya/notes/parser.md',
    ]);
    // Trailing punctuation stays text; so does an `@./` right after a letter, and all of @Assistant:.
    const you = message(d, 1);
    expect(texts(you).at(-1)).toBe('.');
    expect(texts(message(d, 3)).at(-1)).toBe(
      ' (see the comment at the top).\nThe old mirror at mirror@./legacy is gone, ignore it.\nMy own notes on it are in ',
    );
    expect(at(texts(message(d, 2)), 0)).toContain('against @./docs/style.md.');
  });

  it('notes_and_roles: an unknown role, two system prompts, a lowercase marker', () => {
    const d = parse('notes_and_roles');
    expect(summarise(d)).toEqual({
      frontmatter: null,
      messages: [
        ['System 1-3', 'text'],
        ['Notes 4-9', 'text', '{{ topic }}', 'text', '@./bench/results.md', 'text'],
        ['You 10-12', 'text'],
        ['Assistant 13-15', 'text'],
        ['System 16-18', 'text'],
        ['You 19-21', 'text'],
        ['Assistant 22-24', 'text'],
        ['you 25-28', 'text'],
      ],
      diagnostics: [],
    });
    // `@You: what about …` has text after the colon: not a marker, just a line of the note.
    expect(texts(message(d, 1)).at(-1)).toBe('\n@You: what about requestAnimationFrame?');
  });

  it('malformed_tools: bad JSON, missing fences, YAML input, orphan, unknown status, unclosed result', () => {
    const d = parse('malformed_tools');
    expect(summarise(d)).toEqual({
      frontmatter: null,
      messages: [
        ['You 1-3', 'text'],
        [
          'Assistant 4-38',
          'text',
          'text',
          'text',
          use('bash', 'toolu_01Bs4Hn5Jm6Kl7Po8Iu9Yt0R', {
            label: 'renaming file',
            command: 'git mv src/config.ts src/settings.ts',
            timeout: null,
          }),
          use('ls', 'toolu_01Ls5Dk6Fj7Gh8Ty9Ur0Ei1W', {
            label: 'listing src',
            path: 'src',
            limit: null,
            max_depth: null,
          }),
        ],
        [
          'You 39-61',
          'result toolu_01Zq9Old8Run7From6Yes5Day "src/config.ts:12: export const config = load();"',
          'result toolu_01Bs4Hn5Jm6Kl7Po8Iu9Yt0R pending (fence) empty',
          'text',
        ],
      ],
      diagnostics: [
        'warning tool-use-json 7-11',
        'warning tool-use-missing-fence 15',
        'warning tool-use-json 19-25',
        'warning tool-result-orphaned 40',
        'warning placeholder-status 48',
        'warning tool-result-missing-fence 51',
        'warning tool-result-unclosed-fence 54-60',
        'warning fence-unclosed 56',
      ],
    });
    // Text around the broken tool uses is kept; the broken headers and fences are not.
    expect(texts(message(d, 1))).toEqual([
      "I'll find every import first.",
      "Then I'll list the files that need renaming.",
      'Next, the module itself.',
    ]);
    expect(texts(message(d, 2))).toEqual([
      'I ran ls myself: config.ts, index.ts, settings.ts, util/',
    ]);
    const messages = d.diagnostics.map((x) => x.message);
    expect(messages[0]).toMatch(
      /^Failed to parse tool input of 'grep' \(toolu_01Gr1Ep2Wq3Xr4Ys5Zt6Au7B\): /,
    );
    expect(messages[2]).toBe(
      "Failed to parse tool input of 'edit' (toolu_01Ed3Cv4Bn5Mq6Wx7Ez8Rt9Y): the input must be JSON, not yaml",
    );
    expect(messages[4]).toBe(
      "Unknown tool status in 'status=aproved' for toolu_01Bs4Hn5Jm6Kl7Po8Iu9Yt0R; use status=pending|approved|denied|rejected|aborted (read as pending)",
    );
  });

  it('malformed_document: unsupported frontmatter, unclosed thinking, an unclosed fence swallowing replies', () => {
    const d = parse('malformed_document');
    expect(summarise(d)).toEqual({
      frontmatter: 'yaml 1-4',
      messages: [
        ['You 5-7', 'text'],
        ['Assistant 8-13', 'text'],
        ['You 14-29', 'text'],
      ],
      diagnostics: [
        'error frontmatter-language 1-4',
        'warning thinking-unclosed 9',
        'warning fence-unclosed 17',
      ],
    });
    expect(d.diagnostics[0]?.message).toBe(
      'Unsupported frontmatter language: yaml (supported: json, lua)',
    );
    // The unclosed thinking block is kept as text, tag included.
    expect(at(texts(message(d, 1)), 0)).toMatch(/^<thinking>\nThe handler reads/);
    // Everything after the unclosed ```python, markers included, is the last @You: message.
    expect(at(texts(message(d, 2)), 0)).toMatch(
      /\n@Assistant:\nIt reads standard input.*\n\n@You:\nAh, of course\. Thanks!$/,
    );
  });

  it('coding_session: a long session with tool uses, results, errors and a retry', () => {
    const d = parse('coding_session');
    expect(summarise(d)).toEqual({
      frontmatter: 'lua 1-4',
      messages: [
        ['System 5-8', 'text'],
        ['You 9-11', 'text'],
        [
          'Assistant 12-24',
          'text',
          use('bash', 'toolu_01XkP9m2RvT4wQ7yZ3nB5cD8', {
            label: 'running unit tests',
            command: 'npx vitest run test/slug.test.ts',
            timeout: null,
          }),
          'thinking anthropic:EpYDCkYI… (1 line)',
        ],
        [
          'You 25-38',
          'result toolu_01XkP9m2RvT4wQ7yZ3nB5cD8 error " ❯ test/slug.test.ts (4 tests | 1 failed) 12ms" +7 lines',
        ],
        [
          'Assistant 39-47',
          'text',
          use('read', 'toolu_01Lm3Nq6Pr9St2Uv5Wx8Yz1A', {
            label: 'reading slugify',
            path: 'src/slug.ts',
            offset: null,
            limit: null,
          }),
        ],
        [
          'You 48-59',
          'result toolu_01Lm3Nq6Pr9St2Uv5Wx8Yz1A "export function slugify(title: string): string {" +5 lines',
        ],
        [
          'Assistant 60-68',
          'text',
          use('edit', 'toolu_01Bc4De7Fg0Hi3Jk6Lm9No2P', {
            label: 'normalising before slugging',
            path: 'src/slug.ts',
            oldText: '  return title\n    .toLowerCase()',
            newText: "  return title\n    .normalize('NFD')\n    .toLowerCase()",
          }),
        ],
        [
          'You 69-75',
          'result toolu_01Bc4De7Fg0Hi3Jk6Lm9No2P "Successfully replaced text in src/slug.ts."',
        ],
        [
          'Assistant 76-83',
          use('bash', 'toolu_01Qr5St8Uv1Wx4Yz7Ab0Cd3E', {
            label: 're-running slug tests',
            command: 'npx vitest run test/slug.test.ts',
            timeout: null,
          }),
        ],
        [
          'You 84-95',
          'result toolu_01Qr5St8Uv1Wx4Yz7Ab0Cd3E " ✓ test/slug.test.ts (4 tests) 9ms" +3 lines',
          'text',
        ],
        [
          'Assistant 96-104',
          'text',
          use('grep', 'toolu_01Fg6Hi9Jk2Lm5No8Pq1Rs4T', {
            label: 'finding other slug regexes',
            pattern: '\\[\\^a-z0-9\\]\\+',
            path: 'src',
            glob: '*.ts',
            limit: null,
          }),
        ],
        [
          'You 105-114',
          'result toolu_01Fg6Hi9Jk2Lm5No8Pq1Rs4T "src/slug.ts:5:    .replace(/[^a-z0-9]+/g, \'-\')" +3 lines',
        ],
        [
          'Assistant 115-123',
          'text',
          use('edit', 'toolu_01Uv7Wx0Yz3Ab6Cd9Ef2Gh5I', {
            label: 'normalising tag keys',
            path: 'src/tags.ts',
            oldText: "name.toLowerCase().replace(/[^a-z0-9]+/g, '-')",
            newText: "name.normalize('NFD').toLowerCase().replace(/[^a-z0-9]+/g, '-')",
          }),
        ],
        [
          'You 124-130',
          'result toolu_01Uv7Wx0Yz3Ab6Cd9Ef2Gh5I error "Could not find the exact text in src/tags.ts. The old text must match exactly including all whitespace and newlines."',
        ],
        [
          'Assistant 131-139',
          'text',
          use('edit', 'toolu_01Jk8Lm1No4Pq7Rs0Tu3Vw6X', {
            label: 'normalising tag keys',
            path: 'src/tags.ts',
            oldText: "name.toLowerCase().replace(/[^a-z0-9]+/g, '_')",
            newText: "name.normalize('NFD').toLowerCase().replace(/[^a-z0-9]+/g, '_')",
          }),
        ],
        [
          'You 140-146',
          'result toolu_01Jk8Lm1No4Pq7Rs0Tu3Vw6X "Successfully replaced text in src/tags.ts."',
        ],
        [
          'Assistant 147-154',
          use('bash', 'toolu_01Yz9Ab2Cd5Ef8Gh1Ij4Kl7M', {
            label: 'running the whole suite',
            command: 'npm test',
            timeout: 300,
          }),
        ],
        [
          'You 155-162',
          'result toolu_01Yz9Ab2Cd5Ef8Gh1Ij4Kl7M " Test Files  23 passed (23)" +1 lines',
        ],
        ['Assistant 163-173', 'text'],
        ['You 174-176'],
      ],
      diagnostics: [],
    });
    // A fenced code block in a reply is text, whatever it contains.
    expect(at(texts(message(d, 18)), 0)).toContain(
      "```ts\n// src/slug.ts and src/tags.ts\ntitle.normalize('NFD').toLowerCase()",
    );
  });
});

describe('fixture prompts (what would be sent)', () => {
  it('basic_conversation: system text, alternating turns, the empty last @You: dropped', () => {
    const d = parse('basic_conversation');
    expect(summarisePrompt(d)).toEqual({
      system: ['text "You write short, friendly release notes for a Neovim plugin." +1 lines'],
      messages: [
        [
          'user 11',
          'text "Here are the PRs merged since 0.4.1:" +6 lines',
          '{{ release }}',
          'text "."',
        ],
        ['assistant 20', 'text "## Flemma 0.4.2" +5 lines'],
        ['user 28', 'text "Nice. Add a one-line intro thanking contributors."'],
        [
          'assistant 31',
          'text "Thanks to everyone who sent a fix or a bug report this cycle!" +5 lines',
        ],
      ],
      pending: [],
      diagnostics: [],
    });
  });

  it('tool_calling: results carry the tool name; thinking keeps its signature', () => {
    const d = parse('tool_calling');
    expect(summarisePrompt(d)).toEqual({
      system: ['text "You are a careful assistant. Use the calculator for any arithmetic."'],
      messages: [
        ['user 4', 'text "What is 15 * 7?"'],
        [
          'assistant 7',
          'text "I\'ll calculate that for you."',
          'use calculator toolu_01A09q90qw90lq917835lgs0',
          'thinking anthropic',
        ],
        [
          'user 20',
          'result calculator toolu_01A09q90qw90lq917835lgs0 text "105"',
          'text "Thanks! And what is 2 +* 3?"',
        ],
        [
          'assistant 29',
          'text "Let me try that."',
          'use calculator toolu_01QpX8mW3nE5rT7yU9iO1aSd',
        ],
        [
          'user 38',
          'result calculator toolu_01QpX8mW3nE5rT7yU9iO1aSd error text "Invalid expression: [string "return 2 +* 3"]:1: unexpected symbol near \'*\'"',
        ],
        [
          'assistant 45',
          'text "`2 +* 3` isn\'t a valid expression: `+*` puts two operators in a row. Did you mean `2 + 3` (5) or `2 * 3` (6)?"',
        ],
      ],
      pending: [],
      diagnostics: [],
    });
  });

  it('parallel_incomplete: the unanswered call gets a synthetic error result and a warning', () => {
    const d = parse('parallel_incomplete');
    expect(summarisePrompt(d)).toEqual({
      system: [],
      messages: [
        [
          'user 4',
          'text "Compare the timeout defaults in lua/flemma/config.lua and src/core/config.ts."',
        ],
        [
          'assistant 7',
          'text "I\'ll read both files."',
          'use read toolu_01Ra8Ks3Ld6Mf9Ng2Ph5Qj7T',
          'use read toolu_01Wb4Xc7Yd1Ze5Af8Bg2Ch6D',
        ],
        [
          'user 22',
          // Results lead the message in the order of the tool uses, synthetic or not.
          'result read toolu_01Ra8Ks3Ld6Mf9Ng2Ph5Qj7T text "return {" +3 lines',
          `result read toolu_01Wb4Xc7Yd1Ze5Af8Bg2Ch6D error synthetic text "${NO_RESULT_TEXT}"`,
        ],
      ],
      pending: ['read toolu_01Wb4Xc7Yd1Ze5Af8Bg2Ch6D line 16'],
      diagnostics: ['warning tool-use-unresolved 16'],
    });
  });

  it('result_formats: JSON/YAML bodies sent as text, the file reference as a typed part', () => {
    const d = parse('result_formats');
    expect(summarisePrompt(d).messages).toEqual([
      [
        'user 1',
        'text "The weather widget shows nothing. Check the service and its deploy config."',
      ],
      [
        'assistant 4',
        'use bash toolu_01Wt2Hx5Jc8Kv1Lb4Nm7Pq0R',
        'use read toolu_01Dp6Yf9Gs2Ht5Ju8Kw1Lx4M',
      ],
      [
        'user 18',
        'result bash toolu_01Wt2Hx5Jc8Kv1Lb4Nm7Pq0R text "{ "result": 105, "unit": "celsius""',
        'result read toolu_01Dp6Yf9Gs2Ht5Ju8Kw1Lx4M text "service: weather" +3 lines',
        'text "The JSON is cut off. Why?"',
      ],
      [
        'assistant 36',
        'text "The service closed the connection before the body was complete, so the widget gets invalid JSON and shows nothing. With two replicas, one of them is probably crashing mid-response. Can you show me the dashboard?"',
      ],
      ['user 39', 'text "Here\'s a screenshot, read screenshots/dashboard.png."'],
      ['assistant 42', 'use read toolu_01Sc3Rn6Tm9Vb2Wc5Xd8Ye1F'],
      [
        'user 50',
        'result read toolu_01Sc3Rn6Tm9Vb2Wc5Xd8Ye1F @./screenshots/dashboard.png (image/png)',
      ],
      [
        'assistant 57',
        'text "Replica 2 restarts every few minutes (OOMKilled). I\'ll restart the unit to confirm it comes back."',
        'use bash toolu_01Kr7Lq0Mp3Nn6Oo9Pp2Qq5R',
      ],
      [
        'user 66',
        // NOTE: of two results for one id the last is sent (here the accidental empty one); the
        // parser warns about the duplicate (tool-result-duplicate).
        'result bash toolu_01Kr7Lq0Mp3Nn6Oo9Pp2Qq5R',
        'text "Oops, I pasted an empty block by accident; ignore the second one."',
      ],
    ]);
  });

  it('thinking_signatures: every thinking block is passed on with its signature', () => {
    const d = parse('thinking_signatures');
    const assistant = summarisePrompt(d).messages.filter((m) => m[0]?.startsWith('assistant'));
    expect(assistant.map((m) => m.slice(1).filter((p) => p.startsWith('thinking')))).toEqual([
      ['thinking anthropic'],
      ['thinking redacted'],
      ['thinking openai'],
      ['thinking vertex'],
      ['thinking vertex'],
      ['thinking unsigned'],
    ]);
  });

  it('interrupted_reply: a note for the text-only reply; the aborted tool call is pending', () => {
    const d = parse('interrupted_reply');
    expect(summarisePrompt(d)).toEqual({
      system: [],
      messages: [
        [
          'user 1',
          'text "Explain in detail how the write queue retries when a write hits textlock."',
        ],
        [
          'assistant 4',
          'text "The write queue keeps one FIFO per buffer. Every edit is wrapped in a job that" +3 lines',
          'text "<!-- Response interrupted by the user. -->"',
        ],
        [
          'user 12',
          'text "Too long, sorry. Just the retry part, in two sentences. Also, what does this line in my file mean?" +2 lines',
        ],
        [
          'assistant 17',
          'text "When a write fails with E565 (textlock), the job stays at the head of the queue and is tried again on the next tick. The line you quoted is the marker Flemma leaves when you cancel a reply, so the model knows its answer was cut off."',
        ],
        ['user 20', 'text "Run the tests for it."'],
        [
          'assistant 23',
          'text "I\'ll run the write queue tests."',
          'use bash toolu_01Nq3Wr6Et9Yu2Io5Pa8Sd1F',
        ],
        [
          'user 34',
          `result bash toolu_01Nq3Wr6Et9Yu2Io5Pa8Sd1F error synthetic text "${NO_RESULT_TEXT}"`,
        ],
      ],
      pending: ['bash toolu_01Nq3Wr6Et9Yu2Io5Pa8Sd1F line 26 aborted'],
      diagnostics: ['warning tool-use-unresolved 26'],
    });
  });

  it('placeholders: no placeholder is sent; every call gets a synthetic result', () => {
    const d = parse('placeholders');
    const ids = [
      ['bash', 'toolu_01Ab3Cd5Ef7Gh9Ij2Kl4Mn6P', 13],
      ['bash', 'toolu_01Qr8St1Uv3Wx5Yz7Ab9Cd2E', 19],
      ['ls', 'toolu_01Lz2Mx4Nc6Ov8Pb0Qn3Rm5S', 25],
      ['read', 'toolu_01Fg4Hi6Jk8Lm1No3Pq5Rs7T', 31],
      ['write', 'toolu_01Uv9Wx2Yz4Ab6Cd8Ef1Gh3I', 37],
      ['bash', 'toolu_01Jk5Lm7No9Pq2Rs4Tu6Vw8X', 43],
      ['edit', 'toolu_01Yz1Ab3Cd5Ef7Gh9Ij2Kl4M', 49],
      ['bash', 'toolu_01No6Pq8Rs1Tu3Vw5Xy7Za9B', 55],
    ] as const;
    expect(summarisePrompt(d)).toEqual({
      system: ['text "You are working in a Node project. Prefer small, reviewable changes."'],
      messages: [
        ['user 7', 'text "The build fails on CI. Find out why and fix it."'],
        [
          'assistant 10',
          'text "I\'ll look at the CI log, the environment and the build script, then pin the Node version."',
          ...ids.map(([name, id]) => `use ${name} ${id}`),
        ],
        [
          'user 61',
          ...ids.map(
            ([name, id]) => `result ${name} ${id} error synthetic text "${NO_RESULT_TEXT}"`,
          ),
          'text "I ran the CI log command myself (gh needs my token); the output is in the first block."',
        ],
      ],
      pending: ids.map(([name, id, line]) => `${name} ${id} line ${String(line)}`),
      diagnostics: ids.map(([, , line]) => `warning tool-use-unresolved ${String(line)}`),
    });
  });

  it('legacy_placeholders: the suffix form is excluded just the same', () => {
    const d = parse('legacy_placeholders');
    const prompt = summarisePrompt(d);
    expect(prompt.messages.map((m) => m[0])).toEqual([
      'user 1',
      'assistant 4',
      'user 13',
      'assistant 24',
      'user 57',
    ]);
    expect(prompt.messages[2]).toEqual([
      'user 13',
      'result bash toolu_01Mv4Nb7Vc0Xz3Lk6Jh9Gf2D error text "du: cannot access \'build/\': No such file or directory" +2 lines',
      'text "It\'s called dist/ in this repo."',
    ]);
    expect(
      prompt.messages[4]?.slice(1).every((p) => p.endsWith(`synthetic text "${NO_RESULT_TEXT}"`)),
    ).toBe(true);
    expect(prompt.pending).toEqual([
      'bash toolu_01Sd5Fg8Hj1Kl4Zx7Cv0Bn3M line 27',
      'bash toolu_01Qw2Er5Ty8Ui1Op4As7Df0G line 33',
      'ls toolu_01Zx3Cv6Bn9Ml2Kj5Hg8Fd1S line 39',
      'bash toolu_01Pl0Ok9Ij8Uh7Yg6Tf5Rd4E line 45',
      'bash toolu_01Aq1Sw2De3Fr4Gt5Hy6Ju7K line 51',
    ]);
  });

  it('templates_and_files: templates and file references stay typed parts for later evaluation', () => {
    const d = parse('templates_and_files');
    expect(summarisePrompt(d)).toEqual({
      system: [
        'text "You review TypeScript for "',
        '{{ reviewer }}',
        'text ". Today is "',
        '{{ os.date("%Y-%m-%d") }}',
        'text "." +1 lines',
        '{% if reviewer == "Priya" then %}',
        'text "" +2 lines',
        '{% end %}',
      ],
      messages: [
        [
          'user 11',
          'text "Please review these files:" +1 lines',
          '{% for _, file in ipairs(files) do -%}',
          'text "" +1 lines',
          '{{ file }}',
          'text "" +1 lines',
          '{%- end %}',
          'text "" +2 lines',
          '@./docs/style.md',
          'text ", and my checklist at "',
          '@~/notes/review-checklist.md',
          'text "." +1 lines',
          '@./screenshots/ci failure.png',
          'text " and the raw log is" +1 lines',
          '@/tmp/ci-run-4812.log (text/plain)',
          'text "."',
        ],
        [
          'assistant 21',
          'text "I went through both files against @./docs/style.md. Two findings:" +5 lines',
        ],
        [
          'user 29',
          'text "Compare the first finding with the Lua original in "',
          '@../flemma.nvim/lua/flemma/parser.lua',
          'text " (see the comment at the top)." +2 lines',
          '@/home/priya/notes/parser.md',
        ],
        ['assistant 34', 'use read toolu_01Ty6Ui9Op2As5Df8Gh1Jk4L'],
        [
          'user 42',
          'result read toolu_01Ty6Ui9Op2As5Df8Gh1Jk4L @./docs/parser-diagram.png (image/png)',
        ],
      ],
      pending: [],
      diagnostics: [],
    });
  });

  it('notes_and_roles: the last @System: wins; @Notes: and @you: are never sent', () => {
    const d = parse('notes_and_roles');
    expect(summarisePrompt(d)).toEqual({
      system: ['text "You are a concise assistant for a frontend team. Answer in German."'],
      messages: [
        ['user 10', 'text "What\'s the difference between debounce and throttle?"'],
        [
          'assistant 13',
          'text "Debounce runs a function once activity has stopped for a set time; throttle runs it at most once per interval while activity continues."',
        ],
        ['user 19', 'text "Give me a one-line example of each."'],
        [
          'assistant 22',
          'text "Debounce: die Suche erst 300 ms nach dem letzten Tastendruck starten. Throttle: die Scroll-Position höchstens alle 100 ms speichern."',
        ],
      ],
      pending: [],
      diagnostics: [],
    });
  });

  it('malformed_tools: broken tool uses are not sent, nor is the orphaned result', () => {
    const d = parse('malformed_tools');
    expect(summarisePrompt(d)).toEqual({
      system: [],
      messages: [
        ['user 1', 'text "Rename the `config` module to `settings` everywhere in src/."'],
        [
          'assistant 4',
          'text "I\'ll find every import first."',
          'text "Then I\'ll list the files that need renaming."',
          'text "Next, the module itself."',
          'use bash toolu_01Bs4Hn5Jm6Kl7Po8Iu9Yt0R',
          'use ls toolu_01Ls5Dk6Fj7Gh8Ty9Ur0Ei1W',
        ],
        [
          'user 39',
          `result bash toolu_01Bs4Hn5Jm6Kl7Po8Iu9Yt0R error synthetic text "${NO_RESULT_TEXT}"`,
          `result ls toolu_01Ls5Dk6Fj7Gh8Ty9Ur0Ei1W error synthetic text "${NO_RESULT_TEXT}"`,
          'text "I ran ls myself: config.ts, index.ts, settings.ts, util/"',
        ],
      ],
      pending: [
        'bash toolu_01Bs4Hn5Jm6Kl7Po8Iu9Yt0R line 27',
        'ls toolu_01Ls5Dk6Fj7Gh8Ty9Ur0Ei1W line 33',
      ],
      diagnostics: ['warning tool-use-unresolved 27', 'warning tool-use-unresolved 33'],
    });
  });

  it('coding_session: every call answered, turns alternate, nothing pending', () => {
    const d = parse('coding_session');
    const prompt = summarisePrompt(d);
    expect(prompt.system).toEqual([
      'text "You are a senior TypeScript engineer working in the repository at the current directory." +1 lines',
    ]);
    expect(prompt.messages.map((m) => m[0]?.split(' ')[0])).toEqual(
      Array.from({ length: 18 }, (_, i) => (i % 2 === 0 ? 'user' : 'assistant')),
    );
    expect(prompt.pending).toEqual([]);
    expect(prompt.diagnostics).toEqual([]);
  });
});

describe('fixture placeholders as the tool cycle will see them', () => {
  const ids = (blocks: readonly { id: string }[]): string[] => blocks.map((block) => block.id);

  it('placeholders: grouped by status and content, as docs/chat-format.md §8 describes', () => {
    const groups = classifyToolBlocks(parse('placeholders'));
    expect({
      pendingEmpty: ids(groups.pendingEmpty),
      pendingWithContent: ids(groups.pendingWithContent),
      approved: ids(groups.approved),
      approvedWithContent: ids(groups.approvedWithContent),
      denied: ids(groups.denied),
      rejected: ids(groups.rejected),
      aborted: ids(groups.aborted),
    }).toEqual({
      pendingEmpty: ['toolu_01Qr8St1Uv3Wx5Yz7Ab9Cd2E'],
      pendingWithContent: ['toolu_01Ab3Cd5Ef7Gh9Ij2Kl4Mn6P'],
      approved: ['toolu_01Lz2Mx4Nc6Ov8Pb0Qn3Rm5S', 'toolu_01Fg4Hi6Jk8Lm1No3Pq5Rs7T'],
      approvedWithContent: ['toolu_01Uv9Wx2Yz4Ab6Cd8Ef1Gh3I'],
      denied: ['toolu_01Yz1Ab3Cd5Ef7Gh9Ij2Kl4M'],
      rejected: ['toolu_01Jk5Lm7No9Pq2Rs4Tu6Vw8X', 'toolu_01No6Pq8Rs1Tu3Vw5Xy7Za9B'],
      aborted: [],
    });
    const [withReason, withoutReason] = groups.rejected;
    expect(resolutionText('rejected', withReason?.content ?? '')).toBe(
      "Don't delete the lockfile. Use `npm ci` instead.",
    );
    expect(resolutionText('rejected', withoutReason?.content ?? '')).toBe(
      'This tool has been rejected by the user.',
    );
    expect(resolutionText('denied', '')).toBe('The tool was denied by a policy.');
  });

  it('legacy_placeholders: the suffix form lands in the same groups', () => {
    const groups = classifyToolBlocks(parse('legacy_placeholders'));
    expect(ids(groups.approved)).toEqual(['toolu_01Sd5Fg8Hj1Kl4Zx7Cv0Bn3M']);
    expect(ids(groups.rejected)).toEqual(['toolu_01Qw2Er5Ty8Ui1Op4As7Df0G']);
    expect(ids(groups.pendingEmpty)).toEqual(['toolu_01Zx3Cv6Bn9Ml2Kj5Hg8Fd1S']);
    expect(ids(groups.denied)).toEqual(['toolu_01Pl0Ok9Ij8Uh7Yg6Tf5Rd4E']);
    expect(ids(groups.pendingWithContent)).toEqual(['toolu_01Aq1Sw2De3Fr4Gt5Hy6Ju7K']);
  });

  it("interrupted_reply: the aborted placeholder carries the marker's message", () => {
    const [block] = classifyToolBlocks(parse('interrupted_reply')).aborted;
    expect(block).toMatchObject({
      id: 'toolu_01Nq3Wr6Et9Yu2Io5Pa8Sd1F',
      abortMessage: 'Response interrupted by the user.',
    });
    expect(resolutionText('aborted', '', block?.abortMessage)).toBe(
      'Response interrupted by the user.',
    );
  });
});

describe('every fixture', () => {
  it.each(FIXTURES)('%s: parses without throwing, and parseLines gives the same tree', (name) => {
    const text = fixture(name);
    expect(() => parseChat(text)).not.toThrow();
    expect(parseLines(text.split('\n'))).toEqual(parseChat(text));
  });

  it.each(FIXTURES)('%s: gives the same tree with \\r\\n line endings', (name) => {
    const text = fixture(name);
    expect(text).not.toContain('\r');
    expect(parseChat(text.replaceAll('\n', '\r\n'))).toEqual(parseChat(text));
  });

  it.each(FIXTURES)('%s: spans stay inside the document and messages tile the body', (name) => {
    const d = parse(name);
    const inside = (span: Span): void => {
      expect(span.startLine).toBeGreaterThanOrEqual(1);
      expect(span.endLine).toBeLessThanOrEqual(d.lineCount);
      expect(span.startLine).toBeLessThanOrEqual(span.endLine);
    };
    for (const diagnostic of d.diagnostics) inside(diagnostic.span);
    d.messages.forEach((m, index) => {
      inside(m.span);
      const next = d.messages[index + 1];
      expect(m.span.endLine).toBe(next === undefined ? d.lineCount : next.span.startLine - 1);
      for (const segment of m.segments) {
        inside(segment.span);
        expect(segment.span.startLine).toBeGreaterThan(m.span.startLine);
        expect(segment.span.endLine).toBeLessThanOrEqual(m.span.endLine);
      }
    });
  });

  it.each(FIXTURES)(
    '%s: re-reading after the rest is appended at any line gives the same tree',
    (name) => {
      const lines = splitLines(fixture(name));
      const whole = parseLines(lines);
      for (let line = 1; line <= lines.length; line++) {
        const previous = parseLines(lines.slice(0, line - 1));
        expect(reparse(previous, lines, line)).toEqual(whole);
      }
    },
  );
});
