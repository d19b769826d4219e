import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** The weakest priority a nice value names. */
const MAX_NICE = 19;

/**
 * Makes the calling thread `step` nice values nicer than it is (at most 19), so that threads of the
 * same process at the old priority run first when they and this one want the same core. Linux only,
 * where a nice value belongs to a thread (`setpriority` with a thread id); elsewhere it would apply
 * to the whole process, and nothing is changed. Best effort: a thread whose priority cannot be
 * changed runs as it was. Never raises a priority (that needs privileges).
 */
export function lowerThisThreadPriority(step: number): void {
  if (process.platform !== 'linux' || step <= 0) return;
  try {
    // `<pid>/task/<tid>`: the kernel's id of the calling thread, which `os.setPriority` takes as a pid.
    const tid = Number(readlinkSync('/proc/thread-self').split('/').at(-1));
    if (!Number.isSafeInteger(tid) || tid <= 0) return;
    setPriority(tid, Math.min(MAX_NICE, getPriority(tid) + step));
  } catch {
    // Left at the process's priority: the other threads wait for a core a little more, never wrong.
  }
}
