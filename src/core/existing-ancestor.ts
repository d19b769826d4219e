import fs from 'node:fs';
import path from 'node:path';

/**
 * The walk from `dir` up to the deepest path that exists, one stat a component: the paths missing
 * on the way (deepest first), and `blocking` when what exists is not a directory (a file in the way:
 * `dir` itself, or a parent, under which nothing can be created).
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
function statOrNone(at: string): fs.Stats | undefined {
  try {
    return fs.statSync(at);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw err;
  }
}
