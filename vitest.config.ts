import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          environment: 'node',
          // A guard against a test that hangs, not a bound on its speed: the property tests take
          // 0.4-2 s on a quiet two-core machine and passed vitest's 5 s only by luck at a load
          // of 20 (docs/testing.md, "Checked under load").
          testTimeout: 60000,
        },
      },
      {
        test: {
          name: 'nvim',
          include: ['test/nvim/**/*.test.ts'],
          environment: 'node',
          testTimeout: 30000,
          hookTimeout: 30000,
          pool: 'forks',
        },
      },
    ],
  },
});
