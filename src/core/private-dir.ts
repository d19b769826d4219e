import { chmodSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';

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
  const missing: string[] = [];
  let current = path.resolve(dir);
  // Walk up to the deepest ancestor that exists: at most one stat per component.
  for (;;) {
    let exists = false;
    try {
      exists = statSync(current).isDirectory();
      if (!exists) throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${current}'`), { code: 'ENOTDIR', path: current });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (exists) break;
    missing.push(current);
    const parent = path.dirname(current);
    if (parent === current) break;
    current = parent;
  }
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
