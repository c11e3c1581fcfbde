// The one glob dialect (src/core/util/glob.ts, docs/tools.md "Globs").
import { describe, expect, it } from 'vitest';
import { isGlob, nameGlob, pathGlob, pathGlobSource } from '../../src/core/util/glob.js';

const matches = (pattern: string, subjects: string[]): string[] =>
  subjects.filter((subject) => pathGlob(pattern)(subject));

describe('paths', () => {
  it('keeps * and ? within a segment, lets ** span directories, none included', () => {
    expect(matches('*.ts', ['a.ts', 'src/a.ts', '.ts'])).toEqual(['a.ts', '.ts']);
    expect(matches('src/**/*.ts', ['src/a.ts', 'src/x/y/a.ts', 'lib/a.ts'])).toEqual([
      'src/a.ts',
      'src/x/y/a.ts',
    ]);
    expect(matches('a?c', ['abc', 'a/c'])).toEqual(['abc']);
  });

  it('reads classes, negated classes, braces and escapes as shells do', () => {
    expect(matches('file[0-9].[!j]s', ['file1.ts', 'file1.js', 'filex.ts'])).toEqual(['file1.ts']);
    expect(matches('[^a]', ['a', 'b'])).toEqual(['b']);
    expect(matches('*.{md,txt}', ['a.md', 'a.txt', 'a.ts'])).toEqual(['a.md', 'a.txt']);
    expect(matches('a\\*', ['a*', 'ab'])).toEqual(['a*']);
  });

  it('does not treat dot files, a leading !, parentheses or | specially; case matters', () => {
    expect(matches('.env*', ['.env', '.env.local', 'env'])).toEqual(['.env', '.env.local']);
    expect(matches('!x', ['!x', 'y'])).toEqual(['!x']);
    expect(matches('notes (old)/*', ['notes (old)/a', 'notes old/a'])).toEqual(['notes (old)/a']);
    expect(matches('a|b', ['a|b', 'a', 'b'])).toEqual(['a|b']);
    expect(matches('*.TS', ['a.ts'])).toEqual([]);
  });

  it('gives an expression to embed that matches what the matcher matches', () => {
    const below = (pattern: string): RegExp =>
      new RegExp(`(?:^|/)${pathGlobSource(pattern)}(?:/.*)?$`);
    expect(below('.env*').test('/home/u/p/.env.local')).toBe(true);
    expect(below('a|b').test('/home/u/a')).toBe(false);
    expect(below('x (1)').test('/home/u/x (1)/y')).toBe(true);
    // A class no expression can hold is taken literally, as the matcher takes it.
    expect(below('[z-a]').test('/home/u/[z-a]')).toBe(true);
    expect(pathGlob('[z-a]')('[z-a]')).toBe(true);
  });

  it('tells a glob from a plain path', () => {
    expect(['.git/hooks', '~/.ssh', '*.pem', 'a?', '[ab]', '{a,b}'].map(isGlob)).toEqual([
      false,
      false,
      true,
      true,
      true,
      true,
    ]);
  });
});

describe('names', () => {
  it('lets * span any character, / included; . and : are literal', () => {
    const pairs: [string, string][] = [
      ['mcp:github:*', 'mcp:github:get_issue'],
      ['shell.*', 'shellcheck.run'],
      ['*claude*', 'anthropic/claude-x'],
      ['file.{read,write}', 'file.write'],
      ['', ''],
      ['', 'read'],
    ];
    const matched = pairs.map(([pattern, name]) => nameGlob(pattern)(name));
    expect(matched).toEqual([true, false, true, true, true, false]);
  });
});
