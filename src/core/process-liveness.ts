import { readFileSync } from 'node:fs';

/**
 * Whether a process with this pid is running, as far as this user can tell: the one check behind
 * every claim a dead process may leave (session locks, flush claims, the hook's slot). `kill(pid, 0)`
 * sends nothing; EPERM means it exists under another user. A pid of 0 or below names a process
 * group (`kill(0)` signals our own), never one process: not alive.
 */
export function processAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * When the process with this pid started, as the OS counts it (Linux: field 22 of /proc/<pid>/stat,
 * clock ticks since boot), or undefined where that cannot be read (no /proc, the process gone). A
 * pid the OS hands to another process once its owner died comes with another start time.
 */
export function processStartTime(pid: number): string | undefined {
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces and ')': field 3 follows the last ')'.
  const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[22 - 3];
  return start !== undefined && /^\d+$/.test(start) ? start : undefined;
}

/** Who made a claim: a pid, and that process's start time where the OS gave it at the claim. */
export interface ProcessStamp {
  pid: number;
  start?: string;
}

/** A process's stamp as a claim records it: `pid@start`, or the pid alone where start times cannot be read. */
export function processStamp(pid = process.pid): string {
  const start = processStartTime(pid);
  return start === undefined ? String(pid) : `${pid}@${start}`;
}

/** Reads `processStamp`'s text (a bare pid, as earlier builds wrote, included); undefined when it is not one. */
export function parseProcessStamp(text: string): ProcessStamp | undefined {
  const m = /^(\d+)(?:@(\d+))?$/.exec(text);
  if (!m) return undefined;
  const pid = Number(m[1]);
  if (!Number.isSafeInteger(pid)) return undefined;
  return m[2] === undefined ? { pid } : { pid, start: m[2] };
}

/**
 * Whether the process that made a claim still runs: its pid is alive (`processAlive`) and, when the
 * claim recorded a start time and the OS tells the start time of the process now at that pid, they
 * are equal. A dead owner's pid reused by another process (after a reboot, or a wrap of the pid
 * space) would otherwise hold the claim forever.
 */
export function claimantAlive(stamp: ProcessStamp): boolean {
  if (!processAlive(stamp.pid)) return false;
  if (stamp.start === undefined) return true;
  const now = processStartTime(stamp.pid);
  return now === undefined || now === stamp.start;
}
