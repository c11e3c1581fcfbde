// Checks on the built bundle (npm test builds it first): what start-up loads, and what it does not.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';

const PROVIDER_HOSTS = ['api.anthropic.com', 'api.openai.com', 'generativelanguage.googleapis.com'];

function read(path: string): string {
  return readFileSync(join(ROOT, 'dist', path), 'utf8');
}

function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, 'dist', dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? filesUnder(join(dir, entry.name))
      : entry.name.endsWith('.mjs')
        ? [join(dir, entry.name)]
        : [],
  );
}

describe('the built host', () => {
  const host = read('host-main.js');

  it('is one CommonJS file that loads no provider SDK at start-up', () => {
    expect(JSON.parse(read('package.json'))).toEqual({ type: 'commonjs' });
    const requires = [...host.matchAll(/require\(["']([^"']+)["']\)/g)].map((m) => m[1] ?? '');
    // (`require("flemma.rpc")` is Lua source the host sends to Neovim, not a module of its own.)
    const modules = requires.filter((path) => !path.startsWith('flemma.'));
    expect(modules.filter((path) => !path.startsWith('node:') && path !== 'module')).toEqual([]);
    for (const name of PROVIDER_HOSTS) expect(host.includes(name), name).toBe(false);
  });

  it('loads node:crypto, node:fs/promises and node:os on first use, and never node:perf_hooks', () => {
    // A lazy built-in is required only inside its loader (`loaded ??= require(…)`), which the
    // start does not call; `performance` is the global, loaded on its first use.
    for (const name of ['node:crypto', 'node:fs/promises', 'node:os']) {
      const requires = [...host.matchAll(/(.{3})require\("([^"]+)"\)/g)].filter(
        (m) => m[2] === name,
      );
      expect(requires.length, name).toBe(1);
      expect(requires[0]?.[1], name).toBe('??=');
    }
    expect(host.includes('require("node:perf_hooks")')).toBe(false);
  });

  it("reaches each SDK, execa, ajv, yaml and fast-xml-parser through import() (the entry's: __fimp) of its own bundle under dist/sdk/", () => {
    const lazy = [...host.matchAll(/__fimp\(["'](\.\/sdk\/[^"']+)["']\)/g)].map((m) => m[1] ?? '');
    expect(lazy.sort()).toEqual([
      './sdk/acp.mjs',
      './sdk/ajv.mjs',
      './sdk/anthropic.mjs',
      './sdk/execa.mjs',
      './sdk/fast-xml-parser.mjs',
      './sdk/genai.mjs',
      './sdk/mcp-client.mjs',
      './sdk/mcp-http.mjs',
      './sdk/mcp-stdio.mjs',
      './sdk/openai.mjs',
      './sdk/yaml.mjs',
    ]);
    const sdkText = filesUnder('sdk').map(read).join('\n');
    for (const name of PROVIDER_HOSTS) expect(sdkText.includes(name), name).toBe(true);
  });

  it('leaves the MCP SDK out of start-up: its client lives only in the lazy mcp-* bundles', () => {
    // Strings only the SDK's client and transports carry.
    const markers = [
      'mcp-session-id',
      'notifications/initialized',
      'StdioClientTransport already started',
    ];
    for (const marker of markers) expect(host.includes(marker), marker).toBe(false);
    const lazyText = filesUnder('sdk').map(read).join('\n');
    for (const marker of markers) expect(lazyText.includes(marker), marker).toBe(true);
  });

  it('leaves the ACP SDK out of start-up: it lives only in the lazy acp bundle', () => {
    // Strings only the SDK carries.
    const markers = ['ACP connection closed', 'session/request_permission'];
    for (const marker of markers) expect(host.includes(marker), marker).toBe(false);
    const lazyText = filesUnder('sdk').map(read).join('\n');
    for (const marker of markers) expect(lazyText.includes(marker), marker).toBe(true);
  });

  it('records the source fingerprint it was built from, for :checkhealth', () => {
    const info = JSON.parse(read('build-info.json')) as { source_hash: string };
    expect(info.source_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(existsSync(join(ROOT, 'dist/rplugin.cjs'))).toBe(true);
  });
});
