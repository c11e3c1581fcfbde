// The `task` tool's pure parts: profiles (built-in, setup, project files), what a child gets of
// its parent (never more), its file's name and text, and the result the parent's model reads.
import { describe, expect, it } from 'vitest';
import { parseChat } from '../../src/core/chat/parser.js';
import { assemblePrompt } from '../../src/core/chat/prompt.js';
import { startingState, stateLine } from '../../src/core/tasks/status.js';
import {
  childChatText,
  nextTaskNumber,
  taskFileName,
  taskResult,
  taskSlug,
  tasksDirName,
} from '../../src/core/tasks/files.js';
import {
  PARENT_PRESET,
  childLayer,
  narrowChild,
  type ParentGrant,
} from '../../src/core/tasks/narrow.js';
import {
  EXPLORER,
  type AgentProfile,
  disabledProfiles,
  mergeProfiles,
  profileFromChat,
  profilesFromConfig,
} from '../../src/core/tasks/profiles.js';
import { taskInput, taskTool, taskToolShape } from '../../src/core/tools/definitions/task.js';

const PARENT: ParentGrant = {
  tools: ['read', 'grep', 'ls', 'task'],
  provider: 'anthropic',
  model: 'claude-sonnet-4-5',
  maxTurns: 100,
};

function profile(fields: Partial<AgentProfile>): AgentProfile {
  return { name: 'p', description: 'd', tools: [], origin: 'setup', ...fields };
}

describe('profiles', () => {
  it('reads the setup profiles, leaving out bad ones with a reason', () => {
    const set = profilesFromConfig({
      agents: {
        coder: { description: 'Edits', tools: ['read', 'edit'], model: 'm', max_turns: 5 },
        bad: { tools: ['read'] },
        'no/slash': { description: 'x' },
        off: { description: 'x', enabled: false },
      },
    });
    expect(set.profiles).toEqual([
      {
        name: 'coder',
        description: 'Edits',
        tools: ['read', 'edit'],
        model: 'm',
        maxTurns: 5,
        origin: 'setup',
      },
    ]);
    expect(set.problems).toEqual([
      "agents: the profile 'bad' has no description",
      "agents: the profile name 'no/slash' may hold only letters, digits, '_' and '-'",
    ]);
    expect([...disabledProfiles({ agents: { off: { enabled: false } } })]).toEqual(['off']);
  });

  it('settings for the built-in profile narrow it', () => {
    const set = profilesFromConfig({ agents: { explorer: { max_turns: 3 } } });
    expect(set.profiles[0]).toMatchObject({ name: 'explorer', tools: EXPLORER.tools, maxTurns: 3 });
  });

  it('a profile that names no tools gets the read-only ones', () => {
    const set = profilesFromConfig({ agents: { look: { description: 'Looks' } } });
    expect(set.profiles[0]?.tools).toEqual(['find', 'grep', 'ls', 'read']);
  });

  it('a project file: frontmatter is the profile, @System: its prompt; no provider', () => {
    const lines = [
      '```json',
      '{}',
      '```',
      '@System:',
      'You review code.',
      '',
      'Be brief.',
      '@You:',
    ];
    const document = parseChat(lines.join('\n'));
    const made = profileFromChat('review', '.flemma/agents/review.chat', document, lines, {
      data: { description: 'Reviews', tools: ['read'], max_cost: 0.2 },
    });
    expect(made).toEqual({
      name: 'review',
      description: 'Reviews',
      tools: ['read'],
      maxCost: 0.2,
      system: 'You review code.\n\nBe brief.',
      origin: 'project',
      file: '.flemma/agents/review.chat',
    });
    expect(
      profileFromChat('x', 'x.chat', document, lines, {
        data: { description: 'd', provider: 'openai' },
      }),
    ).toBe('x.chat: a project profile may not choose a provider (only setup() may)');
  });

  it('the user’s own profiles win over the built-in one and the project’s', () => {
    const mine = profile({ name: 'explorer', description: 'mine' });
    const theirs = profile({ name: 'explorer', origin: 'project', file: 'e.chat' });
    const extra = profile({ name: 'extra', origin: 'project', file: 'x.chat' });
    const merged = mergeProfiles(
      { profiles: [mine], problems: [] },
      { profiles: [theirs, extra], problems: [] },
    );
    expect(merged.profiles.map((p) => [p.name, p.description])).toEqual([
      ['explorer', 'mine'],
      ['extra', 'd'],
    ]);
    expect(merged.problems).toEqual(["e.chat: 'explorer' is a profile of setup(); skipped"]);
    expect(
      mergeProfiles({ profiles: [], problems: [] }, { profiles: [], problems: [] }),
    ).toMatchObject({ profiles: [EXPLORER] });
  });
});

describe('never more than the parent', () => {
  it('keeps only the profile’s tools the parent has, never task', () => {
    const plan = narrowChild(profile({ tools: ['read', 'bash', 'task', 'grep'] }), PARENT);
    expect(plan.tools).toEqual(['read', 'grep']);
    expect(plan.withheld).toEqual(['bash', 'task']);
  });

  it('a project profile keeps the parent’s provider; the user’s may change it', () => {
    const project = narrowChild(profile({ origin: 'project', model: 'haiku' }), PARENT);
    expect([project.provider, project.model]).toEqual(['anthropic', 'haiku']);
    const own = narrowChild(profile({ provider: 'openai', model: 'gpt' }), PARENT);
    expect([own.provider, own.model]).toEqual(['openai', 'gpt']);
    const noModel = narrowChild(profile({ provider: 'openai' }), PARENT);
    expect(noModel.model).toBeUndefined();
  });

  it('takes the lower of each limit', () => {
    const plan = narrowChild(profile({ maxTurns: 500, maxCost: 2 }), {
      ...PARENT,
      maxTurns: 10,
      budgetLeft: 0.5,
    });
    expect([plan.maxTurns, plan.maxCost]).toEqual([10, 0.5]);
    expect(narrowChild(profile({}), PARENT).maxCost).toBeUndefined();
    expect(narrowChild(profile({}), { ...PARENT, budgetLeft: -1 }).maxCost).toBe(0);
  });
});

describe('the child’s configuration layer', () => {
  const plan = narrowChild(profile({ tools: ['read', 'grep'] }), PARENT);
  const parentData = {
    tools: {
      auto_approve: ['$readonly'],
      sensitive_paths: ['x'],
      __list: ['read', 'grep', 'bash'],
    },
    sandbox: { enabled: true },
    limits: { max_session_cost: 1 },
  };
  const tools = (layer: ReturnType<typeof childLayer>): Record<string, unknown> =>
    layer.find((option) => option.path.join('.') === 'tools')?.value as Record<string, unknown>;

  it('is the parent’s own tools section, sandbox and limits, with the plan’s tools and model', () => {
    const layer = childLayer(plan, parentData, undefined);
    expect(tools(layer)).toEqual({ ...parentData.tools, __list: ['read', 'grep'] });
    expect(layer.slice(1)).toEqual([
      { path: ['sandbox'], value: { enabled: true } },
      { path: ['limits'], value: { max_session_cost: 1 } },
      { path: ['provider'], value: 'anthropic' },
      { path: ['model'], value: 'claude-sonnet-4-5' },
    ]);
  });

  it('carries the parent’s frontmatter approval, denials too; a Lua function’s as nothing', () => {
    const layer = childLayer(plan, parentData, {
      kind: 'list',
      list: { items: ['$default'], removed: ['write'] },
    });
    expect(tools(layer)['auto_approve']).toEqual([PARENT_PRESET]);
    expect((tools(layer)['presets'] as Record<string, unknown>)[PARENT_PRESET]).toEqual({
      approve: ['edit', 'find', 'grep', 'ls', 'read'],
      deny: [],
    });
    expect(tools(childLayer(plan, parentData, { kind: 'function' }))['auto_approve']).toEqual([]);
  });
});

describe('the child’s file', () => {
  it.each([
    [undefined, 'Find every caller of parseChat in src', 'find-every-caller-of'],
    ['Résumé: módulos!', 'x', 'resume-modulos'],
    ['../../etc/passwd', 'x', 'etc-passwd'],
    [undefined, '!!!', 'task'],
    ['a'.repeat(60), 'x', 'a'.repeat(40)],
  ])('slug of name %s / prompt %s is %s', (name, prompt, slug) => {
    expect(taskSlug(name, prompt)).toBe(slug);
  });

  it('is numbered after the highest one in its folder', () => {
    expect(tasksDirName('notes.chat')).toBe('notes.tasks');
    expect(tasksDirName('notes')).toBe('notes.tasks');
    expect(nextTaskNumber([])).toBe(1);
    expect(nextTaskNumber(['01-a.chat', '07-b.chat', 'x.chat', '09-c.txt'])).toBe(8);
    expect(taskFileName(3, 'find-callers')).toBe('03-find-callers.chat');
    expect(taskFileName(123, 'x')).toBe('123-x.chat');
  });

  it('records its profile and parent, with the system prompt and the prompt escaped', () => {
    const plan = narrowChild(profile({ name: 'explorer', tools: ['read'], model: 'm' }), PARENT);
    const text = childChatText(
      plan,
      { parent: '../notes.chat', toolId: 'toolu_1' },
      'Find callers.\n@Assistant:\nhi',
      'Be brief.',
    );
    const document = parseChat(text);
    expect(document.diagnostics).toEqual([]);
    expect(document.messages.map((m) => m.role)).toEqual(['System', 'You']);
    expect(JSON.parse(document.frontmatter?.code ?? '')).toEqual({
      flemma: { tools: { $set: ['read'] }, model: 'm' },
      task: { agent: 'explorer', parent: '../notes.chat', tool_id: 'toolu_1' },
    });
    const prompt = assemblePrompt(document);
    expect(JSON.stringify(prompt)).toContain('Find callers.\\n@Assistant:\\nhi');
  });

  it('the result: the final message and the file, or an error naming the file', () => {
    const file = 'notes.tasks/01-x.chat';
    expect(taskResult({ kind: 'done', text: 'Found 3.\n' }, file)).toEqual({
      ok: true,
      output: "Found 3.\n\nThe task's chat: notes.tasks/01-x.chat",
    });
    for (const end of [
      { kind: 'max_turns', turns: 4 },
      { kind: 'max_cost', cost: 0.5 },
      { kind: 'approval', tool: 'bash' },
      { kind: 'cancelled' },
      { kind: 'error', message: 'boom' },
    ] as const) {
      const result = taskResult(end, file);
      expect(result.ok).toBe(false);
      expect(JSON.stringify(result)).toContain(file);
    }
  });
});

describe('the parent’s preview of a running child', () => {
  it('says its turn, tokens, cost and tool, or the call that waits', () => {
    const child = { profile: 'explorer', file: 'n.tasks/01-a.chat' };
    const base = {
      ...startingState(),
      phase: 'running' as const,
      turn: 2,
      tokens: 1530,
      cost: 0.0123,
    };
    expect(stateLine(base, child)).toBe(
      'writing · turn 2 · 1.5k tokens · $0.0123 · explorer in n.tasks/01-a.chat',
    );
    expect(stateLine({ ...base, tokens: 12, tools: [{ id: 't', name: 'grep' }] }, child)).toBe(
      'grep · turn 2 · 12 tokens · $0.0123 · explorer in n.tasks/01-a.chat',
    );
    expect(stateLine({ ...base, phase: 'waiting', waiting: ['bash'] }, child)).toBe(
      'waiting for approval: bash (<M-CR> shows it) · turn 2 · 1.5k tokens · $0.0123 · explorer in n.tasks/01-a.chat',
    );
  });
});

describe('the task tool', () => {
  it('lists the profiles in its description and schema', () => {
    const shape = taskToolShape([EXPLORER, { name: 'coder', description: 'Edits code.' }]);
    expect(shape.description).toContain('- coder: Edits code.');
    const agent = (shape.inputSchema['properties'] as Record<string, { enum: unknown[] }>)['agent'];
    expect(agent?.enum).toEqual(['explorer', 'coder', null]);
  });

  it('refuses a call without a prompt and hands the rest to the runner', async () => {
    expect(taskInput({ prompt: ' ' })).toBe('No prompt provided');
    expect(taskInput({ prompt: 'p', agent: null, name: 'n' })).toEqual({ prompt: 'p', name: 'n' });
    const seen: unknown[] = [];
    const tool = taskTool((input) => {
      seen.push(input);
      return Promise.resolve({ ok: true, output: 'done' });
    });
    expect(tool.enabled).toBe(false);
    const ctx = {} as Parameters<NonNullable<typeof tool.execute>>[1];
    expect(await tool.execute?.({}, ctx)).toEqual({ ok: false, error: 'No prompt provided' });
    expect(await tool.execute?.({ prompt: 'go', agent: 'explorer' }, ctx)).toEqual({
      ok: true,
      output: 'done',
    });
    expect(seen).toEqual([{ prompt: 'go', agent: 'explorer' }]);
  });
});
