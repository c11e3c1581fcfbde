// Lint rules: type-aware promise discipline, no console output (stdout is the RPC channel),
// and the layers: core knows no editor or host, the editor adapter no host, and only the editor
// adapter imports the Neovim client. Every layer runs programs through execa.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

// NOTE: part of every layer's `no-restricted-imports` below, since a later block's options for
// the rule replace an earlier block's rather than adding to them.
const noChildProcess = {
  group: ['child_process', 'node:child_process'],
  message:
    'programs run through execa (runProcess or loadExeca in src/core/tools/process.ts), not node:child_process.',
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.tests/**', 'lua/**', 'doc/**'] },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [...tseslint.configs.strictTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'error',
      'no-console': 'error',
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'stdout', message: 'stdout is the RPC channel.' },
      ],
    },
  },
  {
    // Size limits: no function over 80 lines and no file over 500, every line counted.
    files: ['src/**/*.ts'],
    rules: {
      'max-lines-per-function': [
        'error',
        { max: 80, skipBlankLines: false, skipComments: false, IIFEs: true },
      ],
      'max-lines': ['error', { max: 500, skipBlankLines: false, skipComments: false }],
    },
  },
  {
    // The core knows nothing of the editor: no Neovim client, no editor adapter, no host wiring.
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['neovim', 'neovim/*'],
              message: 'src/core must not import the Neovim client.',
            },
            {
              group: ['**/editor/**', '**/editor'],
              message: 'src/core must not import src/editor.',
            },
            { group: ['**/host/**', '**/host'], message: 'src/core must not import src/host.' },
            noChildProcess,
          ],
        },
      ],
    },
  },
  {
    // The editor adapter knows Neovim but not the host's services.
    files: ['src/editor/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/host/**', '**/host'], message: 'src/editor must not import src/host.' },
            noChildProcess,
          ],
        },
      ],
    },
  },
  {
    // Only the editor adapter talks to the Neovim client (chats held in files run without it).
    files: ['src/host/**/*.ts', 'src/files/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['neovim', 'neovim/*'],
              message: 'only src/editor imports the Neovim client (src/editor/client.ts).',
            },
            noChildProcess,
          ],
        },
      ],
    },
  },
  {
    // `flemma run` (src/cli/) runs with no Neovim: it must not load the Neovim client.
    files: ['src/cli/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['neovim', 'neovim/*', '**/editor/client', '**/editor/client.js'],
              message: 'src/cli runs without Neovim: it must not import the Neovim client.',
            },
            noChildProcess,
          ],
        },
      ],
    },
  },
  {
    // One notifier: a message to the user goes through `base.notify` (the Notifier port), which
    // src/host/notifier.ts alone turns into Lua's `notify`.
    files: ['src/**/*.ts'],
    ignores: ['src/host/notifier.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.property.name='notify'][arguments.0.value='notify']",
          message:
            "messages to the user go through base.notify (the Notifier), not notify('notify').",
        },
      ],
    },
  },
  {
    files: ['**/*.mjs', '**/*.js', '**/*.cjs'],
    languageOptions: { globals: { ...globals.node } },
    rules: { 'no-console': 'off' },
  },
);
