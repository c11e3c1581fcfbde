// The core knows nothing of the editor: the lint configuration forbids src/core from importing
// the Neovim client, src/editor or src/host; and every layer runs programs through execa, never
// node:child_process. This runs that configured rule on sample code.
import { join } from 'node:path';
import { ESLint, Linter } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';

async function importViolations(file: string, code: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: ROOT });
  const config = (await eslint.calculateConfigForFile(join(ROOT, file))) as {
    rules?: Record<string, Linter.RuleEntry>;
  };
  const rule = config.rules?.['no-restricted-imports'];
  if (rule === undefined) return [];
  const linter = new Linter({ configType: 'flat' });
  const messages = linter.verify(
    code,
    [
      {
        files: ['**/*.ts'],
        languageOptions: { parser: tseslint.parser },
        rules: { 'no-restricted-imports': rule },
      },
    ],
    file,
  );
  return messages.map((message) => message.message);
}

describe('the core/editor boundary', () => {
  it('rejects the Neovim client, the editor adapter and the host in src/core', async () => {
    const code = [
      "import { attach } from 'neovim';",
      "import type { Buffer } from 'neovim/lib/api/Buffer.js';",
      "import { LuaBridge } from '../editor/lua.js';",
      "import { actions } from '../../host/actions.js';",
      'export const all = [attach, LuaBridge, actions] as unknown as Buffer;',
    ].join('\n');
    const violations = await importViolations('src/core/chat/probe.ts', code);
    expect(violations).toHaveLength(4);
    expect(violations[0]).toContain('must not import the Neovim client');
  });

  it.each(['src/host/probe.ts', 'src/files/probe.ts'])(
    'rejects the Neovim client in %s (only the editor adapter talks to Neovim)',
    async (file) => {
      const violations = await importViolations(
        file,
        "import { attach } from 'neovim';\nexport const a = attach;\n",
      );
      expect(violations).toEqual([expect.stringContaining('only src/editor imports')]);
    },
  );

  it('allows the editor adapter to import the Neovim client', async () => {
    const violations = await importViolations(
      'src/editor/probe.ts',
      "import { attach } from 'neovim';\nexport const a = attach;\n",
    );
    expect(violations).toEqual([]);
  });
});

describe('programs', () => {
  it.each(['src/core/tools/probe.ts', 'src/editor/probe.ts', 'src/host/undo/probe.ts'])(
    'are not started with node:child_process in %s',
    async (file) => {
      const code = [
        "import { execFile } from 'node:child_process';",
        "import { spawn } from 'child_process';",
        'export const all = [execFile, spawn];',
      ].join('\n');
      const violations = await importViolations(file, code);
      expect(violations).toHaveLength(2);
      expect(violations[0]).toContain('execa');
    },
  );
});
