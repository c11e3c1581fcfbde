// Declarative tools (docs/tools.md, "Declarative tools"): loading YAML/JSON definitions from a directory, the schema
// built from `params`, the template language, and each implementation against real things: a
// local HTTP server on 127.0.0.1, real processes, real files in a temp directory.
// The rules of docs/tools.md, "Declarative tools".
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { existsSync, realpathSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import {
  type ContextInit,
  WriteJournal,
  createExecutionContext,
  noSandbox,
} from '../../src/core/tools/context.js';
import { loadDeclarativeDirs } from '../../src/core/tools/declarative/index.js';
import type { CompileOptions } from '../../src/core/tools/declarative/compile.js';
import { splitCommand } from '../../src/core/tools/declarative/argv.js';
import { renderTemplate } from '../../src/core/tools/declarative/template.js';
import { readTool } from '../../src/core/tools/definitions/read.js';
import { previewBody } from '../../src/core/tools/preview.js';
import type { ToolDefinition, ToolOutcome } from '../../src/core/tools/registry.js';
import { SandboxRoots } from '../../src/core/tools/sandbox/roots.js';

let dir: string;
let toolsDir: string;
let work: string;

beforeEach(async () => {
  dir = realpathSync(await mkdtemp(join(tmpdir(), 'flemma-decl-')));
  toolsDir = join(dir, 'tools');
  work = join(dir, 'work');
  await mkdir(toolsDir);
  await mkdir(work);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
  const open = server;
  if (open !== undefined) {
    open.closeAllConnections();
    await new Promise<void>((resolve) => {
      open.close(() => {
        resolve();
      });
    });
  }
  server = undefined;
});

function ctx(extra: Partial<ContextInit> = {}): ReturnType<typeof createExecutionContext> {
  return createExecutionContext({ bufnr: 1, cwd: work, timeout: 30, toolId: 't1', ...extra }, dir);
}

async function load(
  files: Record<string, string>,
  options: CompileOptions = {},
): Promise<Awaited<ReturnType<typeof loadDeclarativeDirs>>> {
  for (const [name, text] of Object.entries(files)) await writeFile(join(toolsDir, name), text);
  return loadDeclarativeDirs([toolsDir], options);
}

async function loadOne(yaml: string, options: CompileOptions = {}): Promise<ToolDefinition> {
  const result = await load({ 'tool.yaml': yaml }, options);
  expect(result.problems).toEqual([]);
  const def = result.tools[0];
  if (def === undefined) throw new Error('no tool loaded');
  return def;
}

function run(def: ToolDefinition, input: Record<string, unknown>, c = ctx()): Promise<ToolOutcome> {
  if (def.execute === undefined) throw new Error('no execute');
  return def.execute(input, c);
}

// --- a local HTTP server ------------------------------------------------------------------------

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server | undefined;

async function serve(
  handler: (seen: Seen, res: ServerResponse, index: number) => void,
): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const entry = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      seen.push(entry);
      handler(entry, res, seen.length - 1);
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${String(port)}`, seen };
}

const SLACK = (url: string): string => `name: send_slack
description: Send a message to a Slack channel
params:
  - name: channel
    type: string
    description: "Channel name (without #)"
    required: true
  - name: message
    type: string
    description: Message to send
    required: true
implementation:
  type: http
  method: POST
  url: ${url}/api/chat.postMessage
  query:
    format: json
  body:
    channel: "{{channel}}"
    text: "{{message}}"
`;

describe('loading and schemas', () => {
  it('V-01: a YAML tool is registered with an object schema listing its required params', async () => {
    const def = await loadOne(SLACK('http://127.0.0.1:1'));
    expect(def.name).toBe('send_slack');
    expect(def.description).toBe('Send a message to a Slack channel');
    expect(def.inputSchema).toEqual({
      type: 'object',
      properties: {
        channel: { type: 'string', description: 'Channel name (without #)' },
        message: { type: 'string', description: 'Message to send' },
      },
      required: ['channel', 'message'],
      additionalProperties: false,
    });
  });

  it('V-02: default, enum and items are emitted in the schema', async () => {
    const def = await loadOne(`name: search
description: Search
params:
  - { name: q, type: string, required: true }
  - { name: limit, type: integer, default: 10, enum: [10, 20, 50] }
  - { name: tags, type: array, items: string }
implementation: { type: http, url: "http://127.0.0.1:1/s" }
`);
    const props = def.inputSchema['properties'] as Record<string, Record<string, unknown>>;
    expect(props['limit']).toEqual({ type: 'integer', default: 10, enum: [10, 20, 50] });
    expect(props['tags']).toEqual({ type: 'array', items: { type: 'string' } });
    expect(def.inputSchema['required']).toEqual(['q']);
  });

  it('JSON files load too', async () => {
    const result = await load({
      'ping.json': JSON.stringify({
        name: 'ping',
        description: 'Ping',
        params: [],
        implementation: { type: 'exec', command: ['echo', 'pong'] },
      }),
    });
    expect(result.problems).toEqual([]);
    expect(await run(result.tools[0] as ToolDefinition, {})).toEqual({
      ok: true,
      output: 'pong',
    });
  });

  it('V-27: a bad file is reported by name and the good ones still load', async () => {
    const result = await load({
      'bad.yaml': 'name: bad\ndescription: Bad\nimplementation:\n  type: teleport\n',
      'broken.yml': 'name: [unclosed\n',
      'good.yaml':
        'name: good\ndescription: Good\nimplementation: { type: exec, command: "echo ok" }\n',
      'unknown.yaml':
        'name: unknown_param\ndescription: X\nimplementation: { type: exec, command: "echo {{nope}}" }\n',
      'notes.txt': 'not a tool',
    });
    expect(result.tools.map((t) => t.name)).toEqual(['good']);
    expect(result.problems.map((p) => p.file)).toEqual([
      join(toolsDir, 'bad.yaml'),
      join(toolsDir, 'broken.yml'),
      join(toolsDir, 'unknown.yaml'),
    ]);
    expect(result.problems[0]?.message).toMatch(
      /^implementation\.type must be one of "http", "exec"/,
    );
    expect(result.problems[1]?.message).toMatch(/^invalid YAML/);
    expect(result.problems[2]?.message).toMatch(/unknown parameter 'nope'/);
  });

  it('a duplicate name across files is reported; a taken name is refused', async () => {
    const result = await load(
      {
        'a.yaml': 'name: twin\ndescription: A\nimplementation: { type: exec, command: "echo a" }\n',
        'b.yaml': 'name: twin\ndescription: B\nimplementation: { type: exec, command: "echo b" }\n',
        'c.yaml': 'name: read\ndescription: C\nimplementation: { type: exec, command: "echo c" }\n',
      },
      {},
    );
    expect(result.tools.map((t) => t.name)).toEqual(['twin', 'read']);
    expect(result.problems[0]?.message).toMatch(/'twin' is already defined in .*a\.yaml/);
    const taken = await loadDeclarativeDirs([toolsDir], {
      isTaken: (name) =>
        name === 'read' ? "the name 'read' belongs to a built-in tool" : undefined,
    });
    expect(taken.problems.map((p) => p.message)).toContain(
      "the name 'read' belongs to a built-in tool",
    );
  });

  it('a missing configured directory is reported, an optional one is skipped', async () => {
    const result = await loadDeclarativeDirs([
      join(dir, 'nope'),
      { path: join(dir, 'quiet'), optional: true },
    ]);
    expect(result.problems).toEqual([
      { file: join(dir, 'nope'), message: 'the tool directory does not exist' },
    ]);
  });
});

describe('templates', () => {
  it('V-03: {{param}}', () => {
    expect(renderTemplate('{{channel}}', { channel: 'general' })).toBe('general');
  });

  it('V-04: {{param | default:10}}', () => {
    expect(renderTemplate('{{count | default:10}}', {})).toBe('10');
    expect(renderTemplate('{{count | default:10}}', { count: 3 })).toBe('3');
    expect(renderTemplate('{{ who | default:"the world" }}', {})).toBe('the world');
  });

  it('V-05: {{if x}}…{{end}}', () => {
    expect(renderTemplate('a{{if adv}}X{{end}}b', { adv: true })).toBe('aXb');
    expect(renderTemplate('a{{if adv}}X{{end}}b', {})).toBe('ab');
    expect(renderTemplate('{{if adv}}X{{else}}Y{{end}}', { adv: false })).toBe('Y');
  });

  it('V-06: ${ENV} only from the allowlist', () => {
    const options = { allowEnv: ['API_KEY'], env: { API_KEY: 'abc', HOME: '/root' } };
    expect(renderTemplate('Bearer ${API_KEY}', {}, options)).toBe('Bearer abc');
    expect(() => renderTemplate('${HOME}', {}, options)).toThrow('env var HOME not allowed');
  });

  it('V-07: an unknown {{p}} is an error naming it, not an empty string', () => {
    expect(() => renderTemplate('{{nope}}', {})).toThrow(/'nope'/);
  });

  it('syntax errors say what is wrong', () => {
    expect(() => renderTemplate('{{if a}}x', {})).toThrow(/never closed/);
    expect(() => renderTemplate('x{{end}}', {})).toThrow(/without/);
    expect(() => renderTemplate('{{a | upper}}', {})).toThrow(/unknown filter 'upper'/);
  });

  it('an ${ENV} not on the allowlist is a load-time error naming the file', async () => {
    const result = await load({
      'leak.yaml':
        'name: leak\ndescription: X\nimplementation: { type: http, url: "http://127.0.0.1:1/?h=${HOME}" }\n',
    });
    expect(result.problems[0]?.message).toMatch(/env var HOME not allowed/);
  });
});

describe('http', () => {
  it('V-08: POST with a map body (JSON) and a query', async () => {
    const srv = await serve((_seen, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"ok":true}');
    });
    const def = await loadOne(SLACK(srv.url));
    expect(await run(def, { channel: 'c', message: 'm' })).toEqual({
      ok: true,
      output: '{"ok":true}',
    });
    const req = srv.seen[0];
    expect(req?.method).toBe('POST');
    expect(req?.url).toBe('/api/chat.postMessage?format=json');
    expect(req?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(req?.body ?? '')).toEqual({ channel: 'c', text: 'm' });
  });

  it('headers read ${ENV} from the allowlist; url values are encoded; absent optionals are left out', async () => {
    const srv = await serve((_seen, res) => res.end('ok'));
    const def = await loadOne(
      `name: get_user
description: X
params:
  - { name: id, type: string, required: true }
  - { name: fields, type: string }
  - { name: limit, type: integer, default: 5 }
implementation:
  type: http
  url: ${srv.url}/users/{{id}}
  headers: { Authorization: "Bearer \${API_KEY}" }
  query: { fields: "{{fields}}", limit: "{{limit}}" }
`,
      { allowEnv: ['API_KEY'], env: { API_KEY: 's3cret' } },
    );
    expect(await run(def, { id: '../admin?x=1' })).toEqual({ ok: true, output: 'ok' });
    expect(srv.seen[0]?.url).toBe('/users/..%2Fadmin%3Fx%3D1?limit=5');
    expect(srv.seen[0]?.headers['authorization']).toBe('Bearer s3cret');
    // The preview never shows the secret.
    expect(def.formatPreview?.({ id: '7' }, 200)).toBe(`GET ${srv.url}/users/7?…`);
  });

  it('V-09: status >= 400 is an error with the status and the body', async () => {
    const srv = await serve((_seen, res) => {
      res.writeHead(404);
      res.end('nf');
    });
    const def = await loadOne(
      `name: g\ndescription: X\nimplementation: { type: http, url: "${srv.url}/x" }\n`,
    );
    const out = await run(def, {});
    expect(out.ok).toBe(false);
    if (!out.ok) {
      expect(out.error).toMatch(/404/);
      expect(out.error).toContain('nf');
    }
  });

  it('V-10: a timeout fails quickly', async () => {
    // The server holds its answer until the call is over: only the tool's timeout can end it.
    let held: ServerResponse | undefined;
    const srv = await serve((_seen, res) => {
      held = res;
    });
    const def = await loadOne(
      `name: g\ndescription: X\nimplementation: { type: http, url: "${srv.url}/slow", timeout: 50ms }\n`,
    );
    const out = await run(def, {});
    expect(out).toMatchObject({ ok: false, error: expect.stringMatching(/timed out/) as unknown });
    held?.end('late');
  });

  it('V-11: retries 5xx with backoff, but not 4xx', async () => {
    const codes = [503, 503, 200];
    const srv = await serve((_seen, res, i) => {
      res.writeHead(codes[i] ?? 200);
      res.end(i === 2 ? 'third time' : 'busy');
    });
    const yaml = (url: string): string =>
      `name: g\ndescription: X\nimplementation:\n  type: http\n  url: "${url}"\n  retry: { attempts: 3, backoff: 10ms }\n`;
    const def = await loadOne(yaml(`${srv.url}/r`));
    expect(await run(def, {})).toEqual({ ok: true, output: 'third time' });
    expect(srv.seen).toHaveLength(3);

    await rm(join(toolsDir, 'tool.yaml'));
    const bad = await serve((_seen, res) => {
      res.writeHead(400);
      res.end('bad request');
    });
    const def400 = await loadOne(yaml(`${bad.url}/r`));
    expect(await run(def400, {})).toMatchObject({ ok: false });
    expect(bad.seen).toHaveLength(1);
  });

  it('a network error is retried and then reported', async () => {
    const def = await loadOne(
      'name: g\ndescription: X\nimplementation:\n  type: http\n  url: "http://127.0.0.1:9/x"\n  retry: { attempts: 2, backoff: 5ms }\n',
    );
    const out = await run(def, {});
    expect(out).toMatchObject({
      ok: false,
      error: expect.stringMatching(
        /HTTP request failed: GET http:\/\/127\.0\.0\.1:9\/x/,
      ) as unknown,
    });
  });
});

describe('exec', () => {
  it('V-12: a value is one argument and never reaches a shell', async () => {
    const victim = join(dir, 'x');
    await writeFile(victim, 'still here');
    const def = await loadOne(
      'name: say\ndescription: X\nparams: [{ name: msg, type: string, required: true }]\nimplementation: { type: exec, command: "echo {{msg}}" }\n',
    );
    const msg = `a; rm -rf ${victim}`;
    expect(await run(def, { msg })).toEqual({ ok: true, output: msg });
    expect(existsSync(victim)).toBe(true);
  });

  it('V-13: the environment is PATH plus env, not the host environment', async () => {
    const def = await loadOne(
      `name: envy\ndescription: X\nimplementation:\n  type: exec\n  command: "sh -c 'echo $ONLY-$SECRET'"\n  env: { ONLY: '1' }\n`,
      { env: { ...process.env, SECRET: 'hunter2' } },
    );
    process.env['SECRET'] = 'hunter2';
    try {
      expect(await run(def, {})).toEqual({ ok: true, output: '1-' });
    } finally {
      delete process.env['SECRET'];
    }
  });

  it('C-14: the command template becomes an argv and the preview asks about it', async () => {
    const yaml =
      'name: bd\ndescription: Beads\nparams:\n  - { name: action, type: string, required: true }\n  - { name: task_id, type: string, required: true }\nimplementation: { type: exec, command: "echo bd {{action}} {{task_id}}" }\n';
    const def = await loadOne(yaml);
    expect(splitCommand('bd {{action}} {{task_id}}').map((w) => w.text)).toEqual([
      'bd',
      '{{action}}',
      '{{task_id}}',
    ]);
    const argvSeen: string[][] = [];
    const recorder = await loadOne(yaml.replace('echo bd', 'bd').replace('name: bd', 'name: bd2'), {
      run: (argv) => {
        argvSeen.push([...argv]);
        return Promise.resolve({
          exitCode: 0,
          signal: null,
          output: 'shown',
          stderr: '',
          timedOut: false,
          cancelled: false,
        });
      },
    });
    expect(await run(recorder, { action: 'show', task_id: 'bd-1' })).toEqual({
      ok: true,
      output: 'shown',
    });
    expect(argvSeen).toEqual([['bd', 'show', 'bd-1']]);
    const preview = recorder.formatPreview?.({ action: 'show', task_id: 'bd-1' }, 200);
    expect(preview).toBe('Run the command `bd show bd-1`?');
    expect(previewBody(recorder, { action: 'show', task_id: 'bd-1' }, 200)).toContain(
      'Run the command `bd show bd-1`?',
    );
    expect(await run(def, { action: 'show', task_id: 'bd-1' })).toEqual({
      ok: true,
      output: 'bd show bd-1',
    });
  });

  it('an optional flag inside one word is dropped when absent; exit codes are errors', async () => {
    const def = await loadOne(
      `name: t\ndescription: X\nparams: [{ name: n, type: integer }]\nimplementation: { type: exec, command: "sh -c 'echo \\"$@\\"; exit 3' sh {{if n}}--count={{n}}{{end}} end" }\n`,
    );
    expect(await run(def, {})).toEqual({
      ok: false,
      error: expect.stringMatching(/^Command exited with code 3/) as unknown,
      partialOutput: 'end',
    });
    expect(await run(def, { n: 2 })).toMatchObject({ partialOutput: '--count=2 end' });
  });

  it('runs through the sandbox wrapper like bash', async () => {
    const def = await loadOne(
      'name: w\ndescription: X\nimplementation: { type: exec, command: "echo inner" }\n',
    );
    const wrapped: string[][] = [];
    const sandbox = {
      enabled: true,
      is_path_writable: () => true,
      scrub_env: (env: Record<string, string | undefined>) => noSandbox.scrub_env(env),
      wrap_command: (argv: readonly string[]) => {
        wrapped.push([...argv]);
        return Promise.resolve({ ok: true as const, argv: ['env', 'WRAPPED=1', ...argv] });
      },
    };
    expect(await run(def, {}, ctx({ sandbox }))).toEqual({ ok: true, output: 'inner' });
    expect(wrapped).toEqual([['echo', 'inner']]);
  });
});

describe('files', () => {
  it('file_read reads utf-8 or base64 inside the roots and refuses an escape', async () => {
    const ws = join(dir, 'ws');
    await mkdir(ws);
    await writeFile(join(ws, 'a.txt'), 'héllo');
    await symlink('/etc', join(ws, 'link'));
    const roots = new SandboxRoots([{ name: 'ws', path: ws, mode: 'rw' }], { home: dir });
    const def = await loadOne(
      'name: cat\ndescription: X\nparams: [{ name: path, type: string, required: true }, { name: enc, type: boolean }]\nimplementation: { type: file_read }\n',
    );
    expect(await run(def, { path: 'a.txt' }, ctx({ roots }))).toEqual({
      ok: true,
      output: 'héllo',
    });
    for (const path of ['/etc/passwd', '../../etc/passwd', 'link/passwd']) {
      expect(await run(def, { path }, ctx({ roots }))).toMatchObject({
        ok: false,
        error: expect.stringMatching(/escapes sandbox/) as unknown,
      });
    }
    await rm(join(toolsDir, 'tool.yaml'));
    const b64 = await loadOne(
      'name: cat64\ndescription: X\nparams: [{ name: path, type: string, required: true }]\nimplementation: { type: file_read, encoding: base64 }\n',
    );
    expect(await run(b64, { path: 'a.txt' }, ctx({ roots }))).toEqual({
      ok: true,
      output: Buffer.from('héllo').toString('base64'),
    });
  });

  it('V-19: file_write with mkdir and mode 0600', async () => {
    const def = await loadOne(
      'name: save\ndescription: X\nparams:\n  - { name: path, type: string, required: true }\n  - { name: content, type: string, required: true }\nimplementation: { type: file_write, mode: 0600, mkdir: true }\n',
    );
    expect(await run(def, { path: 'a/b/c.txt', content: 'hi' })).toEqual({
      ok: true,
      output: 'Wrote 2 bytes to a/b/c.txt',
    });
    const file = join(work, 'a/b/c.txt');
    expect(await readFile(file, 'utf8')).toBe('hi');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('file_write notes what the file held before in the undo journal (:Flemma tool:undo)', async () => {
    const def = await loadOne(
      'name: save\ndescription: X\nparams:\n  - { name: path, type: string, required: true }\n  - { name: content, type: string, required: true }\nimplementation: { type: file_write }\n',
    );
    await writeFile(join(work, 'kept.txt'), 'before');
    const journal = new WriteJournal(1024);
    const c = ctx({ journal });
    expect((await run(def, { path: 'kept.txt', content: 'after' }, c)).ok).toBe(true);
    expect((await run(def, { path: 'new.txt', content: 'x' }, c)).ok).toBe(true);
    expect([...journal.entries]).toEqual([
      [join(work, 'kept.txt'), { kind: 'content', content: Buffer.from('before') }],
      [join(work, 'new.txt'), { kind: 'absent' }],
    ]);
  });

  it('file_write without mkdir refuses a missing directory; escapes and read-only roots are refused', async () => {
    const ws = join(dir, 'ws');
    const data = join(dir, 'data');
    await mkdir(ws);
    await mkdir(data);
    await symlink(dir, join(ws, 'up'));
    const roots = new SandboxRoots(
      [
        { name: 'ws', path: ws, mode: 'rw' },
        { name: 'data', path: data, mode: 'ro' },
      ],
      { home: dir },
    );
    const def = await loadOne(
      'name: save\ndescription: X\nparams:\n  - { name: path, type: string, required: true }\n  - { name: content, type: string, required: true }\nimplementation: { type: file_write }\n',
    );
    const c = ctx({ roots });
    expect(await run(def, { path: 'new/x.txt', content: 'x' }, c)).toMatchObject({
      ok: false,
      error: expect.stringMatching(/directory does not exist/) as unknown,
    });
    for (const path of ['../escaped.txt', '/tmp/escaped.txt', 'up/escaped.txt']) {
      expect(await run(def, { path, content: 'x' }, c)).toMatchObject({
        ok: false,
        error: expect.stringMatching(/escapes sandbox/) as unknown,
      });
    }
    expect(existsSync(join(dir, 'escaped.txt'))).toBe(false);
    expect(await run(def, { path: join(data, 'x.txt'), content: 'x' }, c)).toMatchObject({
      ok: false,
      error: expect.stringMatching(/read-only/) as unknown,
    });
    expect(await run(def, { path: 'ok.txt', content: 'x' }, c)).toMatchObject({ ok: true });
    expect(await readFile(join(ws, 'ok.txt'), 'utf8')).toBe('x');
  });

  it('a JSON mode must be an octal string', async () => {
    const result = await load({
      'm.json': JSON.stringify({
        name: 'm',
        description: 'X',
        params: [
          { name: 'path', type: 'string' },
          { name: 'content', type: 'string' },
        ],
        implementation: { type: 'file_write', mode: 420 },
      }),
    });
    expect(result.problems[0]?.message).toMatch(/octal string/);
  });
});

describe('builtin', () => {
  it('V-20: an alias with fixed args answers like the tool it names', async () => {
    await writeFile(join(work, 'README.md'), 'read me\n');
    const lookup = (name: string): ToolDefinition | undefined =>
      name === 'read' ? readTool : undefined;
    const def = await loadOne(
      'name: readme\ndescription: Read the README\nimplementation: { type: builtin, function: read, args: { path: README.md } }\n',
      { lookup },
    );
    const direct = await readTool.execute?.({ path: 'README.md' }, ctx());
    expect(await run(def, {})).toEqual(direct);
    expect(direct).toEqual({ ok: true, output: 'read me' });

    const result = await load(
      { 'x.yaml': 'name: x\ndescription: X\nimplementation: { type: builtin, function: raed }\n' },
      { lookup, suggest: (n) => (n === 'raed' ? 'read' : undefined) },
    );
    expect(result.problems.find((p) => p.file.endsWith('x.yaml'))?.message).toBe(
      "implementation.function: no registered tool 'raed' (did you mean 'read'?)",
    );
  });
});

describe('docs/tools.md', () => {
  it('every YAML example of the declarative section loads', async () => {
    const doc = await readFile(new URL('../../docs/tools.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('## Declarative tools'), doc.indexOf('## Sandbox roots'));
    const blocks = [...section.matchAll(/```yaml\n([\s\S]*?)```/gu)].map((m) => m[1] ?? '');
    expect(blocks).toHaveLength(5);
    for (const [i, block] of blocks.entries()) {
      await writeFile(join(toolsDir, `example${String(i)}.yaml`), block);
    }
    const result = await loadDeclarativeDirs([toolsDir], {
      allowEnv: ['WEATHER_TOKEN', 'BD_TOKEN'],
      lookup: (name) => (name === 'read' ? readTool : undefined),
    });
    expect(result.problems).toEqual([]);
    expect(result.tools.map((t) => t.name).sort()).toEqual([
      'bd_show',
      'read_note',
      'readme',
      'save_report',
      'weather',
    ]);
  });
});
