import { processAlive } from '../src/core/process-liveness.js';
import { workerSlotOwners } from '../src/hook/hook-slot.js';

/**
 * Ends the hook workers that a bench step's hooks started in these state dirs, and waits for them
 * (10 s at most). A worker waits out its sync interval (the PreToolUse timings set 10 minutes) and
 * would otherwise write into its state dir after the bench removed it, leaving that dir behind in
 * the temp directory.
 */
export function stopHookWorkers(...stateDirs: string[]): void {
  const pids = stateDirs.flatMap(workerSlotOwners);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  const deadline = Date.now() + 10_000;
  const nap = new Int32Array(new SharedArrayBuffer(4));
  while (pids.some(processAlive) && Date.now() < deadline) Atomics.wait(nap, 0, 0, 20);
}
