import fs from 'node:fs';
import path from 'node:path';

/**
 * The file standing where `dir` or one of its parents must be a directory, if any: `dir` itself, or
 * the first file met going up (a path under a file can never be created). Undefined when `dir` is
 * a directory or could be made one.
 */
export function blockingFile(dir: string): string | undefined {
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    const stat = statOrNone(at);
    if (stat) return stat.isDirectory() ? undefined : at;
    if (path.dirname(at) === at) return undefined;
  }
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
