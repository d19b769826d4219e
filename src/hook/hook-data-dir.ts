import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { resolveDataDir } from '../config/data-dir.js';

/**
 * The data dir for the hook. MiniMax Code gives hooks a reduced environment, so a data dir that
 * `everme install --data-dir` was pointed at would be lost: the staged runtime remembers it in its
 * runtime.json (three levels above this module), and that wins over the default — but never over
 * MINIMAX_DATA_DIR / MAVIS_DATA_DIR when the host does set them.
 */
export function hookDataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.MINIMAX_DATA_DIR?.trim() || env.MAVIS_DATA_DIR?.trim()) return resolveDataDir(undefined, env);
  try {
    const manifest = JSON.parse(readFileSync(fileURLToPath(new URL('../../../runtime.json', import.meta.url)), 'utf8')) as { dataDir?: unknown };
    if (typeof manifest.dataDir === 'string' && manifest.dataDir.trim()) return manifest.dataDir;
  } catch {
    // not a staged runtime (a development checkout or a global install): the usual lookup
  }
  return resolveDataDir(undefined, env);
}
