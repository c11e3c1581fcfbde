import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  BASH_DENY_GUARD,
  type ParsedCommand,
  BASH_RULES_RESOLVER,
  allowMatch,
  bashRules,
  bashRulesResolver,
  commandMatches,
  denyMatch,
  guardBashDeny,
  parseCommand,
} from '../../src/core/approval/bash-rules.js';
import { ApprovalChain, type ApprovalResult } from '../../src/core/approval/chain.js';
import type { ApprovalContext } from '../../src/core/approval/resolvers.js';
import type { CallScope } from '../../src/core/approval/scope.js';
import { sensitiveEntries } from '../../src/core/tools/sandbox/sensitive.js';

describe('parseCommand', () => {
  it('splits pipelines and lists into simple commands', () => {
    expect(parseCommand('ls | grep "a b" || echo no; git status & wait && true')).toMatchObject({
      commands: ['ls', 'grep a b', 'echo no', 'git status', 'wait', 'true'],
    });
    expect(parseCommand('ls | grep x')).not.toHaveProperty('problem');
  });

  it('keeps leading assignments, drops harmless redirections', () => {
    const commands = (text: string): ParsedCommand => {
      const { commands, problem } = parseCommand(text);
      return problem === undefined ? { commands, simple: [] } : { commands, simple: [], problem };
    };
    expect(commands('FOO=1 BAR="x y" ls  -la 2>/dev/null')).toMatchObject({
      commands: ['FOO=1 BAR=x y ls -la'],
    });
    expect(parseCommand('FOO=1 BAR=2 ls').simple[0]?.assignments).toBe(2);
    expect(commands('make test 2>&1 < input.txt').commands).toEqual(['make test']);
    expect(parseCommand('make test 2>&1 < input.txt').simple[0]?.redirects).toEqual([
      { text: 'input.txt', expansion: false, glob: false },
    ]);
    expect(commands('echo "2>x" 2 >/dev/null').commands).toEqual(['echo 2>x 2']);
    expect(parseCommand('ls 2>err.txt').problem).toMatch(/writes to a file/);
    expect(commands('echo A=1').commands).toEqual(['echo A=1']);
    // A command that only assigns is a command of its own.
    expect(commands('PATH=/tmp/x; ls').commands).toEqual(['PATH=/tmp/x', 'ls']);
  });

  it('keeps quoted text and expansions as words, and tells globs and variables', () => {
    expect(parseCommand(`echo "$HOME" '$(not run)' *.txt`).problem).toMatch(/substitution/);
    expect(parseCommand('echo "$HOME" *.txt').commands).toEqual(['echo $HOME *.txt']);
    const words = parseCommand(
      `cat "$HOME/x" $A/y '*.md' "a?" *.ts .[e]nv .e{n,}v '[x]' x{y} "$" [ -f x ]`,
    ).simple[0]?.words;
    expect(words?.map((w) => [w.text, w.expansion, w.glob])).toEqual([
      ['cat', false, false],
      ['$HOME/x', true, false],
      ['$A/y', true, false],
      ['*.md', false, false],
      ['a?', false, false],
      ['*.ts', false, true],
      ['.[e]nv', false, true],
      ['.e{n,}v', false, true],
      ['[x]', false, false],
      ['x{y}', false, false],
      ['$', false, false],
      ['[', false, false],
      ['-f', false, false],
      ['x', false, false],
      [']', false, false],
    ]);
  });

  it.each([
    ['ls `rm x`', /backtick/],
    ['ls $(rm x)', /substitution/],
    ['echo "$(rm x)"', /substitution/],
    ['diff <(ls a) <(ls b)', /process substitution/],
    ['cat <<EOF\nhi\nEOF', /here-document|line/],
    ['ls\nrm -rf ~', /line/],
    ['(cd x; rm y)', /subshell/],
    ['{ ls; }', /compound command \(\{\)/],
    ['for f in *; do rm $f; done', /compound command \(for\)/],
    ['if true; then ls; fi', /compound command \(if\)/],
    ['$CMD -rf', /expansion/],
    ['/bin/$X -rf', /expansion/],
    ['ls \u0001', /control character/],
    ['ls > out.txt', /writes to a file/],
    ['ls >> log', /writes to a file/],
    ['ls &> f', /writes to a file/],
    ['ls >& f', /writes to a file/],
    ['', /no command/],
  ])('%j is not parsed with confidence', (text, why) => {
    expect(parseCommand(text).problem).toMatch(why);
  });
});

describe('matching', () => {
  it('matches words joined by spaces with the name glob dialect', () => {
    expect(commandMatches('ls *', 'ls -la /tmp')).toBe(true);
    expect(commandMatches('ls *', 'ls')).toBe(true);
    expect(commandMatches('ls *', 'lsblk')).toBe(false);
    expect(commandMatches('git status*', 'git status --short')).toBe(true);
    expect(commandMatches('git status', 'git status --short')).toBe(false);
    expect(commandMatches('git  status ', 'git status')).toBe(true);
    expect(commandMatches('', 'ls')).toBe(false);
  });

  const rules = { allow: ['ls *', 'cat *', 'git status*', 'grep *'], deny: ['rm *', 'git push*'] };

  it('allows only when every simple command matches', () => {
    expect(allowMatch(rules, parseCommand('ls -la | grep x && git status'))).toEqual({
      rules: ['ls *', 'grep *', 'git status*'],
    });
    expect(allowMatch(rules, parseCommand('ls && rm -rf ~'))).toEqual({
      why: '`rm -rf ~` matches no allow rule',
    });
    expect(allowMatch(rules, parseCommand('ls $(rm -rf ~)'))).toHaveProperty('why');
    expect(allowMatch(rules, parseCommand('FOO=1 ls'))).toEqual({
      why: '`FOO=1 ls` matches no allow rule',
    });
  });

  it('matches the commands inside a compound command, and `!`', () => {
    expect(parseCommand('for f in *; do rm $f; done').commands).toEqual(['f in *', 'rm $f']);
    expect(parseCommand('! grep -q x f').commands).toEqual(['grep -q x f']);
    expect(denyMatch(rules, parseCommand('while true; do git push; done'))).toMatchObject({
      rule: 'git push*',
      command: 'git push',
    });
  });

  it('a deny rule sees through the directory of a command name, an allow rule does not', () => {
    expect(denyMatch(rules, parseCommand('/bin/rm -rf ~'))).toMatchObject({
      rule: 'rm *',
      command: '/bin/rm -rf ~',
    });
    expect(allowMatch(rules, parseCommand('./ls -la'))).toHaveProperty('why');
  });

  it('finds a denied command hidden in a list', () => {
    expect(denyMatch(rules, parseCommand('ls; cat x || git push --force'))).toMatchObject({
      rule: 'git push*',
      command: 'git push --force',
    });
    expect(denyMatch(rules, parseCommand('ls -la'))).toBeUndefined();
  });

  it('reads the rules from the tools options, ignoring junk', () => {
    expect(bashRules({ bash: { allow: ['ls *', 3], deny: 'rm' } })).toEqual({
      allow: ['ls *'],
      deny: [],
    });
    expect(bashRules(undefined)).toEqual({ allow: [], deny: [] });
  });
});

// A project and a home directory on disk, with the built-in sensitive places.
const root = realpathSync(mkdtempSync(join(tmpdir(), 'flemma-bash-rules-')));
const home = join(root, 'home');
const project = join(root, 'project');
mkdirSync(join(project, '.git'), { recursive: true });
mkdirSync(join(home, '.ssh'), { recursive: true });
writeFileSync(join(project, '.env'), 'SECRET=1\n');
writeFileSync(join(project, 'notes.txt'), 'hi\n');
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

const scope: CallScope = {
  cwd: { given: project, real: project, inProject: true },
  project: [project],
  home,
  sensitive: sensitiveEntries(undefined, { home, env: {} }).entries,
};

function chainWith(
  rules: { allow: string[]; deny: string[] },
  sandboxed = false,
): ApprovalChain<ApprovalContext> {
  const chain = new ApprovalChain<ApprovalContext>();
  chain.register(
    BASH_RULES_RESOLVER,
    bashRulesResolver(
      rules,
      (name) => name === 'bash',
      () => Promise.resolve(sandboxed),
    ),
  );
  return chain;
}

const call = (command: string, toolName = 'bash') => ({
  toolName,
  input: { command },
  bufnr: 1,
  toolId: 'toolu_1',
});

describe('the resolver and the deny guard', () => {
  it('approves an allowed command and names the rule', async () => {
    const chain = chainWith({ allow: ['ls *'], deny: [] });
    const result = await chain.decide(call('ls -la'), { scope });
    expect(result.decision).toBe('approve');
    expect(result.resolver).toBe(BASH_RULES_RESOLVER);
    expect(result.trace[0]?.notes).toEqual(['allowed by tools.bash.allow "ls *"']);
  });

  it('passes for other tools, unknown working directories and partial matches', async () => {
    const chain = chainWith({ allow: ['ls *'], deny: [] });
    const ctx = { scope };
    expect((await chain.decide(call('ls', 'read'), ctx)).decision).toBe('require_approval');
    expect((await chain.decide(call('ls && rm -rf ~'), ctx)).decision).toBe('require_approval');
    expect((await chain.decide(call('ls'), {})).decision).toBe('require_approval');
  });

  const approved = (resolver: string): ApprovalResult => ({
    decision: 'approve',
    resolver,
    trace: [],
    skipped: [],
  });
  const rules = { allow: [], deny: ['rm *'] };

  it('turns an approval of a denied command into a question', () => {
    const result = guardBashDeny(
      approved('urn:flemma:approval:sandbox'),
      call('ls && rm -rf ~'),
      rules,
      true,
    );
    expect(result.decision).toBe('require_approval');
    expect(result.resolver).toBe(BASH_DENY_GUARD);
    expect(result.trace.at(-1)?.notes[0]).toContain('`rm -rf ~` matches the deny rule "rm *"');
  });

  it('asks when the deny rules cannot be checked', () => {
    for (const command of ['ls $(rm -rf ~)', 'sh -c "rm -rf ~"', 'find . -exec rm {} ;']) {
      expect(guardBashDeny(approved('x'), call(command), rules, true).decision).toBe(
        'require_approval',
      );
    }
    expect(guardBashDeny(approved('x'), call('find . -name x'), rules, true).decision).toBe(
      'approve',
    );
  });

  it('names the deny rule of a call that asks anyway', () => {
    const pending: ApprovalResult = { ...approved('x'), decision: 'require_approval' };
    const result = guardBashDeny(pending, call('rm x'), rules, true);
    expect(result.decision).toBe('require_approval');
    expect(result.resolver).toBe('x');
    expect(result.trace.at(-1)).toMatchObject({
      resolver: BASH_DENY_GUARD,
      outcome: 'passed',
      notes: ['`rm x` matches the deny rule "rm *" (tools.bash.deny)'],
    });
  });

  it('leaves other decisions, other tools and buffers without deny rules alone', () => {
    const pending: ApprovalResult = { ...approved('x'), decision: 'require_approval' };
    expect(guardBashDeny(pending, call('ls x'), rules, true)).toBe(pending);
    const denied: ApprovalResult = { ...approved('x'), decision: 'deny' };
    expect(guardBashDeny(denied, call('rm x'), rules, true)).toBe(denied);
    const ok = approved('x');
    expect(guardBashDeny(ok, call('rm x'), rules, false)).toBe(ok);
    expect(guardBashDeny(ok, call('rm x'), { allow: [], deny: [] }, true)).toBe(ok);
  });
});
