import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** The weakest priority a nice value names. */
const MAX_NICE = 19;

/**
 * Makes the calling thread `step` nice values nicer than it is (at most 19), so that threads of the
 * same process at the old priority run first when they and this one want the same core. Linux only,
 * where a nice value belongs to a thread (`setpriority` with a thread id); elsewhere it would apply
 * to the whole process, and nothing is changed. Best effort: returns the nice value the thread now
 * has, or undefined when it could not be changed. Never raises a priority (that needs privileges).
 */
export function lowerThisThreadPriority(step: number): number | undefined {
  if (process.platform !== 'linux' || step <= 0) return undefined;
  try {
    // `<pid>/task/<tid>`: the kernel's id of the calling thread, which `os.setPriority` takes as a pid.
    const tid = Number(readlinkSync('/proc/thread-self').split('/').at(-1));
    if (!Number.isSafeInteger(tid) || tid <= 0) return undefined;
    const nice = Math.min(MAX_NICE, getPriority(tid) + step);
    setPriority(tid, nice);
    return nice;
  } catch {
    return undefined;
  }
}
