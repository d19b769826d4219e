import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // The JSON report lets .ci/run close with a plain 'N passed, N failed' line.
    reporters: ['default', ['json', { outputFile: '.vitest-results.json' }]],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // End-to-end tests spawn the CLI and bind loopback ports; two cores is the budget.
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
