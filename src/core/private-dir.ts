import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { existingAncestor } from './existing-ancestor.js';

/** State (the SQLite file, hook state): the user's alone, whatever the umask. */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/**
 * `mkdir -p` with an exact mode on every directory it creates, in a bounded number of system calls.
 * Node's own `mkdirSync(…, { recursive: true })` loops forever under paths the kernel refuses in
 * unusual ways (`/proc/<pid>/x`): on the hook's hot path that synchronous loop would starve the
 * watchdog timer that guarantees the hook exits. Here every step is one `mkdir`, at most one per path
 * component, and any refusal is thrown at once. Existing directories keep their mode.
 */
export function makeDirs(dir: string, mode: number): void {
  // Up to the deepest ancestor that exists: at most one stat per component.
  const { missing, blocking } = existingAncestor(dir);
  if (blocking !== undefined) throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${blocking}'`), { code: 'ENOTDIR', path: blocking });
  for (const target of missing.reverse()) {
    try {
      mkdirSync(target, { mode });
    } catch (err) {
      // Created by a concurrent process meanwhile: fine. Anything else is final.
      if ((err as NodeJS.ErrnoException).code === 'EEXIST' && statSync(target).isDirectory()) continue;
      throw err;
    }
    // mkdir's mode is narrowed by the umask; the chmod makes it exact.
    chmodSync(target, mode);
  }
}
