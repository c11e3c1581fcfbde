// `:checkhealth flemma`: every section, the OK items on a working machine, credentials reported
// without their values, a missing Node.js as an error naming host.node, and the Lua source
// fingerprint equal to the one scripts/source-hash.mjs writes into dist/build-info.json.
import { execFileSync } from 'node:child_process';
import { accessSync, constants, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Driver, ROOT } from '../helpers/driver.js';
import { neovimLauncher } from '../helpers/e2e.js';
import { tempDirs } from '../helpers/temp.js';
import { fakeAgent } from '../helpers/fake-acp.js';

let driver: Driver | undefined;
const temp = tempDirs();
const launch = neovimLauncher();

const SECTIONS = [
  'Neovim',
  'Node.js',
  'Bundle',
  'Help',
  'Host',
  'Sandbox',
  'Providers',
  'Agents (ACP)',
];

/** Run `:checkhealth flemma` and return the lines of the report buffer. */
async function checkhealth(d: Driver): Promise<string[]> {
  await d.command('checkhealth flemma');
  const buf = await d.lua<number>(`
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      if vim.bo[buf].filetype == "checkhealth" then return buf end
    end
    return vim.api.nvim_get_current_buf()`);
  return d.lines(buf);
}

/** Report items of one kind: `- OK text`, `- ✅ OK text` (0.11+), `- WARNING …`, `- ERROR …`. */
function items(lines: string[], kind: 'OK' | 'WARNING' | 'ERROR'): string[] {
  const pattern = new RegExp(`^- (?:\\S+ )?${kind}:? (.*)$`);
  return lines.flatMap((line) => {
    const match = pattern.exec(line);
    return match?.[1] !== undefined ? [match[1]] : [];
  });
}

/** The lines of one section (after its `Name ~` heading, up to the next heading). */
function section(lines: string[], name: string): string[] {
  const start = lines.indexOf(`${name} ~`);
  if (start < 0) return [];
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((line) => / ~$/.test(line));
  return end < 0 ? rest : rest.slice(0, end);
}

function onPath(name: string): boolean {
  return (process.env['PATH'] ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

function nodeSourceHash(root: string): string {
  return execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      'const { sourceHash } = await import(process.argv[1]); process.stdout.write(sourceHash(process.argv[2]));',
      join(ROOT, 'scripts', 'source-hash.mjs'),
      root,
    ],
    { encoding: 'utf8' },
  );
}

describe(':checkhealth flemma', () => {
  it('reports every section, OK on a working machine, and never a credential value', async () => {
    driver = await launch({ env: { ANTHROPIC_API_KEY: 'sk-test-SECRET-123' } });
    const lines = await checkhealth(driver);
    const report = lines.join('\n');

    for (const name of SECTIONS) expect(lines, `section ${name}`).toContain(`${name} ~`);
    const ok = items(lines, 'OK');
    expect(
      ok.some((text) => /^Neovim \d+\.\d+\.\d+/.test(text)),
      report,
    ).toBe(true);
    expect(
      ok.some((text) => /^Node\.js v\d+\.\d+\.\d+ \(/.test(text)),
      report,
    ).toBe(true);
    expect(ok, report).toContainEqual(expect.stringMatching(/^built from the current sources/));
    expect(ok, report).toContainEqual(
      expect.stringMatching(/^host answers \(pid \d+, started and answered in \d+ ms\)$/),
    );
    expect(ok, report).toContainEqual(expect.stringMatching(/^running host matches dist\//));
    expect(ok, report).toContainEqual(
      expect.stringMatching(/^:help \|?flemma\|? opens \(.*tags\)$/),
    );

    const sandbox = section(lines, 'Sandbox').join('\n');
    if (onPath('bwrap')) {
      expect(items(section(lines, 'Sandbox'), 'OK'), report).toContainEqual(
        expect.stringMatching(/^bubblewrap \d+\.\d+/),
      );
    } else {
      expect(sandbox).toMatch(/WARNING.*tools run without a sandbox; install bubblewrap/);
    }

    expect(ok).toContain('anthropic: credential found in $ANTHROPIC_API_KEY');
    for (const sdk of ['@anthropic-ai/sdk', '@google/genai', 'openai']) {
      expect(
        ok.some((item) => new RegExp(`^SDK ${sdk} [\\d.]+ loads \\(\\d+ ms\\)$`).test(item)),
        sdk,
      ).toBe(true);
    }
    expect(report).toContain('openai: no credential (set $OPENAI_API_KEY)');
    expect(items(section(lines, 'Providers'), 'WARNING')).toEqual([]);
    // Each configured agent, and whether its program is found (nothing is started).
    const agents = section(lines, 'Agents (ACP)').join('\n');
    expect(agents).toMatch(/agent 'claude': npx -y @zed-industries\/claude-agent-acp \(/);
    expect(agents).toMatch(/agent 'codex': npx -y @zed-industries\/codex-acp \(/);
    expect(agents).toMatch(
      onPath('gemini')
        ? /OK agent 'gemini': gemini --experimental-acp \(\/.* found\)/
        : /agent 'gemini': gemini --experimental-acp \(gemini is not on PATH\)/,
    );
    expect(report).not.toContain('SECRET');
    expect(report).not.toContain('sk-test');
    expect(items(lines, 'ERROR'), report).toEqual([]);
  });

  it('reports a missing Node.js as an error that names host.node', async () => {
    driver = await launch({
      setup: 'require("flemma.config").setup({ host = { node = "/nonexistent/node" } })',
    });
    const lines = await checkhealth(driver);
    const report = lines.join('\n');
    const nodeErrors = items(section(lines, 'Node.js'), 'ERROR');
    expect(nodeErrors, report).toHaveLength(1);
    expect(nodeErrors[0]).toContain("'/nonexistent/node'");
    expect(nodeErrors[0]).toContain("set host.node = '/path/to/node' in setup()");
    expect(items(section(lines, 'Host'), 'ERROR'), report).toEqual([
      expect.stringContaining('the host cannot start'),
    ]);
    expect(items(section(lines, 'Providers'), 'WARNING'), report).toEqual([
      expect.stringContaining('no provider has a credential'),
    ]);
    expect(await driver.lua('return require("flemma.host").channel()')).toBeNull();
  });

  it('computes the same source fingerprint as scripts/source-hash.mjs', async () => {
    const d = await launch();
    driver = d;
    const luaHash = (root: string): Promise<string> =>
      d.lua<string>('return (require("flemma.health").source_hash(...))', root);
    expect(await luaHash(ROOT)).toBe(nodeSourceHash(ROOT));

    // Nested and look-alike names (byte order), a NUL byte, non-ASCII, symlinks (not counted).
    const fixture = temp('flemma-hash-');
    const files: Record<string, string> = {
      'package.json': '{}\n',
      'src/a.ts': 'a\n',
      'src/a-b/z.ts': 'z\n',
      'src/a/b/c.ts': 'c\n',
      'src/A/Q.ts': 'Q\n',
      'src/Z.ts': 'Z',
      'src/\u00e9.ts': '\u00e9\n',
      'src/bin.dat': 'x\0y',
    };
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(dirname(join(fixture, path)), { recursive: true });
      writeFileSync(join(fixture, path), content);
    }
    symlinkSync('../package.json', join(fixture, 'src/link.json'));
    symlinkSync('a', join(fixture, 'src/linkdir'));
    expect(await luaHash(fixture)).toBe(nodeSourceHash(fixture));
  });
});

describe(':checkhealth flemma, the agents', () => {
  it('says what each agent of the setup answers to initialize: a chat’s running agent without a new process', async () => {
    const chatting = fakeAgent(temp('flemma-health-acp-'), {});
    const other = fakeAgent(temp('flemma-health-acp-'), { loadSession: true });
    const agents = `fake = ${chatting.entry}, other = ${other.entry}`;
    const d = await launch({
      config: `{ provider = "acp", parameters = { acp = { agent = "fake" } }, acp = { agents = { ${agents} } } }`,
      chat: ['@You:', 'Hello.'],
    });
    driver = d;
    const after = d.eventCount;
    await d.command('Flemma send');
    await d.waitForEvent('FlemmaRequestFinished', { after });
    const lines = await checkhealth(d);
    const ok = items(section(lines, 'Agents (ACP)'), 'OK');
    const caps =
      'prompt: image no, audio no, embedded context yes; MCP: http no, sse no; sign-in: none asked';
    expect(ok, lines.join('\n')).toEqual(
      expect.arrayContaining([
        `agent 'fake': fake-agent 1.2.3; protocol 1; load session: no; ${caps} (a chat's agent, running)`,
        `agent 'other': fake-agent 1.2.3; protocol 1; load session: yes; ${caps}`,
      ]),
    );
    // The ready entries run through `npx` that the setup did not set are not run (`npx -y`
    // would install them).
    expect(section(lines, 'Agents (ACP)').join('\n')).toMatch(
      /not started to ask their version \(their runner would install them\): claude, codex/,
    );
    expect(chatting.events('started')).toHaveLength(1);
    expect(other.events('started')).toHaveLength(1);
  });

  it('asks a ready entry found on PATH that no package runner starts (gemini), not those run through npx', async () => {
    // A `gemini` on PATH that is the fake agent (the wrapper drops `--experimental-acp`).
    const gemini = fakeAgent(temp('flemma-health-gemini-'), {});
    const bin = temp('flemma-health-bin-');
    const [agentScript, script] = gemini.args;
    writeFileSync(
      join(bin, 'gemini'),
      `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(agentScript)} ${JSON.stringify(script)}\n`,
      { mode: 0o755 },
    );
    const d = await launch({
      config: '{}',
      env: { PATH: `${bin}${delimiter}${process.env['PATH'] ?? ''}` },
    });
    driver = d;
    const agents = section(await checkhealth(d), 'Agents (ACP)').join('\n');
    expect(agents).toMatch(/agent 'gemini': fake-agent 1\.2\.3; protocol 1; load session: no/);
    expect(agents).toMatch(
      /not started to ask their version \(their runner would install them\): claude, codex/,
    );
    expect(gemini.events('started')).toHaveLength(1);
  });
});
