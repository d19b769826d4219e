/** Whether dist/ is older than the sources it is built from (test/global-setup.ts rebuilds it then). */
import fs from 'node:fs';
import path from 'node:path';

/** What `npm run build` compiles (tsconfig.json's include) and what decides how. */
export const BUILD_INPUTS = ['src', 'commands', 'bench', 'tsconfig.json', 'tsconfig.client.json', 'package.json'];

function newestMtimeMs(entry: string): number {
  const st = fs.statSync(entry, { throwIfNoEntry: false });
  if (st === undefined) return 0;
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs;
  for (const name of fs.readdirSync(entry)) {
    // The bench's generated corpora are data, not sources.
    if (name === '.corpus' || name === 'node_modules') continue;
    newest = Math.max(newest, newestMtimeMs(path.join(entry, name)));
  }
  return newest;
}

/**
 * Why the build under `root` is stale, or undefined when it is current: the build's last step
 * writes oclif.manifest.json, so any input newer than that file was not compiled into dist/.
 */
export function staleBuildReason(root: string): string | undefined {
  const built = fs.statSync(path.join(root, 'oclif.manifest.json'), { throwIfNoEntry: false });
  if (built === undefined || !fs.existsSync(path.join(root, 'dist', 'commands', 'import.js'))) return 'dist/ is missing';
  for (const input of BUILD_INPUTS) {
    if (newestMtimeMs(path.join(root, input)) > built.mtimeMs) return `${input} is newer than dist/`;
  }
  return undefined;
}
