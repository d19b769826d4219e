import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The fresh build, the run's own temp dir and the end-of-run checks (temp litter, blocked
    // sockets); then, in every test file's process, the hermetic env and the socket guard.
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/support/suite-setup.ts'],
    // The JSON report lets .ci/run close with a plain 'N passed, N failed' line.
    reporters: ['default', ['json', { outputFile: '.vitest-results.json' }]],
    // A hang detector for a whole test, not a speed limit: on a 2-core machine shared with other
    // work (load 20 was seen), end-to-end tests that take 10 s alone took over 40 s.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // End-to-end tests spawn the CLI and bind loopback ports; two cores is the budget.
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
