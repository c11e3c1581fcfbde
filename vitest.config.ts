import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          environment: 'node',
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
