import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const cliEntry = path.join(repoRoot, 'bin', 'run.js');

/** End-to-end tests run the built CLI; test/global-setup.ts builds it when dist/ is missing. */
export function ensureBuilt(): void {
  if (!existsSync(path.join(repoRoot, 'dist', 'commands', 'import.js'))) {
    throw new Error('dist/ is missing: run `npm run build` before the end-to-end tests');
  }
}
