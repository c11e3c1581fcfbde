// The mapping of an ACP agent's turn to a provider reply (src/core/acp/updates.ts) and of its
// permission requests to our own calls and the options it offered (src/core/acp/permissions.ts),
// and the judge that asks the approval chain about them (src/host/acp/permissions.ts).
import type { SessionUpdate, ToolCallUpdate, ToolKind } from '@agentclientprotocol/sdk';
import { describe, expect, it } from 'vitest';
import {
  type PermissionCall,
  combineDecisions,
  permissionCalls,
  permissionDiff,
  permissionOutcome,
  permissionPlaceholder,
  permissionText,
} from '../../src/core/acp/permissions.js';
import { AgentTurn, diffText, planText } from '../../src/core/acp/updates.js';
import { continues, markOf, promptBlocks, transcriptPrompt } from '../../src/core/acp/prompt.js';
import type { ProviderRequest } from '../../src/core/provider/types.js';
import type { Decision } from '../../src/core/approval/chain.js';
import { SANDBOX_RESOLVER } from '../../src/core/approval/resolvers.js';
import { type PermissionContext, permissionJudge } from '../../src/host/acp/permissions.js';

const chunk = (text: string): SessionUpdate => ({
  sessionUpdate: 'agent_message_chunk',
  content: { type: 'text', text },
});

function texts(turn: AgentTurn, updates: SessionUpdate[]): string {
  return updates
    .flatMap((update) => turn.push(update))
    .map((event) =>
      event.type === 'text' ? event.text : event.type === 'thinking' ? `<${event.content}>` : '',
    )
    .join('');
}

describe('an agent turn as provider events', () => {
  it('gathers thought chunks into one thinking block, written when something else arrives', () => {
    const turn = new AgentTurn();
    const thought: SessionUpdate = {
      sessionUpdate: 'agent_thought_chunk',
      content: { type: 'text', text: 'a' },
    };
    expect(turn.push(thought)).toEqual([{ type: 'progress', phase: 'thinking', characters: 1 }]);
    expect(turn.push({ ...thought, content: { type: 'text', text: 'b' } })).toHaveLength(1);
    expect(turn.push(chunk('Hi'))).toEqual([
      { type: 'thinking', content: 'ab' },
      { type: 'text', text: '\nHi' },
    ]);
    expect(turn.finish()).toEqual([]);
  });

  it('writes a tool call once and its result once, at its end, whatever updates come between', () => {
    const turn = new AgentTurn();
    const text = texts(turn, [
      chunk('Looking.'),
      {
        sessionUpdate: 'tool_call',
        toolCallId: 'x',
        title: 'Run   ls',
        kind: 'execute',
        status: 'pending',
      },
      { sessionUpdate: 'tool_call_update', toolCallId: 'x', status: 'in_progress' },
      {
        sessionUpdate: 'tool_call_update',
        toolCallId: 'x',
        status: 'failed',
        content: [{ type: 'content', content: { type: 'text', text: 'a ``` b' } }],
      },
      { sessionUpdate: 'tool_call_update', toolCallId: 'x', status: 'completed' },
      chunk('Next.'),
    ]);
    expect(text).toBe(
      'Looking.\n\n**Agent Tool:** `execute` (`x`) Run ls\n\n**Agent Result:** `x` (failed)\n\n````\na ``` b\n````\n\nNext.',
    );
  });

  it('an update of a call never announced gets its header first', () => {
    const text = texts(new AgentTurn(), [
      {
        sessionUpdate: 'tool_call_update',
        toolCallId: 'y',
        title: 'Fetch',
        kind: 'fetch',
        status: 'completed',
      },
    ]);
    expect(text).toBe('**Agent Tool:** `fetch` (`y`) Fetch\n\n**Agent Result:** `y` (completed)\n');
  });

  it('writes a plan when it changes, not again when the agent repeats it', () => {
    const plan: SessionUpdate = {
      sessionUpdate: 'plan',
      entries: [{ content: 'One', priority: 'high', status: 'completed' }],
    };
    const turn = new AgentTurn();
    expect(texts(turn, [plan, plan])).toBe('**Plan:**\n\n- [x] One\n');
    expect(planText([{ content: 'a\nb', priority: 'low', status: 'pending' }])).toBe(
      '**Plan:**\n\n- [ ] a b\n',
    );
  });

  it('shows an edit as a diff of the lines that changed; a new file against /dev/null', () => {
    expect(diffText('a.txt', 'one\ntwo\nthree', 'one\n2\nthree')).toBe(
      '--- a/a.txt\n+++ b/a.txt\n@@ -2,1 +2,1 @@\n-two\n+2',
    );
    expect(diffText('n.txt', null, 'new')).toBe(
      '--- /dev/null\n+++ b/n.txt\n@@ -1,0 +1,1 @@\n+new',
    );
  });
});

describe('the prompt of a turn', () => {
  const request: ProviderRequest = {
    model: 'm',
    system: '',
    tools: [],
    maxTokens: 1,
    cacheRetention: 'none',
    messages: [
      { role: 'user', parts: [{ kind: 'text', text: 'First.' }] },
      { role: 'assistant', parts: [{ kind: 'text', text: 'Answer.' }] },
      {
        role: 'user',
        parts: [
          { kind: 'text', text: 'See ' },
          { kind: 'text_file', filename: 'notes.md', mimeType: 'text/markdown', text: '# Notes' },
        ],
      },
    ],
  };

  it('is the last message: a file as an embedded resource when the agent takes them, else text', () => {
    expect(promptBlocks(request, { embeddedContext: true }, '/p')).toEqual([
      { type: 'text', text: 'See ' },
      {
        type: 'resource',
        resource: { uri: 'file:///p/notes.md', mimeType: 'text/markdown', text: '# Notes' },
      },
    ]);
    expect(promptBlocks(request, {}, '/p')[1]).toEqual({
      type: 'text',
      text: 'notes.md:\n# Notes',
    });
  });

  it('goes on in the session while the turns it was prompted with are unchanged', () => {
    const first = { ...request, messages: request.messages.slice(0, 1) };
    const mark = markOf('s1', first);
    expect(continues(request, mark)).toBe(true);
    expect(continues(first, mark)).toBe(false);
    const edited = {
      ...request,
      messages: [
        { role: 'user' as const, parts: [{ kind: 'text' as const, text: 'Changed.' }] },
        ...request.messages.slice(1),
      ],
    };
    expect(continues(edited, mark)).toBe(false);
  });

  it('carries the transcript before it in a new session on a chat with earlier turns', () => {
    const [intro] = transcriptPrompt(request, {}, '/p');
    expect(intro).toMatchObject({ type: 'text' });
    expect((intro as { text: string }).text).toContain('User: First.\n\nAssistant: Answer.');
  });
});

describe('a permission request as our own calls', () => {
  it.each([
    ['read', { locations: [{ path: 'a.txt' }] }, [{ toolName: 'read', input: { path: 'a.txt' } }]],
    ['edit', { locations: [{ path: 'a.txt' }] }, [{ toolName: 'edit', input: { path: 'a.txt' } }]],
    [
      'move',
      { locations: [{ path: 'a' }, { path: 'b' }] },
      [
        { toolName: 'write', input: { path: 'a' } },
        { toolName: 'write', input: { path: 'b' } },
      ],
    ],
    ['delete', { rawInput: { file_path: 'x' } }, [{ toolName: 'write', input: { path: 'x' } }]],
    ['search', {}, [{ toolName: 'grep', input: {} }]],
    [
      'execute',
      { rawInput: { command: ['git', 'status'] } },
      [{ toolName: 'bash', input: { command: 'git status' } }],
    ],
    ['execute', { title: 'rm -rf /' }, [{ toolName: 'bash', input: { command: 'rm -rf /' } }]],
    [
      'fetch',
      { rawInput: { url: 'https://x.test' } },
      [{ toolName: 'web_fetch', input: { url: 'https://x.test' } }],
    ],
    ['think', {}, [{ toolName: 'acp:think', input: {} }]],
    ['other', { rawInput: { a: 1 } }, [{ toolName: 'acp:other', input: { raw: { a: 1 } } }]],
  ] satisfies [ToolKind, Partial<ToolCallUpdate>, PermissionCall[]][])(
    '%s %j',
    (kind, fields, calls) => {
      expect(permissionCalls({ toolCallId: 't', kind, ...fields })).toEqual(calls);
    },
  );

  it('a denial of any part wins, then a question, else approval', () => {
    expect(combineDecisions(['approve', 'deny', 'require_approval'])).toBe('deny');
    expect(combineDecisions(['approve', 'require_approval'])).toBe('require_approval');
    expect(combineDecisions(['approve', 'approve'])).toBe('approve');
    expect(combineDecisions([])).toBe('require_approval');
  });

  it('answers with the option the agent offered for it, never reading a rejection as a yes', () => {
    const options = [
      { optionId: 'a1', name: 'Allow', kind: 'allow_once' as const },
      { optionId: 'aa', name: 'Always', kind: 'allow_always' as const },
      { optionId: 'r1', name: 'Reject', kind: 'reject_once' as const },
    ];
    expect(permissionOutcome(options, 'allow')).toEqual({ outcome: 'selected', optionId: 'a1' });
    expect(permissionOutcome(options, 'allow_always')).toEqual({
      outcome: 'selected',
      optionId: 'aa',
    });
    expect(permissionOutcome(options, 'reject')).toEqual({ outcome: 'selected', optionId: 'r1' });
    expect(permissionOutcome(options, 'cancelled')).toEqual({ outcome: 'cancelled' });
    expect(permissionOutcome(options.slice(2), 'allow')).toEqual({ outcome: 'cancelled' });
    expect(permissionOutcome(options.slice(0, 2), 'reject')).toEqual({ outcome: 'cancelled' });
  });
});

describe('a request that waits for the user, in the reply', () => {
  it('is a placeholder: its header names the call, its fence the status, one for each answer', () => {
    const call: ToolCallUpdate = { toolCallId: 'c`7', kind: 'execute', title: 'Run\n  ls  -la' };
    const what = permissionText(call);
    expect(what).toBe('execute: Run ls -la');
    expect(permissionPlaceholder('c`7', what, 'pending')).toEqual([
      "**Agent Permission:** `c'7` execute: Run ls -la",
      '',
      '```flemma:tool status=pending',
      '```',
    ]);
    expect(
      (['allow', 'allow_always', 'reject', 'cancelled'] as const).map(
        (state) => permissionPlaceholder('c1', 'x', state)[2],
      ),
    ).toEqual([
      '```flemma:tool status=approved',
      '```flemma:tool status=approved scope=always',
      '```flemma:tool status=rejected',
      '```flemma:tool status=cancelled',
    ]);
    expect(permissionText({ toolCallId: 'c2' })).toBe('other: c2');
  });

  it('carries the diff of an edit for the diff view: a new file has no text before', () => {
    const edit = (oldText: string | null): ToolCallUpdate => ({
      toolCallId: 'e1',
      kind: 'edit',
      content: [
        { type: 'content', content: { type: 'text', text: 'why' } },
        { type: 'diff', path: '/p/a.txt', oldText, newText: 'new\n' },
      ],
    });
    expect(permissionDiff(edit('old\n'))).toEqual({
      path: '/p/a.txt',
      before: 'old\n',
      after: 'new\n',
      exists: true,
    });
    expect(permissionDiff(edit(null))).toMatchObject({ before: '', exists: false });
    expect(permissionDiff({ toolCallId: 'e2', kind: 'edit' })).toBeUndefined();
  });
});

describe('the judge of a chat’s permission requests', () => {
  const options = [
    { optionId: 'yes', name: 'Allow', kind: 'allow_once' as const },
    { optionId: 'no', name: 'Reject', kind: 'reject_once' as const },
  ];
  const chat = { bufnr: 1, agent: 'fake', editor: {} as PermissionContext['editor'] };
  function judge(answer: { decision: Decision; resolver: string | null }) {
    const decided: unknown[] = [];
    const run = permissionJudge({
      approval: {
        decide: (call) => {
          decided.push(call);
          return Promise.resolve({ ...answer, trace: [], skipped: [] });
        },
      },
      logger: { info: () => undefined },
    });
    return { run, decided };
  }
  const request = {
    sessionId: 's',
    options,
    toolCall: {
      toolCallId: 'c',
      title: 'ls',
      kind: 'execute' as const,
      rawInput: { command: 'ls' },
    },
  };

  it('asks the chain about the call of ours the request stands for, and allows what it approves', async () => {
    const { run, decided } = judge({ decision: 'approve', resolver: 'urn:flemma:approval:config' });
    expect(await run(chat, request, new AbortController().signal)).toEqual({
      outcome: { outcome: 'selected', optionId: 'yes' },
    });
    expect(decided).toEqual([
      { bufnr: 1, toolId: 'acp_c_0', toolName: 'bash', input: { command: 'ls' } },
    ]);
  });

  it('leaves to the user what only the sandbox approves (the agent runs its commands itself); refuses what the chain denies', async () => {
    const { run } = judge({ decision: 'approve', resolver: SANDBOX_RESOLVER });
    // Undefined: the user decides.
    expect(await run(chat, request, new AbortController().signal)).toBeUndefined();
    const denied = judge({ decision: 'deny', resolver: 'urn:flemma:approval:bash-deny' });
    expect(await denied.run(chat, request, new AbortController().signal)).toEqual({
      outcome: { outcome: 'selected', optionId: 'no' },
    });
  });

  it('answers cancelled once the turn was cancelled', async () => {
    const controller = new AbortController();
    controller.abort();
    const { run } = judge({ decision: 'approve', resolver: null });
    expect(await run(chat, request, controller.signal)).toEqual({
      outcome: { outcome: 'cancelled' },
    });
  });
});
