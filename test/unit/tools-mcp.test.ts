// The MCP bridge and manager without a server: a fake client stands in for the SDK (docs/mcp.md), and the manager's reconnecting is driven by the fake's events.
import { describe, expect, it } from 'vitest';
import type { ToolContext } from '../../src/core/tools/registry.js';
import { ToolRegistry } from '../../src/core/tools/registry.js';
import {
  bridgeMcpTool,
  callResultToOutcome,
  copySchema,
  describeContent,
  type McpCallResult,
  type McpToolInfo,
} from '../../src/core/tools/mcp/bridge.js';
import { mcpToolName, parseMcpToolName, toolSelected } from '../../src/core/tools/mcp/names.js';
import { nameGlob } from '../../src/core/util/glob.js';
import {
  expandReferences,
  parseMcpSettings,
  redact,
  type McpServerConfig,
  type SecretRef,
} from '../../src/core/tools/mcp/config.js';
import {
  type ConnectionEvents,
  type McpConnection,
  McpManager,
} from '../../src/core/tools/mcp/manager.js';
import { mcpStatusLines } from '../../src/core/tools/mcp/status.js';
import { STDIO } from '../helpers/mcp-config.js';

const READ_FILE: McpToolInfo = {
  name: 'read_file',
  description: 'Read a file',
  inputSchema: {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: { path: { type: 'string' } },
    required: ['path'],
  },
};

function ctx(signal = new AbortController().signal): ToolContext {
  return { signal } as unknown as ToolContext;
}

describe('F-16: bridging a server tool', () => {
  type Mode = 'normal' | 'isError' | 'throw';
  function fakeClient(mode: Mode): {
    calls: [string, Record<string, unknown>][];
    callTool: (t: string, a: Record<string, unknown>) => Promise<McpCallResult>;
  } {
    const calls: [string, Record<string, unknown>][] = [];
    return {
      calls,
      callTool: (tool, args) => {
        calls.push([tool, args]);
        if (mode === 'throw') return Promise.reject(new Error('E'));
        if (mode === 'isError') {
          return Promise.resolve({ isError: true, content: [{ type: 'text', text: 'boom' }] });
        }
        return Promise.resolve({ content: [{ type: 'text', text: 'contents of a' }] });
      },
    };
  }

  it('names, describes and copies the schema', () => {
    const def = bridgeMcpTool('fs', fakeClient('normal'), READ_FILE);
    expect(def.name).toBe('mcp:fs:read_file');
    expect(def.description).toBe('[MCP:fs] Read a file');
    expect(def.description.startsWith('[MCP:fs]')).toBe(true);
    expect(def.inputSchema).toEqual({
      type: 'object',
      properties: { path: { type: 'string' } },
      required: ['path'],
    });
    // A copy: changing the definition does not change what the server listed.
    (def.inputSchema['properties'] as Record<string, unknown>)['x'] = 1;
    expect(READ_FILE.inputSchema?.['properties']).toEqual({ path: { type: 'string' } });
    // The registry accepts it as it is.
    const registry = new ToolRegistry();
    registry.register(def);
    expect(registry.specs().map((s) => s.name)).toEqual(['mcp:fs:read_file']);
  });

  it('normal: calls callTool with the server tool name and the arguments', async () => {
    const client = fakeClient('normal');
    const def = bridgeMcpTool('fs', client, READ_FILE);
    const outcome = await def.execute?.({ path: 'a' }, ctx());
    expect(client.calls).toEqual([['read_file', { path: 'a' }]]);
    expect(outcome).toEqual({ ok: true, output: 'contents of a' });
  });

  it('isError: a failure whose error is the content', async () => {
    const def = bridgeMcpTool('fs', fakeClient('isError'), READ_FILE);
    expect(await def.execute?.({ path: 'a' }, ctx())).toEqual({ ok: false, error: 'boom' });
  });

  it('throw: a failure with the message', async () => {
    const def = bridgeMcpTool('fs', fakeClient('throw'), READ_FILE);
    expect(await def.execute?.({ path: 'a' }, ctx())).toEqual({ ok: false, error: 'E' });
  });

  it('passes the execution signal on (cancel and timeout reach the server call)', async () => {
    let seen: AbortSignal | undefined;
    const def = bridgeMcpTool(
      'fs',
      {
        callTool: (_t, _a, signal) => {
          seen = signal;
          return new Promise((_resolve, reject) => {
            signal.addEventListener('abort', () => {
              reject(new Error('aborted by the user'));
            });
          });
        },
      },
      READ_FILE,
    );
    const controller = new AbortController();
    const running = def.execute?.({ path: 'a' }, ctx(controller.signal));
    controller.abort();
    expect(await running).toEqual({ ok: false, error: 'aborted by the user' });
    expect(seen).toBe(controller.signal);
  });

  it('falls back to the title or name without a description; a schema-less tool gets an empty object schema', () => {
    const def = bridgeMcpTool('s', { callTool: () => Promise.resolve({}) }, { name: 'ping' });
    expect(def.description).toBe('[MCP:s] ping');
    expect(def.inputSchema).toEqual({ type: 'object', properties: {} });
    expect(copySchema({ type: 'object', properties: [] as unknown as object })).toEqual({
      type: 'object',
      properties: {},
    });
  });
});

describe('F-17: parseMcpToolName', () => {
  it('splits at the first two colons; other names are not MCP names', () => {
    expect(parseMcpToolName('mcp:fs:read:file')).toEqual({ server: 'fs', tool: 'read:file' });
    expect(parseMcpToolName('mcp:github:create_issue')).toEqual({
      server: 'github',
      tool: 'create_issue',
    });
    expect(parseMcpToolName('file.read')).toBeNull();
    expect(parseMcpToolName('mcp:fs')).toBeNull();
    expect(parseMcpToolName('mcp::x')).toBeNull();
  });

  it('mcpToolName builds the canonical name; characters the registry refuses become _', () => {
    expect(mcpToolName('fs', 'read_file')).toBe('mcp:fs:read_file');
    expect(mcpToolName('fs', 'read file/now')).toBe('mcp:fs:read_file_now');
    expect(parseMcpToolName(mcpToolName('fs', 'a:b'))).toEqual({ server: 'fs', tool: 'a:b' });
  });
});

describe('result conversion', () => {
  it('joins text, summarises other content, prefers text over structured content', () => {
    const png = Buffer.alloc(3000).toString('base64');
    const result: McpCallResult = {
      content: [
        { type: 'text', text: 'one' },
        { type: 'image', data: png, mimeType: 'image/png' },
        { type: 'resource_link', uri: 'file:///a.txt', name: 'a.txt' },
        { type: 'resource', resource: { uri: 'file:///b.txt', text: 'bee' } },
        { type: 'resource', resource: { uri: 'file:///c.bin', blob: 'AAAA', mimeType: 'x/y' } },
        { type: 'hologram' },
        { type: 'text', text: 'two' },
      ],
      structuredContent: { ignored: true },
    };
    expect(callResultToOutcome(result, 'mcp:s:t')).toEqual({
      ok: true,
      output: [
        'one',
        '[image: image/png, 2.9 KB]',
        '[resource link: a.txt <file:///a.txt>]',
        '[resource: file:///b.txt]\nbee',
        '[resource: file:///c.bin, x/y, 3 B]',
        '[hologram content]',
        'two',
      ].join('\n'),
    });
    expect(describeContent({ type: 'audio', mimeType: 'audio/wav' })).toBe(
      '[audio: audio/wav, no data]',
    );
  });

  it('structured content alone becomes a JSON output; an empty error gets a message', () => {
    expect(callResultToOutcome({ content: [], structuredContent: { n: 1 } }, 't')).toEqual({
      ok: true,
      output: { n: 1 },
    });
    expect(callResultToOutcome({ isError: true, content: [] }, 'mcp:s:t')).toEqual({
      ok: false,
      error: 'mcp:s:t reported an error without a message',
    });
    expect(callResultToOutcome({ toolResult: { old: true } }, 't')).toEqual({
      ok: true,
      output: '{\n  "old": true\n}',
    });
  });
});

describe('include / exclude', () => {
  it('globs over the server tool names; exclude wins', () => {
    expect(nameGlob('get_*')('get_issue')).toBe(true);
    expect(nameGlob('get_*')('list_issues')).toBe(false);
    expect(nameGlob('a.b?')('a.bc')).toBe(true);
    expect(nameGlob('a.b?')('axbc')).toBe(false);
    expect(toolSelected('get_issue', [], [])).toBe(true);
    expect(toolSelected('get_issue', ['get_*'], [])).toBe(true);
    expect(toolSelected('delete_repo', ['get_*'], [])).toBe(false);
    expect(toolSelected('get_secret', ['get_*'], ['*secret*'])).toBe(false);
  });
});

describe('the mcp configuration', () => {
  it('reads stdio and HTTP servers with defaults and reports bad ones by path', () => {
    const settings = parseMcpSettings({
      timeout: 5,
      reconnect: { max_attempts: 2, initial_delay: 10, max_delay: 100 },
      servers: {
        fs: { command: 'node', args: ['server.mjs'], env: { A: '1' }, cwd: '/tmp' },
        web: { url: 'http://127.0.0.1:9/mcp', headers: { Authorization: 'Bearer ${TOKEN}' } },
        off: { command: 'x', enabled: false },
        'bad:name': { command: 'x' },
        both: { command: 'x', url: 'http://x' },
        none: {},
        ftp: { url: 'ftp://x' },
        args: { command: 'x', args: 'no' },
      },
    });
    expect(settings.reconnect).toEqual({ maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 100 });
    expect(settings.servers).toEqual([
      {
        name: 'fs',
        transport: 'stdio',
        command: 'node',
        args: ['server.mjs'],
        env: { A: '1' },
        cwd: '/tmp',
        include: [],
        exclude: [],
        timeout: 5,
      },
      {
        name: 'web',
        transport: 'http',
        url: 'http://127.0.0.1:9/mcp',
        headers: { Authorization: 'Bearer ${TOKEN}' },
        include: [],
        exclude: [],
        timeout: 5,
      },
    ]);
    expect(settings.disabled).toEqual(['off']);
    expect(settings.problems).toEqual([
      'mcp.servers.args: `args` must be a list of strings',
      "mcp.servers.bad:name: a server name may use only letters, digits, '_' and '-' (it becomes part of the tool names, mcp:<server>:<tool>)",
      'mcp.servers.both: set either `command` (a server run over stdio) or `url` (Streamable HTTP), not both',
      'mcp.servers.ftp: `url` must start with http:// or https://',
      'mcp.servers.none: needs `command` (a server run over stdio) or `url` (Streamable HTTP)',
    ]);
    expect(parseMcpSettings({ servers: [] }).servers).toEqual([]);
    expect(parseMcpSettings(undefined).problems).toEqual([]);
  });

  it('expands ${VAR} and ${secret:kind:service}, keeps the values to scrub, and names a missing one', async () => {
    const seen: SecretRef[] = [];
    const lookup = (ref: SecretRef): Promise<string | undefined> => {
      seen.push(ref);
      if (ref.type === 'env')
        return Promise.resolve(ref.name === 'TOKEN' ? 'tok-12345' : undefined);
      return Promise.resolve(`${ref.kind}-for-${ref.service}`);
    };
    const secrets = new Set<string>();
    expect(await expandReferences('Bearer ${TOKEN}', lookup, secrets)).toBe('Bearer tok-12345');
    expect(await expandReferences('${secret:token:github}!', lookup, secrets)).toBe(
      'token-for-github!',
    );
    expect(seen).toEqual([
      { type: 'env', name: 'TOKEN' },
      { type: 'credential', kind: 'token', service: 'github' },
    ]);
    await expect(expandReferences('x ${MISSING}', lookup, secrets)).rejects.toThrow(
      '${MISSING}: the environment variable MISSING is not set',
    );
    await expect(expandReferences('${not ok}', lookup, secrets)).rejects.toThrow(
      'is neither ${VARIABLE} nor ${secret:<kind>:<service>}',
    );
    expect(redact('401 for tok-12345 and token-for-github', secrets)).toBe('401 for *** and ***');
  });
});

// ---------------------------------------------------------------------------------------------
// The manager

interface FakeServer {
  tools: McpToolInfo[];
  /** Make the next connects fail with this message (until set back to undefined). */
  refuse?: string | undefined;
  connects: number;
  events?: ConnectionEvents;
  /** Resolves each connect by hand when set. */
  gate?: Promise<void>;
  alive: boolean;
  closed: number;
}

function fakeServer(tools: string[]): FakeServer {
  return {
    tools: tools.map((name) => ({
      name,
      description: `the ${name} tool`,
      inputSchema: { type: 'object' },
    })),
    connects: 0,
    alive: true,
    closed: 0,
  };
}

function harness(
  servers: Record<string, FakeServer>,
  reconnect = { maxAttempts: 3, initialDelayMs: 5, maxDelayMs: 20 },
) {
  const registry = new ToolRegistry();
  const notes: string[] = [];
  const waiters: (() => void)[] = [];
  const manager = new McpManager({
    sink: registry,
    notify: (level, message) => notes.push(`${level}: ${message}`),
    onChange: () => {
      for (const wake of waiters.splice(0)) wake();
    },
    connect: async (config, events) => {
      const server = servers[config.name];
      if (server === undefined) throw new Error('no such fake');
      server.connects += 1;
      if (server.gate !== undefined) await server.gate;
      if (server.refuse !== undefined) throw new Error(server.refuse);
      server.events = events;
      server.alive = true;
      const conn: McpConnection = {
        listTools: () => Promise.resolve(server.tools),
        callTool: (tool, args) =>
          server.alive
            ? Promise.resolve({
                content: [{ type: 'text', text: `${tool} ${JSON.stringify(args)}` }],
              })
            : Promise.reject(new TypeError('fetch failed')),
        ping: () => (server.alive ? Promise.resolve() : Promise.reject(new Error('ECONNREFUSED'))),
        close: () => {
          server.closed += 1;
          return Promise.resolve();
        },
        pid: 4242,
      };
      return conn;
    },
  });
  /** Resolves at the next change for which `test` holds (checked now and after every change). */
  const until = async (test: () => boolean): Promise<void> => {
    while (!test()) await new Promise<void>((resolve) => waiters.push(resolve));
  };
  const configure = (configs: McpServerConfig[], disabled: string[] = []): void => {
    manager.configure({ servers: configs, disabled, reconnect, problems: [] });
  };
  return { registry, notes, manager, until, configure };
}

describe('the MCP manager', () => {
  it('registers a server tools once connected; a send waits meanwhile (readiness)', async () => {
    let open!: () => void;
    const fs = fakeServer(['read_file', 'write_file', 'list_dir']);
    fs.gate = new Promise((resolve) => (open = resolve));
    const h = harness({ fs });
    h.configure([STDIO('fs')]);
    expect(h.manager.isReady()).toBe(false);
    expect(h.manager.status()[0]?.state).toBe('starting');
    open();
    await h.until(() => h.manager.isReady());
    expect(h.registry.list().map((d) => d.name)).toEqual([
      'mcp:fs:list_dir',
      'mcp:fs:read_file',
      'mcp:fs:write_file',
    ]);
    const status = h.manager.status()[0];
    expect(status).toMatchObject({
      name: 'fs',
      transport: 'stdio',
      state: 'connected',
      target: 'fake',
      attempts: 0,
    });
    expect(status?.tools).toHaveLength(3);
    expect(typeof status?.uptimeMs).toBe('number');
    expect(h.manager.pids()).toEqual([4242]);
    // The registered definition calls the live connection.
    const outcome = await h.registry.get('mcp:fs:read_file')?.execute?.({ path: 'a' }, ctx());
    expect(outcome).toEqual({ ok: true, output: 'read_file {"path":"a"}' });
  });

  it('F-18: a server that stops loses all its tools at once; they come back when it reconnects', async () => {
    const fs = fakeServer(['read_file', 'write_file', 'list_dir']);
    const other = fakeServer(['ping']);
    const h = harness({ fs, other });
    h.configure([STDIO('fs'), STDIO('other')]);
    await h.until(() => h.manager.isReady());
    expect(h.registry.specs().map((s) => s.name)).toHaveLength(4);

    fs.refuse = 'spawn fake ENOENT';
    fs.events?.closed('the process exited with code 1');
    // At once, before any reconnect: every mcp:fs:* tool is gone, the other server keeps its own.
    expect(h.registry.specs().map((s) => s.name)).toEqual(['mcp:other:ping']);
    expect(h.manager.status()[0]?.state).toBe('reconnecting');
    expect(h.notes).toEqual([
      "warn: MCP server 'fs' stopped (the process exited with code 1): its 3 tool(s) are unavailable; reconnecting",
    ]);
    // A send now does not wait for it (only first attempts hold sends).
    expect(h.manager.isReady()).toBe(true);
    await h.until(() => fs.connects >= 2);
    fs.refuse = undefined;
    await h.until(() => h.manager.status()[0]?.state === 'connected');
    expect(h.registry.specs().map((s) => s.name)).toHaveLength(4);
    expect(h.notes.at(-1)).toBe("info: MCP server 'fs' is back (3 tool(s))");
  });

  it('gives up after reconnect.max_attempts with a warning that says how to retry; restart tries again', async () => {
    const fs = fakeServer(['read_file']);
    const h = harness({ fs }, { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 2 });
    h.configure([STDIO('fs')]);
    await h.until(() => h.manager.isReady());
    fs.refuse = 'connection refused';
    fs.events?.closed();
    await h.until(() => h.manager.status()[0]?.state === 'failed');
    // The loss, then two failed attempts.
    expect(fs.connects).toBe(3);
    expect(h.notes.at(-1)).toBe(
      "warn: MCP server 'fs' could not be reached after 2 attempt(s): connection refused. :Flemma mcp:restart fs tries again.",
    );
    expect(h.manager.status()[0]?.lastError).toBe('connection refused');
    fs.refuse = undefined;
    expect(h.manager.restart('fs')).toEqual(['fs']);
    expect(h.manager.isReady()).toBe(false);
    await h.until(() => h.manager.isReady());
    expect(h.manager.status()[0]?.state).toBe('connected');
    expect(h.registry.has('mcp:fs:read_file')).toBe(true);
    expect(() => h.manager.restart('nope')).toThrow("unknown MCP server 'nope' (configured: fs)");
  });

  it('a server that fails to start is reported once, does not hold sends, and is retried', async () => {
    const fs = fakeServer(['read_file']);
    fs.refuse = 'spawn nope ENOENT';
    const h = harness({ fs }, { maxAttempts: 1, initialDelayMs: 1, maxDelayMs: 1 });
    h.configure([STDIO('fs')]);
    await h.until(() => h.manager.isReady());
    expect(h.notes).toEqual([
      "warn: MCP server 'fs' failed to start: spawn nope ENOENT; retrying in the background",
    ]);
    await h.until(() => h.manager.status()[0]?.state === 'failed');
    expect(fs.connects).toBe(2);
    expect(h.registry.count()).toBe(0);
  });

  it('an HTTP server that vanished is noticed by a failed call (ping fails) and reconnected', async () => {
    const web = fakeServer(['search']);
    const h = harness({ web });
    h.configure([
      {
        name: 'web',
        transport: 'http',
        url: 'http://x',
        headers: {},
        include: [],
        exclude: [],
        timeout: 5,
      },
    ]);
    await h.until(() => h.manager.isReady());
    web.alive = false;
    web.refuse = 'fetch failed';
    const outcome = await h.registry.get('mcp:web:search')?.execute?.({}, ctx());
    expect(outcome).toEqual({ ok: false, error: 'fetch failed' });
    await h.until(() => h.manager.status()[0]?.state === 'reconnecting');
    expect(h.registry.has('mcp:web:search')).toBe(false);
    web.refuse = undefined;
    await h.until(() => h.manager.status()[0]?.state === 'connected');
    expect(h.registry.has('mcp:web:search')).toBe(true);
  });

  it('include / exclude choose the tools; status counts what was left out', async () => {
    const gh = fakeServer(['get_issue', 'get_secret', 'delete_repo']);
    const h = harness({ gh });
    h.configure([STDIO('gh', { include: ['get_*'], exclude: ['*secret*'] })]);
    await h.until(() => h.manager.isReady());
    expect(h.registry.list().map((d) => d.name)).toEqual(['mcp:gh:get_issue']);
    expect(h.manager.status()[0]).toMatchObject({ tools: ['mcp:gh:get_issue'], filtered: 2 });
  });

  it('configure: a changed server restarts, a removed one stops and loses its tools, an unchanged one is left alone', async () => {
    const a = fakeServer(['x']);
    const b = fakeServer(['y']);
    const h = harness({ a, b });
    h.configure([STDIO('a'), STDIO('b')], ['c']);
    await h.until(() => h.manager.isReady());
    expect(h.manager.names()).toEqual(['a', 'b', 'c']);
    expect(h.manager.status()[2]).toMatchObject({ name: 'c', state: 'disabled' });
    h.configure([STDIO('a'), STDIO('b', { args: ['--v2'] })]);
    await h.until(() => h.manager.isReady() && h.manager.status()[1]?.state === 'connected');
    expect(a.connects).toBe(1);
    expect(b.connects).toBe(2);
    expect(b.closed).toBe(1);
    h.configure([STDIO('a')]);
    expect(h.registry.list().map((d) => d.name)).toEqual(['mcp:a:x']);
    await h.manager.shutdown();
    expect(h.registry.count()).toBe(0);
    expect(a.closed).toBe(1);
  });

  it('a server that says its tools changed is listed again; the registry follows', async () => {
    const fs = fakeServer(['read_file', 'write_file']);
    const h = harness({ fs });
    h.configure([STDIO('fs', { exclude: ['write_*'] })]);
    await h.until(() => h.manager.isReady());
    expect(h.registry.list().map((d) => d.name)).toEqual(['mcp:fs:read_file']);
    fs.tools = [...fakeServer(['list_dir', 'write_file']).tools];
    fs.events?.toolsChanged?.();
    await h.until(() => h.registry.has('mcp:fs:list_dir'));
    expect(h.registry.list().map((d) => d.name)).toEqual(['mcp:fs:list_dir']);
    expect(h.manager.status()[0]).toMatchObject({
      state: 'connected',
      tools: ['mcp:fs:list_dir'],
      filtered: 1,
    });
  });

  it('a call to a server that is down fails with a clear message', async () => {
    const fs = fakeServer(['read_file']);
    const h = harness({ fs }, { maxAttempts: 0, initialDelayMs: 1, maxDelayMs: 1 });
    h.configure([STDIO('fs')]);
    await h.until(() => h.manager.isReady());
    const def = h.registry.get('mcp:fs:read_file');
    fs.events?.closed('exit');
    expect(h.manager.status()[0]?.state).toBe('failed');
    expect(await def?.execute?.({}, ctx())).toEqual({
      ok: false,
      error: "MCP server 'fs' is not connected (failed)",
    });
  });
});

describe(':Flemma mcp:status lines', () => {
  it('one block per server: transport, state, tools, uptime or next attempt, target, last error', () => {
    expect(mcpStatusLines([])).toEqual([
      'MCP: no server is configured (mcp.servers; see :help flemma-mcp)',
    ]);
    expect(
      mcpStatusLines([
        {
          name: 'fs',
          transport: 'stdio',
          target: 'npx server-fs .',
          state: 'connected',
          tools: ['mcp:fs:a', 'mcp:fs:b'],
          filtered: 1,
          attempts: 0,
          uptimeMs: 65_000,
        },
        {
          name: 'github',
          transport: 'http',
          target: 'https://example.test/mcp',
          state: 'reconnecting',
          tools: [],
          filtered: 0,
          attempts: 2,
          retryInMs: 1500,
          lastError: 'fetch failed',
        },
        {
          name: 'off',
          transport: 'stdio',
          target: '',
          state: 'disabled',
          tools: [],
          filtered: 0,
          attempts: 0,
        },
      ]),
    ).toEqual([
      'MCP servers (3):',
      '  fs      stdio, connected, 2 tools, 1 filtered out, up 1 min 5 s',
      '          npx server-fs .',
      '  github  http, reconnecting, 0 tools, next attempt in 1.5 s (2 failures)',
      '          https://example.test/mcp',
      '          last error: fetch failed',
      '  off     disabled (enabled = false)',
    ]);
  });
});
