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
