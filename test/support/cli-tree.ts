import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { tempDir } from '../transcript-helpers.js';
import { cliEnv } from './cli-process.js';
import { startFakeGateway, type FakeGateway } from './fake-gateway.js';

/** What an end-to-end test of import/sync works in: one fake gateway per file, a fresh tree per test. */
export interface CliTree {
  gateway: FakeGateway;
  root: string;
  dataDir: string;
  stateDir: string;
  /** The CLI's environment with the gateway configured (the `everme` sink is the default). */
  env: NodeJS.ProcessEnv;
}

/**
 * Registers the file's hooks: the gateway starts once and is reset before every test, which gets
 * a new temp root with an empty `data/` and a `state/` dir; `use` receives the fresh tree.
 */
export function useCliTree(use: (tree: CliTree) => void): void {
  let gateway: FakeGateway;
  beforeAll(async () => {
    gateway = await startFakeGateway();
  });
  afterAll(async () => {
    await gateway.close();
  });
  beforeEach(() => {
    gateway.reset();
    const root = tempDir();
    const dataDir = path.join(root, 'data');
    const stateDir = path.join(root, 'state');
    fs.mkdirSync(dataDir);
    use({
      gateway,
      root,
      dataDir,
      stateDir,
      env: cliEnv(root, { EVERME_STATE_DIR: stateDir, EVERME_API_KEY: gateway.token, EVERME_API_BASE: gateway.url }),
    });
  });
}
