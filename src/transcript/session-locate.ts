import path from 'node:path';
import { EvermeError } from '../core/errors.js';
import { recentDayPaths, sessionDirSuffix } from '../core/session-dirs.js';
import { dayDirs, newerCopy, sessionDirNames, sessionsRoot, type UnreadableDirHandler } from './discover.js';
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
  /** A date directory that could not be listed: the session may be in it. */
  onUnreadableDir?: UnreadableDirHandler;
}

async function confirmIn(dayDir: string, sessionId: string, opts: LocateOptions): Promise<SessionRef | undefined> {
  const suffix = sessionDirSuffix(sessionId);
  let best: { ref: SessionRef; manifestMtimeMs: number } | undefined;
  for (const name of sessionDirNames(dayDir, opts.onUnreadableDir)) {
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
  for await (const day of dayDirs(dataDir, { newestFirst: true, onUnreadableDir: opts.onUnreadableDir })) {
    if (checked.has(day.dir)) continue;
    const found = await confirmIn(day.dir, sessionId, opts);
    if (found) return found;
  }
  return undefined;
}

/**
 * `locateSession` for a session the user named (`everme show`, `sync --session`): not found is an
 * error, and when part of the tree could not be listed it names that directory instead of claiming
 * the session is not there.
 */
export async function locateNamedSession(dataDir: string, sessionId: string, opts: LocateOptions & { hint: string }): Promise<SessionRef> {
  const unreadable = new Map<string, string>();
  const found = await locateSession(dataDir, sessionId, {
    ...opts,
    onUnreadableDir: (dir, reason) => {
      unreadable.set(dir, reason);
      opts.onUnreadableDir?.(dir, reason);
    },
  });
  if (found) return found;
  const [first] = unreadable;
  if (!first) throw new EvermeError('not_found', `No session ${sessionId} under ${dataDir}`, { hint: opts.hint });
  const denied = [...unreadable.values()].every((reason) => reason === 'EACCES' || reason === 'EPERM');
  const more = unreadable.size > 1 ? ` and ${unreadable.size - 1} more` : '';
  throw new EvermeError(denied ? 'permission' : 'io', `No session ${sessionId} found under ${dataDir}, but ${first[0]}${more} could not be read (${first[1]}): it may be there`, {
    code: 'sessions_dir_unreadable',
    hint: denied ? `Give your user read access to ${first[0]} (chmod u+rx), then run again.` : opts.hint,
    detail: { path: first[0], unreadable: [...unreadable].map(([path, reason]) => ({ path, reason })) },
  });
}
