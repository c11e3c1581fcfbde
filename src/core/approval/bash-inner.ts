// What a simple command runs besides itself (issue 28, point 5), for the deny rules of `bash`:
// the command behind a prefix (`sudo rm x` runs `rm x`), the code given to a shell (`sh -c
// 'rm x'`), what `find -exec` runs, and the commands that do the same job as a denied one
// (`unlink x` deletes like `rm x`). All of it is data in the tables below: extend them there.
//
// Decisions (docs/approval.md, "What command rules can and cannot promise"):
// - A prefix runs the command in its arguments after its own options: `env`, `command`, `exec`,
//   `nice`, `nohup`, `timeout`, `sudo`, `doas`, `stdbuf`, `xargs`, `time`, `builtin`, `ionice`,
//   `setsid`, `chroot`, `busybox`… The options that take a value and the positional arguments
//   before the command (`timeout 5`, `chroot /srv`) are listed per prefix; a guess that is wrong
//   only changes which rule a message names, because a prefix is never cleared (below).
// - A deny rule is matched against every form of each simple command: as written, without its
//   leading assignments, with its name's directory left out (`/bin/rm` is `rm`), `git` without
//   its global options (`git -C x push` is `git push`), and the same forms of every command it
//   runs (through prefixes, `sh -c`, `eval`, `find -exec`), to a depth of 4.
// - A deny rule whose command name is a key of `DENY_ALIKE` (`rm *`, `rm -rf *`) also matches the
//   commands listed there (`rm`: `unlink`, `rmdir`, `shred`, `truncate`, `find … -delete`, `git
//   clean`, `git rm`, `mv … /dev/null`, `rsync … --delete`).
// - A command that runs other commands in ways the rules cannot follow is never cleared of the
//   deny rules (the guard then asks): a prefix or shell, `find -exec`, an interpreter given code
//   on its command line or on its standard input (`python3 -c`, `perl -e`, `node -e`, `echo … |
//   python3`), `awk` whose program calls `system` or a pipe, an editor given commands (`vim -c`),
//   `git -c` (a setting can name a program), and an assignment of a variable that chooses what
//   runs (`PATH`, `LD_PRELOAD`, `GIT_*`, `PAGER`…).

import { nameGlob } from '../util/glob.js';
import {
  ASSIGNMENT,
  type ParsedCommand,
  type SimpleCommand,
  type Word,
  parseCommand,
  plainWord,
  subjectOf,
} from './bash-parse.js';

/** Commands a deny rule naming the key also catches, as patterns over the subject. */
export const DENY_ALIKE: Readonly<Record<string, readonly string[]>> = {
  rm: [
    'unlink *',
    'rmdir *',
    'shred *',
    'truncate *',
    'find *-delete*',
    'git clean*',
    'git rm *',
    'mv * /dev/null',
    'rsync *--delete*',
  ],
};

/** How a prefix's own arguments end and its command starts. */
interface PrefixSpec {
  /** Options that take the next word as their value (`-u root`). */
  values?: readonly string[];
  /** Positional arguments before the command (`timeout 5 cmd`: 1). */
  positionals?: number;
  /** `NAME=value` words after the options are assignments for the command (`env`, `sudo`). */
  assignments?: boolean;
}

/** Prefixes that run the command in their arguments. */
const PREFIXES: Readonly<Record<string, PrefixSpec>> = {
  env: { values: ['-u', '--unset', '-C', '--chdir', '-S', '--split-string'], assignments: true },
  command: {},
  builtin: {},
  exec: { values: ['-a'] },
  nice: { values: ['-n', '--adjustment'] },
  nohup: {},
  time: { values: ['-f', '--format', '-o', '--output'] },
  timeout: { values: ['-s', '--signal', '-k', '--kill-after'], positionals: 1 },
  sudo: {
    values: ['-u', '-g', '-h', '-p', '-C', '-D', '-r', '-t', '-U', '-T', '--user', '--group'],
    assignments: true,
  },
  doas: { values: ['-u', '-C'] },
  su: { values: ['-s', '--shell', '-g', '-G', '-w'] },
  runuser: { values: ['-u', '-g', '-G', '-s'] },
  pkexec: { values: ['--user'] },
  stdbuf: { values: ['-i', '-o', '-e', '--input', '--output', '--error'] },
  unbuffer: {},
  ionice: { values: ['-c', '-n', '-p', '-P', '-u', '--class', '--classdata'] },
  chrt: { positionals: 1 },
  taskset: { positionals: 1 },
  setsid: {},
  chroot: { values: ['--userspec', '--groups'], positionals: 1 },
  busybox: {},
  xargs: {
    values: ['-a', '-d', '-E', '-I', '-L', '-n', '-P', '-s', '--arg-file', '--delimiter'],
  },
  parallel: { values: ['-j', '--jobs', '-S'] },
  watch: { values: ['-n', '--interval', '-d'] },
  flock: { values: ['-w', '-E', '-c'], positionals: 1 },
  unshare: {},
  nsenter: { values: ['-t', '--target'] },
  firejail: {},
  'systemd-run': {},
  strace: { values: ['-e', '-o', '-p', '-s', '-u'] },
  ltrace: { values: ['-e', '-o', '-p', '-s', '-u'] },
  valgrind: {},
  faketime: { positionals: 1 },
  fakeroot: {},
  proxychains: {},
  proxychains4: {},
  torsocks: {},
  catchsegv: {},
  numactl: {},
};

/** Shells: `-c` gives them code; without it they run a script or their standard input. */
const SHELLS: ReadonlySet<string> = new Set([
  'sh',
  'bash',
  'zsh',
  'dash',
  'ksh',
  'mksh',
  'ash',
  'fish',
  'csh',
  'tcsh',
]);

/** Interpreters, with the options that give them code on the command line. */
const INTERPRETERS: readonly { name: RegExp; code: RegExp }[] = [
  { name: /^(?:python[0-9.]*|pypy[0-9.]*)$/u, code: /^-[A-Za-z]*c/u },
  { name: /^perl[0-9.]*$/u, code: /^-[A-Za-z]*[eE]/u },
  { name: /^ruby[0-9.]*$/u, code: /^-[A-Za-z]*e/u },
  { name: /^(?:node|nodejs|bun)$/u, code: /^(?:-e|-p|--eval|--print|-pe)(?:=|$)/u },
  { name: /^deno$/u, code: /^eval$/u },
  { name: /^php[0-9.]*$/u, code: /^-[rRBE]$/u },
  { name: /^(?:lua[0-9.]*|luajit)$/u, code: /^-e$/u },
  { name: /^(?:Rscript|R)$/u, code: /^-e$/u },
  { name: /^osascript$/u, code: /^-e$/u },
  { name: /^(?:tclsh|wish|expect)$/u, code: /^-c$/u },
  { name: /^(?:vim?|nvim|ex|view|gvim)$/u, code: /^(?:-c|--cmd|-S|\+.*)$/u },
  { name: /^gdb$/u, code: /^(?:-ex|-x|--eval-command|-batch)$/u },
];

const AWKS: ReadonlySet<string> = new Set(['awk', 'gawk', 'mawk', 'nawk', 'busybox-awk']);

/** Variables that choose what runs (a program, a library, a start-up file). */
const RUNS_VARIABLE =
  /^(?:PATH|LD_[A-Z_]+|DYLD_[A-Z_]+|GIT_[A-Z0-9_]+|BASH_ENV|ENV|SHELL|SHELLOPTS|BASHOPTS|IFS|PROMPT_COMMAND|PAGER|MANPAGER|EDITOR|VISUAL|BROWSER|SSH_ASKPASS|SUDO_ASKPASS|LESSOPEN|LESSCLOSE|PYTHONSTARTUP|PYTHONPATH|PYTHONHOME|PERL5OPT|PERL5LIB|PERLLIB|RUBYOPT|RUBYLIB|NODE_OPTIONS|NODE_PATH|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|MAKEFLAGS|CC|CXX|LDFLAGS)\+?=/u;

/** Global options of `git` that take a value in the next word. */
const GIT_VALUES: ReadonlySet<string> = new Set([
  '-C',
  '-c',
  '--git-dir',
  '--work-tree',
  '--namespace',
  '--exec-path',
  '--config-env',
  '--super-prefix',
]);

/** The name of a command without its directory (`/bin/rm` → `rm`). */
export function baseName(name: string): string {
  return name.replace(/^.*\//u, '');
}

/** The words after the leading assignments. */
function proper(command: SimpleCommand): Word[] {
  return command.words.slice(command.assignments);
}

/** A simple command from words, with its leading assignments counted. */
function commandOf(words: readonly Word[]): SimpleCommand {
  let assignments = 0;
  while (assignments < words.length && ASSIGNMENT.test(words[assignments]?.text ?? '')) {
    assignments++;
  }
  return { words: [...words], assignments, redirects: [] };
}

/** The command a prefix runs (its words), after the prefix's own options and arguments. */
function afterPrefix(args: readonly Word[], spec: PrefixSpec): Word[] {
  let i = 0;
  while (i < args.length) {
    const text = args[i]?.text ?? '';
    if (text === '--') {
      i++;
      break;
    }
    if (!text.startsWith('-') || text === '-') break;
    const name = text.replace(/=.*$/u, '');
    i += spec.values?.includes(name) === true && !text.includes('=') ? 2 : 1;
  }
  i += spec.positionals ?? 0;
  return args.slice(i);
}

/** The global options of `git` (before its subcommand), their values included. */
function gitGlobals(args: readonly Word[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const text = args[i]?.text ?? '';
    if (!text.startsWith('-')) break;
    out.push(text);
    if (GIT_VALUES.has(text)) i++;
  }
  return out;
}

/** `git` without its global options: `git -C x --no-pager push` → `git push`. */
function gitProper(words: readonly Word[]): Word[] | undefined {
  let i = 1;
  while (i < words.length) {
    const text = words[i]?.text ?? '';
    if (!text.startsWith('-')) break;
    i += GIT_VALUES.has(text) ? 2 : 1;
  }
  return i === 1 ? undefined : [words[0] ?? plainWord('git'), ...words.slice(i)];
}

/** The shell code a command runs: `sh -c CODE`, `eval ARGS`, `su -c CODE`, `env -S STRING`. */
export function codeOf(command: SimpleCommand): string[] {
  const words = proper(command);
  const name = baseName(words[0]?.text ?? '');
  const args = words.slice(1);
  if (name === 'eval') return [subjectOf(args)];
  const out: string[] = [];
  const shell = SHELLS.has(name) || name === 'su' || name === 'flock';
  args.forEach((word, index) => {
    const next = args[index + 1]?.text;
    if (next === undefined) return;
    if (shell && /^-[A-Za-z]*c[A-Za-z]*$/u.test(word.text)) out.push(next);
    if (name === 'env' && (word.text === '-S' || word.text === '--split-string')) out.push(next);
    if (name === 'su' && word.text === '--command') out.push(next);
  });
  if (name === 'env') {
    for (const word of args) {
      const split = /^(?:-S|--split-string=)(.+)$/u.exec(word.text);
      if (split?.[1] !== undefined) out.push(split[1]);
    }
  }
  return out;
}

/** The simple commands a command runs through a prefix, `find -exec`, or code it is given. */
export function innerCommands(command: SimpleCommand): SimpleCommand[] {
  const words = proper(command);
  const name = baseName(words[0]?.text ?? '');
  const args = words.slice(1);
  const out: SimpleCommand[] = [];
  const spec = PREFIXES[name];
  if (spec !== undefined) {
    const rest = afterPrefix(args, spec);
    if (rest.length > 0) out.push(commandOf(rest));
    else if (name === 'xargs') out.push(commandOf([plainWord('echo')]));
  }
  if (name === 'find' || name === 'fd' || name === 'fdfind') {
    const start = /^(?:-exec|-execdir|-ok|-okdir|-x|-X|--exec|--exec-batch)$/u;
    args.forEach((word, index) => {
      if (!start.test(word.text)) return;
      const rest = args.slice(index + 1);
      const stop = rest.findIndex((w) => w.text === ';' || w.text === '+');
      const inner = stop === -1 ? rest : rest.slice(0, stop);
      if (inner.length > 0) out.push(commandOf(inner));
    });
  }
  for (const code of codeOf(command)) out.push(...parseCommand(code).simple);
  return out;
}

/** Why a simple command runs what the rules cannot follow; undefined when it does not. */
export function runsUnseen(command: SimpleCommand): string | undefined {
  const subject = subjectOf(command.words);
  const assigned = command.words
    .slice(0, command.assignments)
    .find((word) => RUNS_VARIABLE.test(word.text));
  if (assigned !== undefined) {
    return `\`${subject}\` sets ${assigned.text.replace(/=.*$/su, '')}, which chooses what runs`;
  }
  const words = proper(command);
  const name = baseName(words[0]?.text ?? '');
  const args = words.slice(1);
  if (name === '') return undefined;
  if (PREFIXES[name] !== undefined || SHELLS.has(name) || name === 'eval') {
    return `\`${subject}\` may run other commands`;
  }
  if (name === 'source' || name === '.') return `\`${subject}\` runs a script`;
  const interpreter = INTERPRETERS.find((entry) => entry.name.test(name));
  if (interpreter !== undefined) {
    if (args.some((word) => interpreter.code.test(word.text))) {
      return `\`${subject}\` runs code given on its command line`;
    }
    if (!args.some((word) => !word.text.startsWith('-')) || args.some((w) => w.text === '-')) {
      return `\`${subject}\` runs code from its standard input`;
    }
  }
  if (AWKS.has(name) && args.some((word) => /system\s*\(|\||getline/u.test(word.text))) {
    return `\`${subject}\` runs commands from its program (system, a pipe or getline)`;
  }
  if (
    name === 'git' &&
    gitGlobals(args).some((text) => /^(?:-c|--config-env)(?:=|$)|^-c./u.test(text))
  ) {
    return `\`${subject}\` sets git configuration, which can name a program to run`;
  }
  if ((name === 'find' || name === 'fd' || name === 'fdfind') && innerCommands(command).length) {
    return `\`${subject}\` runs a command for each file found`;
  }
  return undefined;
}

/** The texts a deny rule is matched against for one simple command (see the header). */
function forms(command: SimpleCommand): string[] {
  const words = proper(command);
  const out = [subjectOf(command.words)];
  if (words.length > 0) {
    out.push(subjectOf(words));
    const short = [plainWord(baseName(words[0]?.text ?? '')), ...words.slice(1)];
    out.push(subjectOf(short));
    if (short[0]?.text === 'git') {
      const git = gitProper(short);
      if (git !== undefined) out.push(subjectOf(git));
    }
  }
  return [...new Set(out)];
}

/** One form of a command a deny rule is matched against, and the command it came from. */
export interface Form {
  text: string;
  /** Set when the form is of a command run by `command` (through a prefix, `sh -c`…). */
  inner: boolean;
}

/** Every form of every command `parsed` runs, its inner commands' to a depth of 4. */
export function allForms(command: SimpleCommand, depth = 0): Form[] {
  const out: Form[] = forms(command).map((text) => ({ text, inner: depth > 0 }));
  if (depth >= 4) return out;
  for (const inner of innerCommands(command)) out.push(...allForms(inner, depth + 1));
  return out;
}

/** Why a command is not cleared of the deny rules, looking inside what it runs; or undefined. */
export function unseenIn(parsed: ParsedCommand): string | undefined {
  for (const command of parsed.simple) {
    const why = runsUnseen(command);
    if (why !== undefined) return why;
  }
  return undefined;
}

/** The patterns of `DENY_ALIKE` a deny rule brings, by the command name it starts with. */
export function alikeOf(rule: string): { name: string; pattern: string }[] {
  const first = rule.trim().split(/\s+/u)[0] ?? '';
  if (first === '' || first === '*') return [];
  const matches = nameGlob(first);
  return Object.entries(DENY_ALIKE).flatMap(([name, patterns]) =>
    matches(name) ? patterns.map((pattern) => ({ name, pattern })) : [],
  );
}
