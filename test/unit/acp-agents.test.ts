// The chats' agents against the fake ACP agent (test/helpers/fake-acp-agent.mjs), a real process
// spoken to through the SDK: a turn's updates as provider events, the prompt it got, authenticate,
// a crash, cancel, the process ended with its buffer.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AcpAgents } from '../../src/host/acp/agents.js';
import type { AgentSpec } from '../../src/host/acp/process.js';
import type { PermissionContext } from '../../src/host/acp/permissions.js';
import type { ProviderEvent, ProviderRequest } from '../../src/core/provider/types.js';
import { ROOT } from '../helpers/driver.js';
import { isAlive, waitForExit } from '../helpers/processes.js';
import { tempDirs } from '../helpers/temp.js';

const temp = tempDirs();
const FAKE = join(ROOT, 'test/helpers/fake-acp-agent.mjs');
/** Lua's side (the default judge never asks the user, and no test here does). */
const NO_LUA = { notify: () => undefined } as never;
const NO_SECRETS = { resolve: () => Promise.resolve({ ok: false }) } as never;
const quiet = { info: () => undefined, warn: () => undefined, debug: () => undefined };
let agents: AcpAgents | undefined;
/** The chat's settings (the default judge, which refuses, does not read them). */
const EDITOR = { facts: { filename: null } } as unknown as PermissionContext['editor'];

afterEach(() => {
  for (const { bufnr } of agents?.running() ?? []) agents?.forget(bufnr);
  agents = undefined;
});

/** A fake agent with `script`; its log's entries. */
function fake(script: Record<string, unknown>): {
  spec: AgentSpec;
  dir: string;
  log: () => Record<string, unknown>[];
} {
  const dir = temp('flemma-acp-');
  const logPath = join(dir, 'log.jsonl');
  const scriptPath = join(dir, 'script.json');
  writeFileSync(scriptPath, JSON.stringify({ log: logPath, ...script }));
  return {
    spec: { name: 'fake', command: process.execPath, args: [FAKE, scriptPath], env: {} },
    dir,
    log: () => {
      try {
        return readFileSync(logPath, 'utf8')
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as Record<string, unknown>);
      } catch {
        return [];
      }
    },
  };
}

function request(text: string, earlier: ProviderRequest['messages'] = []): ProviderRequest {
  return {
    model: 'fake',
    system: '',
    messages: [...earlier, { role: 'user', parts: [{ kind: 'text', text }] }],
    tools: [],
    maxTokens: 1000,
    cacheRetention: 'none',
  };
}

async function collect(events: AsyncIterable<ProviderEvent>): Promise<ProviderEvent[]> {
  const out: ProviderEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

describe('a chat agent', () => {
  it('streams a turn: thought, text and a tool call, as provider events', async () => {
    const { spec, dir, log } = fake({
      turns: [
        {
          steps: [
            {
              update: {
                sessionUpdate: 'agent_thought_chunk',
                content: { type: 'text', text: 'Let me ' },
              },
            },
            {
              update: {
                sessionUpdate: 'agent_thought_chunk',
                content: { type: 'text', text: 'think.' },
              },
            },
            {
              update: {
                sessionUpdate: 'agent_message_chunk',
                content: { type: 'text', text: 'Hello' },
              },
            },
            {
              update: {
                sessionUpdate: 'tool_call',
                toolCallId: 'c1',
                title: 'Read a.txt',
                kind: 'read',
                status: 'pending',
              },
            },
            {
              update: {
                sessionUpdate: 'tool_call_update',
                toolCallId: 'c1',
                status: 'completed',
                content: [{ type: 'content', content: { type: 'text', text: 'abc' } }],
              },
            },
          ],
        },
      ],
    });
    agents = new AcpAgents({ logger: quiet as never, lua: NO_LUA, secrets: NO_SECRETS });
    const adapter = agents.adapter(1, spec, dir, EDITOR);
    const events = await collect(adapter.stream(request('hi'), new AbortController().signal));
    expect(events.filter((e) => e.type !== 'progress')).toEqual([
      { type: 'thinking', content: 'Let me think.' },
      { type: 'text', text: '\nHello' },
      { type: 'text', text: '\n\n**Agent Tool:** `read` (`c1`) Read a.txt\n' },
      { type: 'text', text: '\n**Agent Result:** `c1` (completed)\n\n```\nabc\n```\n' },
      { type: 'done', stopReason: 'end_turn' },
    ]);
    const entries = log();
    expect(entries.find((e) => e.event === 'session/new')).toMatchObject({ cwd: dir });
    expect(entries.find((e) => e.event === 'prompt')).toMatchObject({ text: 'hi' });
    const init = entries.find((e) => e.event === 'initialize') as {
      params: Record<string, unknown>;
    };
    // The client serves files and terminals (src/host/acp/fs.ts, terminal.ts).
    expect(init.params['clientCapabilities']).toMatchObject({
      fs: { readTextFile: true, writeTextFile: true },
      terminal: true,
    });
  });

  it('authenticates when the agent asks, and ends the process with the buffer', async () => {
    const { spec, dir, log } = fake({ authRequired: true });
    agents = new AcpAgents({ logger: quiet as never, lua: NO_LUA, secrets: NO_SECRETS });
    const events = await collect(
      agents.adapter(2, spec, dir, EDITOR).stream(request('hi'), new AbortController().signal),
    );
    expect(events).toContainEqual({ type: 'text', text: 'OK' });
    expect(log().map((e) => e.event)).toEqual([
      'started',
      'initialize',
      'authenticate',
      'session/new',
      'prompt',
    ]);
    const pid = log()[0]?.['pid'] as number;
    expect(isAlive(pid)).toBe(true);
    agents.forget(2);
    await waitForExit(pid);
  });

  it('a crash fails the turn with the agent’s last words; the next send starts a new process', async () => {
    const { spec, dir, log } = fake({ turns: [{ match: 'crash', steps: [{ crash: 3 }] }] });
    agents = new AcpAgents({ logger: quiet as never, lua: NO_LUA, secrets: NO_SECRETS });
    const adapter = agents.adapter(3, spec, dir, EDITOR);
    await expect(
      collect(adapter.stream(request('crash now'), new AbortController().signal)),
    ).rejects.toThrow(/exit code 3.*new one starts on the next send/);
    const events = await collect(adapter.stream(request('again'), new AbortController().signal));
    expect(events).toContainEqual({ type: 'text', text: 'OK' });
    expect(log().filter((e) => e.event === 'started')).toHaveLength(2);
  });

  it('cancel sends session/cancel and ends the turn at once', async () => {
    const { spec, dir, log } = fake({
      turns: [{ steps: [{ chunks: 1, text: 'part' }, { waitCancel: true }] }],
    });
    agents = new AcpAgents({ logger: quiet as never, lua: NO_LUA, secrets: NO_SECRETS });
    const controller = new AbortController();
    const seen: ProviderEvent[] = [];
    for await (const event of agents
      .adapter(4, spec, dir, EDITOR)
      .stream(request('go'), controller.signal)) {
      seen.push(event);
      if (event.type === 'text') controller.abort();
    }
    expect(seen).toEqual([{ type: 'text', text: 'part' }]);
    await expect.poll(() => log().some((e) => e.event === 'cancel')).toBe(true);
  });

  it('hands each permission request to the judge with the chat, and answers the agent with its outcome', async () => {
    const toolCall = {
      toolCallId: 'p1',
      title: 'Edit a.txt',
      kind: 'edit',
      locations: [{ path: 'a.txt' }],
    };
    const { spec, dir, log } = fake({ turns: [{ steps: [{ permission: { toolCall } }] }] });
    const asked: unknown[] = [];
    agents = new AcpAgents(
      { logger: quiet as never, lua: NO_LUA, secrets: NO_SECRETS },
      (chat, request) => {
        asked.push({ chat, toolCall: request.toolCall });
        return Promise.resolve({ outcome: { outcome: 'selected', optionId: 'allow-once' } });
      },
    );
    await collect(
      agents.adapter(5, spec, dir, EDITOR).stream(request('go'), new AbortController().signal),
    );
    expect(asked).toEqual([{ chat: { bufnr: 5, agent: 'fake', editor: EDITOR }, toolCall }]);
    expect(log().find((e) => e.event === 'permission')).toMatchObject({
      outcome: { outcome: 'selected', optionId: 'allow-once' },
    });
  });

  it('a program that is not there fails the send with a clear message', async () => {
    const dir = temp('flemma-acp-missing-');
    agents = new AcpAgents({ logger: quiet as never, lua: NO_LUA, secrets: NO_SECRETS });
    const spec = { name: 'ghost', command: join(dir, 'no-such-agent'), args: [], env: {} };
    await expect(
      collect(
        agents.adapter(6, spec, dir, EDITOR).stream(request('hi'), new AbortController().signal),
      ),
    ).rejects.toThrow(
      /^could not start \S*no-such-agent: Command failed with ENOENT: \S*no-such-agent$/,
    );
  });
});
