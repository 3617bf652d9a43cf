import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // PGlite instances are heavy (≈0.5 GB each); two workers fit the 2-core CI machine.
    pool: 'forks',
    maxWorkers: 2,
  },
});
