/** Shared by the recall end-to-end tests: the built CLI, spawned the way MiniMax Code and users run it. */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('..', import.meta.url));
export const runJs = path.join(repoRoot, 'bin', 'run.js');

/** The end-to-end tests run `bin/run.js`, which loads `dist/`: build once when it is missing. */
export function ensureBuilt(command: string): void {
  const compiled = path.join(repoRoot, 'dist', 'commands', `${command}.js`);
  if (!existsSync(compiled)) spawnSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'ignore', timeout: 240_000 });
  if (!existsSync(compiled)) throw new Error(`the package is not built (${compiled} is missing): run npm run build`);
}

/** The parent's environment minus anything that would point the CLI at a real store or gateway. */
export function cleanEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || /^(EVERME_|MINIMAX_|MAVIS_)/.test(key)) continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}
