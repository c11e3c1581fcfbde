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
  describeDenyHit,
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
  cwd: { given: project, abs: project, real: project, inProject: true },
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

describe('issue 28: prefixes must be allowed themselves', () => {
  const rules = { allow: ['ls *', 'git status*', 'FOO=1 make*', 'env *'], deny: [] };
  it.each([
    'GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0="touch x" git status',
    'LD_PRELOAD=/tmp/x.so ls',
    'PATH=/tmp/evil; ls',
    'sudo ls',
    'nice -n 5 ls',
    'timeout 5 ls',
    'command ls',
    'exec ls',
    'nohup ls',
    'xargs ls',
    'time ls',
    'stdbuf -oL ls',
    'busybox ls',
    'sh -c ls',
    'bash -c "git status"',
    'BAR=1 make',
  ])('%j matches no allow rule', (text) => {
    expect(allowMatch(rules, parseCommand(text))).toHaveProperty('why');
  });

  it('an allow rule that names the prefix allows it', () => {
    expect(allowMatch(rules, parseCommand('FOO=1 make test'))).toEqual({ rules: ['FOO=1 make*'] });
    expect(allowMatch(rules, parseCommand('env -i ls'))).toEqual({ rules: ['env *'] });
    expect(allowMatch(rules, parseCommand('ls -la && git status --short'))).toEqual({
      rules: ['ls *', 'git status*'],
    });
  });
});

describe('issue 28: a deny rule sees the command inside and the commands alike', () => {
  const rules = { allow: [], deny: ['rm *', 'git push*'] };
  it.each([
    ['sudo rm -rf x', 'rm -rf x'],
    ['env rm x', 'rm x'],
    ['env -i FOO=1 rm x', 'rm x'],
    ['FOO=1 rm x', undefined],
    ['timeout -s KILL 5 rm x', 'rm x'],
    ['nice -n 5 /bin/rm x', 'rm x'],
    ['command rm x', 'rm x'],
    ['xargs rm', 'rm'],
    ['doas -u root rm x', 'rm x'],
    ['stdbuf -o L rm x', 'rm x'],
    ['ionice -c 3 rm x', 'rm x'],
    ['setsid rm x', 'rm x'],
    ['chroot /srv rm x', 'rm x'],
    ['busybox rm x', 'rm x'],
    ["sh -c 'ls; rm x'", 'rm x'],
    ['bash -lc "rm -rf build"', 'rm -rf build'],
    ['eval rm x', 'rm x'],
    ['find . -name "*.o" -exec rm {} ;', 'rm {}'],
    ['git -C sub --no-pager push --force', 'git push --force'],
  ])('%j is caught by its inner command', (text, inner) => {
    const hit = denyMatch(rules, parseCommand(text));
    expect(hit).toBeDefined();
    if (inner !== undefined) expect(hit?.via).toMatchObject({});
    if (inner !== undefined && hit?.via !== undefined && 'inner' in hit.via) {
      expect(hit.via.inner).toBe(inner);
    }
  });

  it.each([
    'unlink x',
    'rmdir build',
    'shred -u key',
    'truncate -s 0 log',
    'find . -delete',
    'find -delete',
    'find . -name "*.tmp" -delete',
    'git clean -fdx',
    'git -C sub clean -f',
    'git rm -r src',
    'mv notes.txt /dev/null',
    'rsync -a --delete src/ dst/',
    '/usr/bin/unlink x',
    'sudo unlink x',
  ])('%j does the job of rm', (text) => {
    const hit = denyMatch(rules, parseCommand(text));
    expect(hit?.rule).toBe('rm *');
  });

  it('the commands alike come with any rule naming rm, and only with those', () => {
    expect(denyMatch({ allow: [], deny: ['rm -rf *'] }, parseCommand('unlink x'))?.rule).toBe(
      'rm -rf *',
    );
    expect(denyMatch({ allow: [], deny: ['git push*'] }, parseCommand('unlink x'))).toBeUndefined();
    expect(denyMatch(rules, parseCommand('ls -la; cat x; find . -name y'))).toBeUndefined();
    const hit = denyMatch(rules, parseCommand('find . -delete'));
    expect(hit === undefined ? '' : describeDenyHit(hit)).toBe(
      '`find . -delete` does the job of `rm` (`find *-delete*`), so it matches the deny rule "rm *" (tools.bash.deny)',
    );
    const inner = denyMatch(rules, parseCommand('sudo rm -rf x'));
    expect(inner === undefined ? '' : describeDenyHit(inner)).toBe(
      '`sudo rm -rf x` runs `rm -rf x`, which matches the deny rule "rm *" (tools.bash.deny)',
    );
  });

  const approved: ApprovalResult = { decision: 'approve', resolver: 'x', trace: [], skipped: [] };
  it.each([
    'python3 -c "import os; os.remove(\'x\')"',
    'python -c "import shutil"',
    'python3 -Ic "print(1)"',
    'perl -e "unlink q(x)"',
    'perl -E "say 1"',
    'perl -pi -e "s/a/b/" f',
    'ruby -e "File.delete(\'x\')"',
    "node -e \"require('fs').rmSync('x')\"",
    'node --eval "1"',
    'echo "import os" | python3',
    'awk \'BEGIN { system("rm x") }\'',
    'awk \'{ print | "sh" }\' f',
    'vim -c "!rm x" f',
    'git -c alias.x="!rm y" x',
    'GIT_EXTERNAL_DIFF=./x git diff',
    'PATH=/tmp/evil; ls',
    'LD_PRELOAD=/tmp/x.so ls',
    'sh script.sh',
    'source ./env.sh',
  ])('%j cannot be cleared of the deny rules: it asks', (text) => {
    const result = guardBashDeny(approved, call(text), rules, true);
    expect(result.decision).toBe('require_approval');
    expect(result.resolver).toBe(BASH_DENY_GUARD);
  });

  it.each([
    'python3 script.py',
    "awk '{ print $1 }' f",
    'ls -la',
    'find . -name "*.ts"',
    'FOO=1 make test',
    'git log --oneline',
    'git log -c --stat',
  ])('%j is left to whoever approved it', (text) => {
    expect(guardBashDeny(approved, call(text), rules, true)).toBe(approved);
  });
});

describe('issue 28: the paths a command names', () => {
  const rules = {
    allow: [
      'ls *',
      'cat *',
      'git diff*',
      'git status*',
      'echo *',
      'cd *',
      'sh *',
      'grep *',
      'head *',
    ],
    deny: [],
  };
  const decide = async (text: string, sandboxed = false): Promise<ApprovalResult> =>
    chainWith(rules, sandboxed).decide(call(text), { scope });

  it.each([
    'cat .env',
    'cat notes.txt ./.env.local',
    'cat ~/.ssh/id_rsa',
    'cat < .env',
    'cat ${PWD}/notes.txt .env',
    'cd .git && cat config',
    'grep -r KEY --file=.env .',
    'grep -f.env x',
    "sh -c 'cat .env'",
    'ls .git/hooks',
  ])('%j names a sensitive place: asks, sandbox or not', async (text) => {
    for (const sandboxed of [false, true]) {
      const result = await decide(text, sandboxed);
      expect(result.decision).toBe('require_approval');
      expect(result.trace[0]?.notes.join('\n')).toMatch(/sensitive place/);
    }
  });

  it.each([
    ['git diff --output=/tmp/elsewhere', /\/tmp\/elsewhere is outside the project/],
    ['git diff --output /tmp/elsewhere', /outside the project/],
    ['cat /etc/passwd', /outside the project/],
    ['cat ../secret.txt', /outside the project/],
    ['cat ~/notes.txt', /outside the project/],
    ['head -c10 ~other/x', /another user's home/],
    ['cat *.txt', /is a glob/],
    ['cat .[e]nv', /is a glob/],
    ['cat .e{n,}v', /is a glob/],
    ['cat $HOME/x', /holds a variable/],
    ['cd - && cat notes.txt', /not known/],
    ['ls ..', /outside the project/],
  ])('%j: without the sandbox it asks (%s)', async (text, why) => {
    const result = await decide(text);
    expect(result.decision).toBe('require_approval');
    expect(result.trace[0]?.notes.join('\n')).toMatch(why);
    // The sandbox bounds where a command writes and hides the sensitive places.
    expect((await decide(text, true)).decision).toBe('approve');
  });

  it.each(['echo ok > /tmp/x', 'echo ok >> ~/.bashrc', 'git diff > out.patch'])(
    '%j writes to a file: asks, sandbox or not',
    async (text) => {
      expect((await decide(text)).decision).toBe('require_approval');
      expect((await decide(text, true)).decision).toBe('require_approval');
    },
  );

  it.each([
    'cat notes.txt',
    'ls -la',
    'git diff --stat',
    'git status --short 2>/dev/null',
    'grep -rn "TODO: /api" .',
    'cat notes.txt < /dev/null',
    'echo "*.txt" a=b',
    'cd sub && cat notes.txt',
  ])('%j names only places in the project: approved', async (text) => {
    expect((await decide(text)).decision).toBe('approve');
  });

  it('a place only a write makes sensitive asks when written, and when named without the sandbox', async () => {
    expect((await decide('echo x > Makefile', true)).decision).toBe('require_approval');
    const named = await decide('cat package.json');
    expect(named.decision).toBe('require_approval');
    expect(named.trace[0]?.notes.join('\n')).toMatch(/a place a write makes sensitive/);
    // Inside the sandbox build scripts are writable by design and git's hooks read-only.
    expect((await decide('cat package.json', true)).decision).toBe('approve');
  });
});
