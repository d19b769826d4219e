/**
 * The no-op sync as the user runs it: `everme sync` as a process, start to exit, against a store
 * that already holds every session of the tree. run-all.ts times it on the bench trees, and
 * session-index-cost.ts on the tree beside MiniMax Code's session index, which a user's machine has.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { repo } from './repo-root.js';

/** CLI no-op syncs in a row wherever one is timed, for their median: a single ~0.5 s process swings by a quarter on this VM. */
export const NOOP_SYNC_RUNS = 5;

/** Wall milliseconds of each of NOOP_SYNC_RUNS CLI no-op syncs in a row. */
export function cliNoopSyncs(root: string, stateDir: string): number[] {
  return Array.from({ length: NOOP_SYNC_RUNS }, () => cliNoopSync(root, stateDir));
}

/** Wall milliseconds of one CLI sync; throws when it fails or delivers anything (the store was not up to date). */
function cliNoopSync(root: string, stateDir: string): number {
  const env = { ...process.env, EVERME_STATE_DIR: stateDir, EVERME_API_KEY: '' };
  const t0 = performance.now();
  const result = spawnSync(process.execPath, [path.join(repo, 'bin', 'run.js'), 'sync', '--sink', 'local', '--data-dir', root, '--json'], { env, encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (result.status !== 0) throw new Error(`everme sync failed (${result.status}): ${result.stderr.slice(0, 500)}`);
  const envelope = JSON.parse(result.stdout) as { data?: { messages?: number } };
  if (envelope.data?.messages !== 0) throw new Error(`the no-op sync delivered ${envelope.data?.messages} messages`);
  return ms;
}
