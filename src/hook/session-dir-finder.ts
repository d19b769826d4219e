import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { recentDayPaths, sessionDirSuffix } from '../core/session-dirs.js';

/** A directory gone (or never made) is no news; one that cannot be listed is passed to `onUnreadable`. */
function listOrReport(dir: string, onUnreadable: FindOptions['onUnreadableDir']): string[] | undefined {
  try {
    return readdirSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
    if (code !== 'ENOENT' && code !== 'ENOTDIR') onUnreadable?.(dir, code);
    return undefined;
  }
}

function findIn(dayDir: string, suffix: string, onUnreadable: FindOptions['onUnreadableDir']): string | undefined {
  const names = listOrReport(dayDir, onUnreadable);
  if (names === undefined) return undefined;
  // A directory without a manifest (being created, or left behind) is not the session.
  const name = names.find((n) => n.endsWith(suffix) && existsSync(path.join(dayDir, n, 'manifest.json')));
  return name === undefined ? undefined : path.join(dayDir, name);
}

export interface FindOptions {
  /** A directory remembered from an earlier hook. */
  remembered?: string;
  /** False skips the whole-tree walk (the id was searched for in vain a moment ago). */
  searchAll?: boolean;
  now?: number;
  /** A directory of the date tree that could not be listed (its error code): the session may be under it. */
  onUnreadableDir?: (dir: string, reason: string) => void;
}

/**
 * Finds a session directory by name only, cheapest first: a remembered path, the recent day
 * directories (today and yesterday, UTC and local, since both eras name them differently), then the whole date tree
 * by directory listing. No manifest is opened here; the worker confirms identity and, of several
 * copies, reads the newest (`locateSession`), so the first name found here only says the session exists.
 */
export function findSessionDir(dataDir: string, sessionId: string, opts: FindOptions = {}): string | undefined {
  const suffix = sessionDirSuffix(sessionId);
  const { remembered } = opts;
  if (remembered && remembered.endsWith(suffix) && existsSync(path.join(remembered, 'manifest.json'))) return remembered;
  const root = path.join(dataDir, 'v2', 'sessions');
  const recent = recentDayPaths(opts.now ?? Date.now());
  for (const day of recent) {
    const hit = findIn(path.join(root, day), suffix, opts.onUnreadableDir);
    if (hit) return hit;
  }
  if (opts.searchAll === false) return undefined;
  const checked = new Set(recent);
  const list = (dir: string): string[] => (listOrReport(dir, opts.onUnreadableDir) ?? []).filter((n) => /^\d+$/.test(n)).sort().reverse();
  for (const year of list(root)) {
    for (const month of list(path.join(root, year))) {
      for (const day of list(path.join(root, year, month))) {
        if (checked.has(path.join(year, month, day))) continue;
        const hit = findIn(path.join(root, year, month, day), suffix, opts.onUnreadableDir);
        if (hit) return hit;
      }
    }
  }
  return undefined;
}
