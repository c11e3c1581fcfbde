// The protocol between Lua and the host is declared once (src/editor/protocol/); the host's
// dispatch, docs/rpc.md, the Lua side's method table and the Lua callers must agree with it.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { actions } from '../../src/host/actions.js';
import {
  ActionError,
  HOST_TO_LUA,
  LUA_TO_HOST,
  type LuaToHostMethod,
} from '../../src/editor/protocol/index.js';
import {
  protocolRows,
  protocolTable,
  TABLE_BEGIN,
  withProtocolTable,
} from '../../src/editor/protocol/doc.js';
import { ROOT } from '../helpers/paths.js';
import { LuaBridge } from '../../src/editor/lua.js';

const page = readFileSync(join(ROOT, 'docs/rpc.md'), 'utf8');

function luaFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return luaFiles(path);
    return name.endsWith('.lua') ? [path] : [];
  });
}

/** GitHub's anchor of a heading. */
function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function isAction(name: string): name is LuaToHostMethod {
  return Object.prototype.hasOwnProperty.call(LUA_TO_HOST, name);
}

describe('the protocol', () => {
  it('has a dispatch handler for every Lua → host action, and no other', () => {
    expect(Object.keys(actions).sort()).toEqual(Object.keys(LUA_TO_HOST).sort());
  });

  it('is what the table of docs/rpc.md says', () => {
    expect(page).toContain(TABLE_BEGIN);
    // When this fails: `npm run docs:rpc`.
    expect(withProtocolTable(page)).toBe(page);
    expect(page).toContain(protocolTable());
  });

  it('links each method to a section of docs/rpc.md that exists', () => {
    const anchors = new Set(
      page
        .split('\n')
        .filter((line) => line.startsWith('#'))
        .map((line) => slug(line.replace(/^#+\s*/, ''))),
    );
    const missing = protocolRows()
      .filter((row) => row.section !== undefined && !anchors.has(row.section))
      .map((row) => `${row.method} → #${row.section ?? ''}`);
    expect(missing).toEqual([]);
  });

  it('names every method of the Lua side (lua/flemma/rpc.lua), and no other', () => {
    const source = readFileSync(join(ROOT, 'lua/flemma/rpc.lua'), 'utf8');
    const start = source.indexOf('\nM.methods = {\n');
    expect(start).toBeGreaterThan(0);
    const end = source.indexOf('\n}\n', start);
    const names = [...source.slice(start, end).matchAll(/^ {2}\["([^"]+)"\] = function/gm)].map(
      (match) => match[1],
    );
    expect(names.sort()).toEqual(Object.keys(HOST_TO_LUA).sort());
    // Methods are added in that table only.
    for (const file of luaFiles(join(ROOT, 'lua'))) {
      expect(readFileSync(file, 'utf8'), relative(ROOT, file)).not.toMatch(
        /\.methods\s*\[[^\]]*\]\s*=[^=]/,
      );
    }
  });

  it('has every action Lua sends, and Lua sends each the way the protocol says', () => {
    // `host.notify("x", …)`, `host.call("x", …)` and the wrappers that call them (a Lua tool's
    // `H.ask("what", "x", …)` is a call too).
    const sender =
      /\b(notify|call|host_call|tool_command|ask)\(\s*(?:"[a-z._]+",\s*)?"([a-z]+:[a-z-]+)"/g;
    const problems: string[] = [];
    let seen = 0;
    for (const file of [...luaFiles(join(ROOT, 'lua')), ...luaFiles(join(ROOT, 'plugin'))]) {
      for (const match of readFileSync(file, 'utf8').matchAll(sender)) {
        seen += 1;
        const [, how, name] = match;
        const where = `${relative(ROOT, file)}: ${how ?? ''}("${name ?? ''}")`;
        if (name === undefined || !isAction(name)) {
          problems.push(`${where}: no such action`);
          continue;
        }
        const kind = LUA_TO_HOST[name].kind;
        const allowed =
          how === 'notify'
            ? kind === 'notification' || kind === 'notification or call'
            : kind === 'call' || kind === 'notification or call';
        if (!allowed) problems.push(`${where}: the protocol says ${kind}`);
      }
    }
    expect(seen).toBeGreaterThan(30);
    expect(problems).toEqual([]);
  });
});

describe('the typed bridge', () => {
  it('calls only requests and notifies only notifications, with their params (tsc checks this)', () => {
    const sent: [string, unknown][] = [];
    const bridge = new LuaBridge({
      request: (_method, args) => {
        sent.push(['request', args[1]]);
        return Promise.resolve(null);
      },
      notify: (_method, args) => {
        sent.push(['notify', args[1]]);
      },
    });
    void bridge.call('tools.facts', { bufnr: 1 });
    // @ts-expect-error: `notify` is a notification, which the host does not wait for
    void bridge.call('notify', { message: 'x' });
    // @ts-expect-error: `chat.structure` is a request
    bridge.notify('chat.structure', { bufnr: 1, tick: 1, markers: [], diagnostics: [] });
    // @ts-expect-error: no such method
    bridge.notify('tools.nothing', {});
    // @ts-expect-error: `tools.cursor` needs a row
    bridge.notify('tools.cursor', { bufnr: 1 });
    bridge.flush();
    expect(sent.map(([how]) => how)).toEqual(['request', 'request', 'notify']);
  });
});

describe('the decoders of incoming params', () => {
  it('need a buffer number where an action is about a buffer', () => {
    expect(LUA_TO_HOST['chat:cycle'].decode({ bufnr: 3 })).toEqual({ bufnr: 3, ticket: null });
    // Insert mode's `<C-]>` brings a ticket; anything but an integer is no ticket.
    expect(LUA_TO_HOST['chat:cycle'].decode({ bufnr: 3, ticket: 7 })).toEqual({
      bufnr: 3,
      ticket: 7,
    });
    expect(LUA_TO_HOST['chat:cycle'].decode({ bufnr: 3, ticket: '7' })).toEqual({
      bufnr: 3,
      ticket: null,
    });
    for (const raw of [null, {}, { bufnr: 0 }, { bufnr: 1.5 }, { bufnr: '3' }]) {
      expect(() => LUA_TO_HOST['chat:cycle'].decode(raw)).toThrow(ActionError);
    }
    expect(() => LUA_TO_HOST['chat:cycle'].decode({ bufnr: '3' })).toThrow(
      'expected { bufnr = <buffer number> }, got {"bufnr":"3"}',
    );
  });

  it('take what is not of its type as absent', () => {
    expect(LUA_TO_HOST['tool:cancel'].decode({ bufnr: 2, row: -1 })).toEqual({
      bufnr: 2,
      row: null,
    });
    expect(LUA_TO_HOST['tool:yolo'].decode({ bufnr: 2, mode: 'loud' })).toEqual({
      bufnr: 2,
      mode: 'toggle',
    });
    expect(LUA_TO_HOST['tool:reject'].decode({ bufnr: 2, row: 4, message: '' })).toEqual({
      bufnr: 2,
      row: 4,
      message: undefined,
      ticket: null,
    });
    expect(LUA_TO_HOST['chat:send'].decode({ bufnr: 2, over_limit: 'yes', ticket: 'x' })).toEqual({
      bufnr: 2,
      over_limit: false,
      ticket: null,
    });
    expect(LUA_TO_HOST['autopilot:cancelled'].decode({ bufnr: 2 })).toEqual({
      bufnr: 2,
      token: -1,
    });
  });

  it('keep what tools:define carries, and leave mcp out when Lua sent none', () => {
    const decode = LUA_TO_HOST['tools:define'].decode;
    expect(decode({ tools: [], js_modules: ['a.js', 3], declarative: [] })).toEqual({
      tools: [],
      pending: 0,
      js_modules: ['a.js'],
      declarative: undefined,
    });
    expect(
      decode({
        pending: 2,
        mcp: null,
        declarative: { dirs: [{ path: '/x', optional: true }, { path: '' }], env: ['A'] },
      }),
    ).toEqual({
      tools: [],
      pending: 2,
      js_modules: [],
      declarative: { dirs: [{ path: '/x', optional: true }], env: ['A'] },
      mcp: null,
    });
  });
});
