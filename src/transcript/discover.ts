import { readdirSync, type Dirent } from 'node:fs';
import path from 'node:path';
import { EvermeError } from '../core/errors.js';
import { entryPath } from '../core/entry-path.js';
import type { KnownManifest } from '../store/session-manifests.js';
import { knownManifest, sessionRefOf } from './manifest.js';
import { chooseHistoryFile } from './session-history.js';
import type { SessionRef } from './types.js';

const DAY_MS = 24 * 60 * 60 * 1000;

export function sessionsRoot(dataDir: string): string {
  return path.join(dataDir, 'v2', 'sessions');
}

const YEAR = /^\d{4}$/;
const MONTH = /^(0[1-9]|1[0-2])$/;
const DAY = /^(0[1-9]|[12]\d|3[01])$/;
const SESSION_DIR = /^.+-session_.+$/;

/**
 * Ledger-era directories are named in local time, so a directory's date may be a day behind the
 * session's UTC date. A directory is certainly older than `sinceMs` only when the UTC midnight one
 * day past its end is not after `sinceMs`; `endExclusiveMs` is the UTC start of the next period.
 */
function mayHoldSince(endExclusiveMs: number, sinceMs: number | undefined): boolean {
  return sinceMs === undefined || endExclusiveMs + DAY_MS > sinceMs;
}

export interface DayDir {
  dir: string;
  year: number;
  month: number;
  day: number;
}

/**
 * A directory of the walk (year, month, day) that could not be listed for a reason other than
 * vanishing; `reason` is the error code (`EACCES`, `EIO`, …). Its sessions cannot be found.
 */
export type UnreadableDirHandler = (dir: string, reason: string) => void;

/**
 * Synchronous on purpose, like the manifest reads: a tree holds a directory per day, and a no-op
 * sync over 3,000 sessions spent ~40 ms of its ~300 idle, waiting on thread-pool round trips one
 * directory after another.
 */
function subdirs(dir: string, pattern: RegExp, onUnreadable: UnreadableDirHandler | undefined, isRoot = false): string[] {
  return listSubdirs(dir, pattern, onUnreadable, isRoot) ?? [];
}

/** As `subdirs`, but `undefined` for a directory that exists and could not be listed. */
function listSubdirs(dir: string, pattern: RegExp, onUnreadable: UnreadableDirHandler | undefined, isRoot = false): string[] | undefined {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // No sessions yet, or a directory removed while we walk, is not an error.
    if (code === 'ENOENT') return [];
    if (!isRoot) {
      // An unreadable date directory costs its sessions, never the run, but is never silent.
      onUnreadable?.(dir, code ?? 'error');
      return undefined;
    }
    // Only an unreadable root means nothing can be found at all.
    const type = code === 'EACCES' || code === 'EPERM' ? 'permission' : 'io';
    throw new EvermeError(type, `Cannot read the sessions directory ${dir}`, {
      code: 'sessions_dir_unreadable',
      detail: { path: dir },
      cause: err,
    });
  }
  // Dirent.isDirectory() is false for symlinks, so linked trees are never followed.
  return entries
    .filter((e) => e.isDirectory() && pattern.test(e.name))
    .map((e) => e.name)
    .sort();
}

/** Whether a directory can be listed now, or is gone (nothing left to warn about). */
export function dirListable(dir: string): boolean {
  return listSubdirs(dir, SESSION_DIR, undefined) !== undefined;
}

export interface DayDirOptions {
  sinceMs?: number;
  newestFirst?: boolean;
  onUnreadableDir?: UnreadableDirHandler;
}

/** Every `YYYY/MM/DD` directory that may hold sessions created at or after `sinceMs`. */
export async function* dayDirs(dataDir: string, opts: DayDirOptions = {}): AsyncGenerator<DayDir> {
  const order = (names: string[]): string[] => (opts.newestFirst ? names.reverse() : names);
  const root = sessionsRoot(dataDir);
  const unreadable = opts.onUnreadableDir;
  for (const y of order(subdirs(root, YEAR, unreadable, true))) {
    const year = Number(y);
    if (!mayHoldSince(Date.UTC(year + 1, 0, 1), opts.sinceMs)) continue;
    const yearDir = path.join(root, y);
    for (const m of order(subdirs(yearDir, MONTH, unreadable))) {
      const month = Number(m);
      if (!mayHoldSince(Date.UTC(year, month, 1), opts.sinceMs)) continue;
      const monthDir = path.join(yearDir, m);
      for (const d of order(subdirs(monthDir, DAY, unreadable))) {
        const day = Number(d);
        if (!mayHoldSince(Date.UTC(year, month - 1, day + 1), opts.sinceMs)) continue;
        yield { dir: path.join(monthDir, d), year, month, day };
      }
    }
  }
}

/** Names of the `*-session_*` directories in a day directory, sorted (their names start with the time). */
export function sessionDirNames(dayDir: string, onUnreadable?: UnreadableDirHandler): string[] {
  return subdirs(dayDir, SESSION_DIR, onUnreadable);
}

export interface DiscoverOptions {
  /** Epoch ms of a UTC midnight; sessions whose manifest `createdAtMs` is earlier are left out. */
  sinceMs?: number;
  /** A directory whose manifest.json is unreadable or invalid; the walk goes on. */
  /** `symlink`: manifest.json is a symlink, which is never followed. */
  onInvalidManifest: (dir: string, reason: string, symlink: boolean) => void;
  /** A second directory carrying a session id already found (a restored copy); `ignored` is left out. */
  onDuplicateSession?: (ignored: string, chosen: SessionRef) => void;
  /** A year, month or day directory that could not be listed (see `UnreadableDirHandler`); the walk goes on. */
  onUnreadableDir?: UnreadableDirHandler;
  signal?: AbortSignal;
  /** What earlier walks read of each manifest (`SessionManifestStore`): a manifest whose stat did not change is not read again. */
  manifests?: ManifestMemo;
}

/** Where a walk finds the manifests it read before and leaves what it found now (see `SessionManifestStore`). */
export interface ManifestMemo {
  knownIn(dayDir: string): ReadonlyMap<string, KnownManifest>;
  update(dayDir: string, before: ReadonlyMap<string, KnownManifest>, now: ReadonlyMap<string, KnownManifest>): void;
}

const NOTHING_KNOWN: ReadonlyMap<string, KnownManifest> = new Map();

interface Candidate {
  ref: SessionRef;
  manifestMtimeMs: number;
}

/**
 * Of two directories carrying the same session id, the one with the newest manifest: the larger
 * `updatedAtMs` (a manifest without one is older than any that has it), then the later manifest
 * mtime, then, so the choice never alternates, the later directory path.
 */
export function newerCopy(a: Candidate, b: Candidate): Candidate {
  const ua = a.ref.updatedAtMs ?? Number.NEGATIVE_INFINITY;
  const ub = b.ref.updatedAtMs ?? Number.NEGATIVE_INFINITY;
  if (ua !== ub) return ua > ub ? a : b;
  if (a.manifestMtimeMs !== b.manifestMtimeMs) return a.manifestMtimeMs > b.manifestMtimeMs ? a : b;
  return a.ref.dir > b.ref.dir ? a : b;
}

/**
 * Sessions under `<data>/v2/sessions/YYYY/MM/DD/*-session_*`, in date-directory then name order,
 * identified by their manifest. Date directories that certainly predate `sinceMs` are not opened.
 * Each session id is yielded once: of several directories carrying it, the newest copy (see
 * `newerCopy`), so its fingerprint and marks follow one directory, never alternating. The walk is
 * therefore read whole before the first session is yielded (a SessionRef per session, no content).
 */
export async function* discoverSessions(dataDir: string, opts: DiscoverOptions): AsyncGenerator<SessionRef> {
  const found: Candidate[] = [];
  const best = new Map<string, Candidate>();
  for await (const day of dayDirs(dataDir, { sinceMs: opts.sinceMs, onUnreadableDir: opts.onUnreadableDir })) {
    const before = opts.manifests?.knownIn(day.dir) ?? NOTHING_KNOWN;
    const now = new Map<string, KnownManifest>();
    const names = listSubdirs(day.dir, SESSION_DIR, opts.onUnreadableDir);
    for (const name of names ?? []) {
      opts.signal?.throwIfAborted();
      const dir = entryPath(day.dir, name);
      const result = knownManifest(dir, before.get(name));
      if (!result.ok) {
        // A directory without any manifest is not a session, or is still being created (the runtime
        // writes the manifest first); one that holds history without it is said, not lost silently.
        if (!result.missing) opts.onInvalidManifest(dir, result.reason, result.symlink === true);
        else if (chooseHistoryFile(dir).source !== 'none') opts.onInvalidManifest(dir, 'missing', false);
        continue;
      }
      const { known } = result;
      now.set(name, known);
      if (opts.sinceMs !== undefined && known.createdAtMs < opts.sinceMs) continue;
      const candidate = { ref: sessionRefOf(dir, known), manifestMtimeMs: known.mtimeMs };
      found.push(candidate);
      const current = best.get(candidate.ref.sessionId);
      best.set(candidate.ref.sessionId, current ? newerCopy(current, candidate) : candidate);
    }
    // An unlisted day forgets nothing it knew: once readable again, its manifests are only stat'ed.
    if (names) opts.manifests?.update(day.dir, before, now);
  }
  for (const candidate of found) {
    const chosen = best.get(candidate.ref.sessionId)!;
    if (chosen === candidate) yield candidate.ref;
    else opts.onDuplicateSession?.(candidate.ref.dir, chosen.ref);
  }
}
