import { defineConfig } from 'vitest/config';

/**
 * A second vitest run over planted tests (net-guard.test.ts starts it): the suite's own global
 * setup and setup file, so what it reports is what the real suite would report. No JSON report:
 * it would overwrite the outer run's.
 */
export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/guard-fixture/*.guard.ts'],
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/support/suite-setup.ts'],
    reporters: ['default'],
    pool: 'forks',
    poolOptions: { forks: { maxForks: 1, minForks: 1 } },
  },
});
