import path from 'node:path';
import { recentDayPaths, sessionDirSuffix } from '../core/session-dirs.js';
import { dayDirs, newerCopy, sessionDirNames, sessionsRoot } from './discover.js';
import { readManifest, sessionRefOf } from './manifest.js';
import type { SessionRef } from './types.js';

/** The recent date directories (see `recentDayPaths`) under this data dir's session tree. */
export function recentDayDirs(dataDir: string, nowMs: number): string[] {
  return recentDayPaths(nowMs).map((day) => path.join(sessionsRoot(dataDir), day));
}

export interface LocateOptions {
  /** A directory remembered from an earlier run; used when its manifest still names this session. */
  remembered?: string;
  /** Clock for choosing the recent directories; tests pin it. */
  nowMs?: number;
  /** A directory whose name matches but whose manifest cannot be read or validated. */
  onInvalidManifest?: (dir: string, reason: string) => void;
}

async function confirmIn(dayDir: string, sessionId: string, opts: LocateOptions): Promise<SessionRef | undefined> {
  const suffix = sessionDirSuffix(sessionId);
  let best: { ref: SessionRef; manifestMtimeMs: number } | undefined;
  for (const name of sessionDirNames(dayDir)) {
    if (!name.endsWith(suffix)) continue;
    const dir = path.join(dayDir, name);
    const result = readManifest(dir);
    if (!result.ok) {
      if (!result.missing) opts.onInvalidManifest?.(dir, result.reason);
      continue;
    }
    // The name only suggests; the manifest decides. Two copies in one day: the same rule as discovery.
    if (result.manifest.sessionId !== sessionId) continue;
    const candidate = { ref: sessionRefOf(dir, result.manifest), manifestMtimeMs: result.mtimeMs };
    best = best ? newerCopy(best, candidate) : candidate;
  }
  return best?.ref;
}

/**
 * Finds one session cheaply (the hook worker runs on every tool call): first in a remembered
 * directory, then in the recent date directories, then in the whole date tree, newest first, matching directory names before opening
 * any manifest.
 */
export async function locateSession(
  dataDir: string,
  sessionId: string,
  opts: LocateOptions = {},
): Promise<SessionRef | undefined> {
  if (opts.remembered) {
    const result = readManifest(opts.remembered);
    if (result.ok && result.manifest.sessionId === sessionId) return sessionRefOf(path.resolve(opts.remembered), result.manifest);
  }
  const recent = recentDayDirs(dataDir, opts.nowMs ?? Date.now());
  for (const dayDir of recent) {
    const found = await confirmIn(dayDir, sessionId, opts);
    if (found) return found;
  }
  const checked = new Set(recent);
  for await (const day of dayDirs(dataDir, { newestFirst: true })) {
    if (checked.has(day.dir)) continue;
    const found = await confirmIn(day.dir, sessionId, opts);
    if (found) return found;
  }
  return undefined;
}
