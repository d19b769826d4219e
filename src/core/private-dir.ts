import { chmodSync, mkdirSync, statSync, type Stats } from 'node:fs';
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

/**
 * The walk from `dir` up to the deepest path that exists, one stat a component: the paths missing on
 * the way (deepest first), and `blocking` when what exists is not a directory (a file in the way:
 * `dir` itself, or a parent, under which nothing can be created). Here beside `makeDirs`, its first
 * user: a module of its own would be one more on the hook's hot path.
 */
export function existingAncestor(dir: string): { missing: string[]; blocking?: string } {
  const missing: string[] = [];
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    const stat = statOrNone(at);
    if (stat) return stat.isDirectory() ? { missing } : { missing, blocking: at };
    missing.push(at);
    if (path.dirname(at) === at) return { missing };
  }
}

/** The file standing where `dir` or one of its parents must be a directory, if any. */
export function blockingFile(dir: string): string | undefined {
  return existingAncestor(dir).blocking;
}

/** None for a path that does not exist, or lies under a file (ENOTDIR): the walk goes up to what does. */
function statOrNone(at: string): Stats | undefined {
  try {
    return statSync(at);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw err;
  }
}
