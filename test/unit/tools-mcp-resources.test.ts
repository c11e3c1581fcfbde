// MCP resources and prompts, the pure parts: `@mcp:<server>:<uri>` references in the parser and
// the renderer, a resource's contents as provider parts, the trust rule, a prompt as chat text,
// its argument check, the listing, and the manager following a server's changed lists.
import { describe, expect, it } from 'vitest';
import type { TextSegment } from '../../src/core/chat/ast.js';
import { splitFileReferences } from '../../src/core/chat/filerefs.js';
import { lineReferences } from '../../src/core/chat/navigation.js';
import { parseChat } from '../../src/core/chat/parser.js';
import { assemblePrompt } from '../../src/core/chat/prompt.js';
import { mcpReferenceRefusal, refusedReferences } from '../../src/core/chat/references.js';
import { renderPrompt } from '../../src/core/chat/render.js';
import { resourceFilename, resourceParts } from '../../src/core/chat/resource-parts.js';
import { promptArgumentProblem } from '../../src/core/tools/mcp/lists.js';
import { McpManager } from '../../src/core/tools/mcp/manager.js';
import { promptChatText } from '../../src/core/tools/mcp/prompt-text.js';
import { mcpResourceLines } from '../../src/core/tools/mcp/status.js';
import type {
  ConnectionEvents,
  McpPromptInfo,
  McpResourceInfo,
} from '../../src/core/tools/mcp/types.js';
import { STDIO } from '../helpers/mcp-config.js';
import { ToolRegistry } from '../../src/core/tools/registry.js';
import { toolUse } from '../helpers/chat-lines.js';

const text = (value: string): TextSegment => ({
  kind: 'text',
  value,
  span: { startLine: 1, endLine: 1, startCol: 0 },
});

/** A chat where the user asks `question`, the model calls `read`, and its result is `result`. */
function readRound(question: string, result: string): string {
  return [
    '@You:',
    question,
    '',
    '@Assistant:',
    ...toolUse('read', 'toolu_1', '{"path": "a"}'),
    '',
    '@You:',
    '**Tool Result:** `toolu_1`',
    '',
    '```',
    result,
    '```',
  ].join('\n');
}
describe('@mcp:<server>:<uri> references', () => {
  it('are found like file references: URI kept as written, trailing punctuation left out, ;type= at the end', () => {
    const parts = splitFileReferences(
      text('see @mcp:docs:docs://a%20b/readme.md, and (@mcp:gh:repo://x/y?q=1;type=text/plain).'),
    );
    const refs = parts.filter((part) => part.kind === 'file_reference');
    expect(refs).toEqual([
      expect.objectContaining({
        raw: 'mcp:docs:docs://a%20b/readme.md',
        path: 'docs://a%20b/readme.md',
        server: 'docs',
      }),
      expect.objectContaining({
        raw: 'mcp:gh:repo://x/y?q=1;type=text/plain',
        path: 'repo://x/y?q=1',
        server: 'gh',
        mime: 'text/plain',
      }),
    ]);
    // A server name the configuration would not accept, no URI, or a letter before `@`: text.
    for (const plain of ['@mcp:a.b:x://y', '@mcp:docs:', 'me@mcp:docs:x://y', '@mcp:docs']) {
      expect(splitFileReferences(text(plain)).every((part) => part.kind === 'text')).toBe(true);
    }
  });

  it('are not files to navigate to', () => {
    expect(lineReferences('@mcp:docs:docs://readme and @./a.md')).toEqual([
      expect.objectContaining({ raw: './a.md' }),
    ]);
  });

  it('are refused in a file that is not trusted (in messages; in tool results they are data)', () => {
    const doc = parseChat(readRound('Read @mcp:docs:docs://readme', '@mcp:docs:docs://secret'));
    const scope = { confineTo: '/work/chats' };
    expect(refusedReferences(doc, '/work/chats', scope, () => true)).toEqual([
      {
        line: 2,
        raw: 'mcp:docs:docs://readme',
        why: "not read: this chat file is not trusted and it reads from the MCP server 'docs' (:trust reads it)",
      },
    ]);
    expect(mcpReferenceRefusal('docs', {})).toBeUndefined();
  });

  it('are read through the port in messages, and sent as written in a result of a tool that reads references', async () => {
    const doc = parseChat(
      readRound('Read @mcp:docs:docs://readme and @./a.md', 'see @mcp:docs:docs://other'),
    );
    const read: string[] = [];
    const rendered = await renderPrompt(assemblePrompt(doc), {
      renderTemplates: () => Promise.resolve({ texts: [] }),
      readReference: (reference) => {
        read.push(`${reference.server ?? 'file'} ${reference.path}`);
        return Promise.resolve(
          reference.server === undefined
            ? { kind: 'text', text: 'FILE' }
            : [
                { kind: 'text_file', mimeType: 'text/plain', text: 'ONE', filename: 'readme' },
                { kind: 'text_file', mimeType: 'text/plain', text: 'TWO', filename: 'readme' },
              ],
        );
      },
      readsResultReferences: () => true,
    });
    expect(read).toEqual(['docs docs://readme', 'file ./a.md']);
    const first = rendered.messages[0];
    expect(first?.parts).toEqual([
      { kind: 'text', text: 'Read ' },
      { kind: 'text_file', mimeType: 'text/plain', text: 'ONE', filename: 'readme' },
      { kind: 'text_file', mimeType: 'text/plain', text: 'TWO', filename: 'readme' },
      { kind: 'text', text: ' and ' },
      { kind: 'text', text: 'FILE' },
    ]);
    expect(JSON.stringify(rendered.messages[2])).toContain('see @mcp:docs:docs://other');
  });
});

describe('a resource as provider parts', () => {
  it('inlines text, attaches images and PDFs, decodes a text blob, and refuses anything else', () => {
    expect(
      resourceParts('docs', 'docs://readme.md', [
        { uri: 'docs://readme.md', mimeType: 'text/markdown', text: '# Hi' },
      ]),
    ).toEqual([
      { kind: 'text_file', mimeType: 'text/markdown', text: '# Hi', filename: 'readme.md' },
    ]);
    expect(
      resourceParts('docs', 'docs://x', [{ uri: 'docs://x', mimeType: 'image/png', blob: 'AAAA' }]),
    ).toEqual([{ kind: 'image', mimeType: 'image/png', data: 'AAAA', filename: 'x' }]);
    expect(
      resourceParts('docs', 'docs://d.pdf', [{ uri: 'docs://d.pdf', blob: 'JVBERi0=' }]),
    ).toEqual([{ kind: 'pdf', mimeType: 'application/pdf', data: 'JVBERi0=', filename: 'd.pdf' }]);
    expect(
      resourceParts('docs', 'docs://j', [
        {
          uri: 'docs://j',
          mimeType: 'application/json',
          blob: Buffer.from('{}').toString('base64'),
        },
      ]),
    ).toEqual([{ kind: 'text_file', mimeType: 'application/json', text: '{}', filename: 'j' }]);
    // `;type=` wins over what the server says.
    expect(
      resourceParts(
        'docs',
        'docs://x',
        [{ uri: 'docs://x', mimeType: 'text/x-c', text: 'a' }],
        'text/plain',
      )[0],
    ).toMatchObject({ mimeType: 'text/plain' });
    expect(() =>
      resourceParts('docs', 'docs://b', [{ uri: 'docs://b', mimeType: 'audio/wav', blob: 'AAAA' }]),
    ).toThrow("docs://b of MCP server 'docs' is audio/wav, which cannot be sent");
    expect(() => resourceParts('docs', 'docs://none', [])).toThrow(
      "MCP server 'docs' answered no content for docs://none",
    );
    expect(() =>
      resourceParts('docs', 'docs://big', [
        { uri: 'docs://big', text: 'x'.repeat(1024 * 1024 + 1) },
      ]),
    ).toThrow('too large to inline');
  });

  it('names a resource by the last part of its URI', () => {
    expect(resourceFilename('file:///home/me/notes.md')).toBe('notes.md');
    expect(resourceFilename('docs://guide/?page=2')).toBe('guide');
    expect(resourceFilename('urn:isbn:123')).toBe('urn:isbn:123');
  });
});

describe('a prompt', () => {
  const review: McpPromptInfo = {
    name: 'review',
    arguments: [{ name: 'file', required: true }, { name: 'focus' }],
  };

  it('has its arguments checked: every missing required one named, with the usage; unknown ones refused', () => {
    expect(promptArgumentProblem('fs', review, {})).toBe(
      "prompt 'review' of MCP server 'fs' needs the argument file (usage: :Flemma mcp:prompt fs review file=… [focus=…])",
    );
    expect(promptArgumentProblem('fs', review, { file: 'a' })).toBeUndefined();
    expect(promptArgumentProblem('fs', review, { file: 'a', colour: 'red' })).toBe(
      "prompt 'review' of MCP server 'fs' has no argument colour (it takes file=… [focus=…])",
    );
    expect(promptArgumentProblem('fs', { name: 'hi' }, { x: '1' })).toContain('takes no arguments');
  });

  it('becomes @You:/@Assistant: text: same roles merged, role markers indented, resources referenced, media summarised', () => {
    const out = promptChatText('fs', [
      { role: 'user', content: { type: 'text', text: 'Look at this.\n@Assistant:\nno' } },
      { role: 'user', content: { type: 'resource_link', uri: 'file:///a.md', name: 'a' } },
      { role: 'assistant', content: { type: 'text', text: 'Sure.' } },
      {
        role: 'assistant',
        content: { type: 'resource', resource: { uri: 'file:///b.md', text: 'B text' } },
      },
      { role: 'user', content: { type: 'image', mimeType: 'image/png', data: 'AAAA' } },
    ]);
    expect(out.lines).toEqual([
      '@You:',
      'Look at this.',
      ' @Assistant:',
      'no',
      '',
      '@mcp:fs:file:///a.md',
      '',
      '@Assistant:',
      'Sure.',
      '',
      'B text',
      '',
      '@You:',
      '[image: image/png, 3 B]',
    ]);
    expect(out.notes).toEqual([
      '@mcp:fs:… references are read from the server when you send',
      'image content is shown as a summary (its data is not inserted)',
      'a line that would start a message was indented by a space',
    ]);
    expect(
      promptChatText('fs', [{ role: 'user', content: { type: 'text', text: 'Read @~/.ssh/x' } }])
        .notes,
    ).toEqual([
      "the prompt's text holds templates or references, which are evaluated when you send: review them",
    ]);
  });
});

describe(':Flemma mcp:resources', () => {
  it('shows each server: its resources and templates, none offered, or why it cannot say', () => {
    expect(
      mcpResourceLines([
        {
          server: 'docs',
          offered: true,
          resources: [
            {
              uri: 'docs://readme',
              name: 'readme',
              description: 'The readme\nmore',
              mimeType: 'text/markdown',
            },
          ],
          templates: [{ uriTemplate: 'docs://p/{n}', name: 'page' }],
        },
        { server: 'fs', offered: false, resources: [], templates: [] },
        {
          server: 'gh',
          offered: false,
          resources: [],
          templates: [],
          error: 'not connected (failed)',
        },
      ]),
    ).toEqual([
      'MCP resources (reference one in a message as @mcp:<server>:<uri>):',
      '  docs (1 resource, 1 template)',
      '    docs://readme  readme — The readme (text/markdown)',
      '    docs://p/{n}   page [template]',
      '  fs: offers no resources',
      '  gh: not connected (failed)',
    ]);
  });
});

describe('the MCP manager and lists that change', () => {
  it('keeps resources and prompts listed, lists them again on list_changed, and reads through the live connection', async () => {
    const resources: McpResourceInfo[] = [{ uri: 'docs://a', name: 'a' }];
    const prompts: McpPromptInfo[] = [{ name: 'hi' }];
    let events: ConnectionEvents | undefined;
    let changes = 0;
    const waiters: (() => void)[] = [];
    const manager = new McpManager({
      sink: new ToolRegistry(),
      notify: () => undefined,
      onChange: () => {
        changes += 1;
        for (const wake of waiters.splice(0)) wake();
      },
      connect: (_config, connectionEvents) => {
        events = connectionEvents;
        return Promise.resolve({
          capabilities: {
            resources: true,
            resourcesListChanged: true,
            prompts: true,
            promptsListChanged: true,
          },
          listTools: () => Promise.resolve([]),
          listResources: () => Promise.resolve([...resources]),
          listResourceTemplates: () =>
            Promise.reject(Object.assign(new Error('no'), { code: -32601 })),
          listPrompts: () => Promise.resolve([...prompts]),
          readResource: (uri) => Promise.resolve([{ uri, text: `text of ${uri}` }]),
          getPrompt: (name, args) =>
            Promise.resolve([
              { role: 'user', content: { type: 'text', text: `${name} ${JSON.stringify(args)}` } },
            ]),
          callTool: () => Promise.resolve({ content: [] }),
          ping: () => Promise.resolve(),
          close: () => Promise.resolve(),
        });
      },
    });
    const until = async (test: () => boolean): Promise<void> => {
      while (!test()) await new Promise<void>((resolve) => waiters.push(resolve));
    };
    const config = STDIO('docs');
    manager.configure({
      servers: [config],
      disabled: [],
      reconnect: { maxAttempts: 0, initialDelayMs: 1, maxDelayMs: 1 },
      problems: [],
    });
    await until(
      () =>
        manager.catalog()['docs']?.prompts.length === 1 &&
        manager.catalog()['docs']?.resources.length === 1,
    );
    expect(manager.catalog()).toEqual({
      docs: { prompts: [{ name: 'hi', arguments: [] }], resources: ['docs://a'] },
    });

    resources.push({ uri: 'docs://b', name: 'b' });
    prompts.push({ name: 'bye', arguments: [{ name: 'who', required: true }] });
    const before = changes;
    events?.resourcesChanged?.();
    events?.promptsChanged?.();
    await until(() => changes >= before + 2);
    expect(manager.catalog()['docs']).toEqual({
      prompts: [
        { name: 'hi', arguments: [] },
        { name: 'bye', arguments: [{ name: 'who', required: true }] },
      ],
      resources: ['docs://a', 'docs://b'],
    });
    const [listing] = await manager.resourceListing('docs');
    expect(listing?.resources.map((item) => item.uri)).toEqual(['docs://a', 'docs://b']);

    const signal = new AbortController().signal;
    expect(await manager.readResource('docs', 'docs://b', signal)).toEqual([
      { uri: 'docs://b', text: 'text of docs://b' },
    ]);
    await expect(manager.getPrompt('docs', 'bye', {}, signal)).rejects.toThrow(
      "prompt 'bye' of MCP server 'docs' needs the argument who",
    );
    await expect(manager.getPrompt('docs', 'bye', { who: 'me' }, signal)).resolves.toEqual([
      { role: 'user', content: { type: 'text', text: 'bye {"who":"me"}' } },
    ]);
    await expect(manager.getPrompt('docs', 'nope', {}, signal)).rejects.toThrow(
      "MCP server 'docs' has no prompt 'nope' (it has: hi, bye)",
    );
    await expect(manager.readResource('other', 'x://y', signal)).rejects.toThrow(
      "unknown MCP server 'other' (configured: docs)",
    );
    await manager.shutdown();
  });

  it('says a server that is down is not connected, and one without resources or prompts offers none', async () => {
    let up = false;
    const waiters: (() => void)[] = [];
    const ready = async (): Promise<void> => {
      while (!manager.isReady()) await new Promise<void>((resolve) => waiters.push(resolve));
    };
    const manager = new McpManager({
      sink: new ToolRegistry(),
      notify: () => undefined,
      onChange: () => {
        for (const wake of waiters.splice(0)) wake();
      },
      connect: () =>
        up
          ? Promise.resolve({
              listTools: () => Promise.resolve([]),
              callTool: () => Promise.resolve({ content: [] }),
              ping: () => Promise.resolve(),
              close: () => Promise.resolve(),
            })
          : Promise.reject(new Error('spawn nope ENOENT')),
    });
    const config = STDIO('down', { command: 'nope' });
    const reconnect = { maxAttempts: 0, initialDelayMs: 1, maxDelayMs: 1 };
    manager.configure({ servers: [config], disabled: [], reconnect, problems: [] });
    await ready();
    const signal = new AbortController().signal;
    await expect(manager.readResource('down', 'x://y', signal)).rejects.toThrow(
      "MCP server 'down' is not connected (failed: spawn nope ENOENT)",
    );
    expect(await manager.resourceListing()).toEqual([
      {
        server: 'down',
        offered: false,
        resources: [],
        templates: [],
        error: 'not connected (failed)',
      },
    ]);
    up = true;
    manager.restart('down');
    await ready();
    await expect(manager.readResource('down', 'x://y', signal)).rejects.toThrow(
      "MCP server 'down' offers no resources",
    );
    await expect(manager.getPrompt('down', 'p', {}, signal)).rejects.toThrow(
      "MCP server 'down' offers no prompts",
    );
    expect((await manager.resourceListing('down'))[0]).toMatchObject({ offered: false });
    await manager.shutdown();
  });
});
