import path from 'node:path';
import { EvermeError } from '../core/errors.js';
import { sessionDirSuffix } from '../core/session-dirs.js';
import { dayDirs, newerCopy, sessionDirNames, type UnreadableDirHandler } from './discover.js';
import { readManifest, sessionRefOf } from './manifest.js';
import type { SessionRef } from './types.js';

export interface LocateOptions {
  /** A directory remembered from an earlier run; a candidate when its manifest still names this session. */
  remembered?: string;
  /** A directory whose name matches but whose manifest cannot be read or validated. */
  onInvalidManifest?: (dir: string, reason: string) => void;
  /** A date directory that could not be listed: the session may be in it. */
  onUnreadableDir?: UnreadableDirHandler;
}

type Candidate = Parameters<typeof newerCopy>[0];

/** The newest copy (see `newerCopy`) among this day's directories carrying the session id, except `skip`. */
function confirmIn(dayDir: string, sessionId: string, opts: LocateOptions, skip: string | undefined): Candidate | undefined {
  const suffix = sessionDirSuffix(sessionId);
  let best: Candidate | undefined;
  for (const name of sessionDirNames(dayDir, opts.onUnreadableDir)) {
    if (!name.endsWith(suffix)) continue;
    const dir = path.join(dayDir, name);
    if (dir === skip) continue;
    const result = readManifest(dir);
    if (!result.ok) {
      if (!result.missing) opts.onInvalidManifest?.(dir, result.reason);
      continue;
    }
    // The name only suggests; the manifest decides.
    if (result.manifest.sessionId !== sessionId) continue;
    const candidate = { ref: sessionRefOf(dir, result.manifest), manifestMtimeMs: result.mtimeMs };
    best = best ? newerCopy(best, candidate) : candidate;
  }
  return best;
}

function rememberedCopy(dir: string | undefined, sessionId: string): Candidate | undefined {
  if (!dir) return undefined;
  const result = readManifest(dir);
  if (!result.ok || result.manifest.sessionId !== sessionId) return undefined;
  return { ref: sessionRefOf(path.resolve(dir), result.manifest), manifestMtimeMs: result.mtimeMs };
}

/**
 * Finds one session (the hook worker, once per start; `show`, `sync --session`). Every directory
 * carrying its id is compared, as discovery does (`newerCopy`): a restored copy in a later date
 * directory, or a remembered directory, is read only when it is the newest copy, since reading a
 * stale one would take what it lacks for gone. Directory names are matched before any manifest is
 * opened, so each other day costs one listing.
 */
export async function locateSession(
  dataDir: string,
  sessionId: string,
  opts: LocateOptions = {},
): Promise<SessionRef | undefined> {
  const remembered = rememberedCopy(opts.remembered, sessionId);
  let best = remembered;
  for await (const day of dayDirs(dataDir, { newestFirst: true, onUnreadableDir: opts.onUnreadableDir })) {
    const found = confirmIn(day.dir, sessionId, opts, remembered?.ref.dir);
    if (found) best = best ? newerCopy(best, found) : found;
  }
  return best?.ref;
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
