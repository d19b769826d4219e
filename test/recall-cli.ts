/** Shared by the recall end-to-end tests: the built CLI, spawned the way MiniMax Code and users run it. */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { hermeticEnv } from './support/hermetic-env.js';
import { tempDir } from './support/temp.js';


export const repoRoot = fileURLToPath(new URL('..', import.meta.url));
export const runJs = path.join(repoRoot, 'bin', 'run.js');

/**
 * The end-to-end tests run `bin/run.js`, which loads `dist/`; the global setup builds it when it is
 * missing or older than the sources. This only says which command is missing, if one is.
 */
export function ensureBuilt(command?: string): void {
  const compiled = path.join(repoRoot, 'dist', 'commands', `${command ?? 'import'}.js`);
  if (!existsSync(compiled)) throw new Error(`the package is not built (${compiled} is missing): run npm run build`);
}

/** The hermetic environment (support/hermetic-env.ts) plus `extra`; HOME a fresh temp dir unless `extra` names one. */
export function cleanEnv(extra: Record<string, string>): Record<string, string> {
  const env = hermeticEnv(extra.HOME ?? tempDir(), extra);
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}
