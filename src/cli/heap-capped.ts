import { spawn } from 'node:child_process';
import os from 'node:os';
import { HEAP_CAP_FLAG, HEAP_CAP_FLAGS, heapCappedEnv } from '../core/heap-cap.js';

export { HEAP_CAP_FLAG, HEAP_CAP_FLAGS, heapCappedEnv };

/*
 * The old generation cannot be capped once a process runs (see core/heap-cap.ts), so `import`
 * runs in a child node started with the cap.
 */
/** Set in the child: it is the capped run (and must not spawn another). */
export const HEAP_CAPPED_ENV = 'EVERME_HEAP_CAPPED';

/** Whether this process should hand the command to a capped child. */
export function wantsHeapCap(argv: readonly string[], env: NodeJS.ProcessEnv, execArgv: readonly string[]): boolean {
  if (argv[0] !== 'import' || env[HEAP_CAPPED_ENV] === '1' || env.EVERME_NO_HEAP_CAP === '1') return false;
  return !execArgv.some((arg) => arg.startsWith('--max-old-space-size'));
}

/**
 * Runs `script args` in a child node with the heap cap, and resolves with the exit code to use.
 * The child is its own process group, so a Ctrl-C at the terminal reaches this process alone and
 * is forwarded once (a second SIGINT would make the child stop at once instead of cleanly). Should
 * this process be killed outright, the child kills itself too (see `exitWithParent`).
 * Undefined when no child could be started: the caller runs the command itself.
 */
export function runHeapCapped(script: string, args: readonly string[]): Promise<number | undefined> {
  return new Promise((resolve) => {
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(process.execPath, [...process.execArgv, ...HEAP_CAP_FLAGS, script, ...args], {
        stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
        env: { ...heapCappedEnv(process.env), [HEAP_CAPPED_ENV]: '1' },
        detached: true,
      });
    } catch {
      resolve(undefined);
      return;
    }
    const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
    const forward = (signal: NodeJS.Signals): void => {
      child.kill(signal);
    };
    for (const signal of signals) process.on(signal, forward);
    let started = false;
    child.on('spawn', () => {
      started = true;
    });
    child.on('error', () => {
      if (!started) resolve(undefined);
    });
    child.on('exit', (code, signal) => {
      for (const s of signals) process.off(s, forward);
      resolve(code ?? 128 + (signal ? (os.constants.signals[signal] ?? 0) : 0));
    });
  });
}

/** In the capped child: dies with its parent (the IPC channel closes), as a killed import would. */
export function exitWithParent(): void {
  if (!process.send) return;
  process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'));
  // The channel alone must not keep the child running once its work is done.
  process.channel?.unref();
}
