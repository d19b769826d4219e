/** Shared by the recall end-to-end tests: the built CLI, spawned the way MiniMax Code and users run it. */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { hermeticEnv } from './support/hermetic-env.js';
import { tempDir } from './support/temp.js';

export { ensureBuilt } from './support/cli.js';

export const repoRoot = fileURLToPath(new URL('..', import.meta.url));
export const runJs = path.join(repoRoot, 'bin', 'run.js');

/** The hermetic environment (support/hermetic-env.ts) plus `extra`; HOME a fresh temp dir unless `extra` names one. */
export function cleanEnv(extra: Record<string, string>): Record<string, string> {
  const env = hermeticEnv(extra.HOME ?? tempDir(), extra);
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}
