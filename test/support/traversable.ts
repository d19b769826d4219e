import fs from 'node:fs';
import path from 'node:path';

/**
 * Gives each of `dirs` and every directory above it search and read permission for others (o+rx),
 * so a child running as another user (`nobody`, when the tests run as root) can reach what lies
 * below. Returns the modes it changed, to restore afterwards.
 */
export function traversable(dirs: readonly string[]): Array<[string, number]> {
  const changed: Array<[string, number]> = [];
  for (const start of dirs) {
    for (let d = start; ; d = path.dirname(d)) {
      const mode = fs.statSync(d).mode & 0o7777;
      if ((mode & 0o005) !== 0o005 && !changed.some(([c]) => c === d)) {
        changed.push([d, mode]);
        fs.chmodSync(d, mode | 0o005);
      }
      if (path.dirname(d) === d) break;
    }
  }
  return changed;
}
