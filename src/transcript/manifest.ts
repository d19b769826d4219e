import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, readSync } from 'node:fs';
import * as z from 'zod';
import { entryPath } from '../core/entry-path.js';
import { sameFileStamp } from '../core/file-stamp.js';
import { isRecord } from '../core/json.js';
import type { KnownManifest } from '../store/session-manifests.js';
import type { SessionRef } from './types.js';

export const MANIFEST_FILE = 'manifest.json';

/** A manifest is a few hundred bytes; anything this large is not one, and is never slurped. */
const MAX_MANIFEST_BYTES = 1024 * 1024;

/**
 * Only what identifies and dates a session is required. Declared paths are absolute and may name
 * another machine, so they are accepted but never used to find files.
 */
export const manifestSchema = z.looseObject({
  schemaVersion: z.number().optional(),
  sessionId: z.string().min(1),
  createdAtMs: z.number().finite(),
  updatedAtMs: z.number().finite().optional(),
  source: z.string().optional(),
  layout: z.string().optional(),
  paths: z.looseObject({}).optional(),
});

export type Manifest = z.infer<typeof manifestSchema>;

export type ManifestResult =
  /** `mtimeMs`: the manifest file's own mtime, the tie-break between two copies of one session; `size`, `ino`: the rest of its stat. */
  | { ok: true; manifest: Manifest; mtimeMs: number; size: number; ino: number }
  /** `missing`: no manifest.json at all, so the directory is not (yet) a session. */
  | { ok: false; missing: boolean; reason: string; symlink?: boolean };

/** Reused by every read (they are synchronous): a manifest fits, a larger file grows it. */
let readBuffer = Buffer.alloc(4096);

/**
 * The file's text in one read at its start, when it is no larger than fstat said (`size`); else
 * (it grew meanwhile) all of it. `readFileSync` asks fstat again and reads until a read returns
 * nothing: two more system calls per manifest, ~16 ms of a no-op sync over 3,000 sessions.
 */
function readSmallFile(fd: number, size: number): string {
  if (readBuffer.length < size + 1) readBuffer = Buffer.alloc(size + 1);
  const n = readSync(fd, readBuffer, 0, size + 1, 0);
  return n <= size ? readBuffer.toString('utf8', 0, n) : readFileSync(fd, 'utf8');
}

/**
 * Synchronous on purpose: a manifest is a few hundred bytes, and a no-op sync reads thousands of
 * them; a thread-pool round trip per file costs more than the read itself.
 */
export function readManifest(sessionDir: string): ManifestResult {
  const file = entryPath(sessionDir, MANIFEST_FILE);
  let text: string;
  let fd: number | undefined;
  let mtimeMs: number;
  let size: number;
  let ino: number;
  try {
    // Opened without following a symlink, then checked on the open descriptor: no window in which
    // the file could be swapped for a link between a check and the read.
    fd = openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
    const stat = fstatSync(fd);
    ({ mtimeMs, size, ino } = stat);
    if (!stat.isFile()) return { ok: false, missing: false, reason: 'manifest.json is not a regular file' };
    if (stat.size > MAX_MANIFEST_BYTES) return { ok: false, missing: false, reason: 'manifest.json is too large' };
    text = readSmallFile(fd, stat.size);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { ok: false, missing: true, reason: 'no manifest.json' };
    if (code === 'ELOOP') return { ok: false, missing: false, symlink: true, reason: 'manifest.json is a symlink' };
    return { ok: false, missing: false, reason: `unreadable (${code ?? 'error'})` };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, missing: false, reason: 'not JSON' };
  }
  const quick = quickManifest(json);
  if (quick) return { ok: true, manifest: quick, mtimeMs, size, ino };
  const parsed = manifestSchema.safeParse(json);
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((issue) => issue.path.join('.') || '(root)'))];
    return { ok: false, missing: false, reason: `invalid field(s): ${fields.join(', ')}` };
  }
  return { ok: true, manifest: parsed.data, mtimeMs, size, ino };
}

export type KnownManifestResult = { ok: true; known: KnownManifest } | Extract<ManifestResult, { ok: false }>;

/**
 * What the session directory's manifest says: `known` (what it said when last read) while the file's
 * size, mtime and inode are still the ones recorded with it, one lstat; else the file read now.
 * Anything but a plain file (a symlink, say) is read, so `readManifest` names what is wrong with it.
 */
export function knownManifest(sessionDir: string, known?: KnownManifest): KnownManifestResult {
  if (known !== undefined) {
    try {
      const stat = lstatSync(entryPath(sessionDir, MANIFEST_FILE), { throwIfNoEntry: false });
      if (stat?.isFile() && sameFileStamp(stat, known)) return { ok: true, known };
    } catch {
      // Unreadable now: the read below says how.
    }
  }
  const result = readManifest(sessionDir);
  if (!result.ok) return result;
  const { manifest } = result;
  const read: KnownManifest = { size: result.size, mtimeMs: result.mtimeMs, ino: result.ino, sessionId: manifest.sessionId, createdAtMs: manifest.createdAtMs };
  if (manifest.updatedAtMs !== undefined) read.updatedAtMs = manifest.updatedAtMs;
  return { ok: true, known: read };
}

const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const optionalNumber = (v: unknown): boolean => v === undefined || isFiniteNumber(v);
const optionalString = (v: unknown): boolean => v === undefined || typeof v === 'string';

/**
 * The manifest when `json` plainly is one: checks exactly what `manifestSchema` checks, without its
 * cost (and its copy of the object) for each of the thousands of manifests a sync or an import
 * reads. Anything else goes to the schema, which decides and names the fields.
 */
export function quickManifest(json: unknown): Manifest | undefined {
  if (!isRecord(json)) return undefined;
  const { sessionId, createdAtMs, updatedAtMs, schemaVersion, source, layout, paths } = json;
  if (typeof sessionId !== 'string' || sessionId.length === 0 || !isFiniteNumber(createdAtMs)) return undefined;
  if (!optionalNumber(updatedAtMs) || !optionalNumber(schemaVersion) || !optionalString(source) || !optionalString(layout)) return undefined;
  if (paths !== undefined && !isRecord(paths)) return undefined;
  return json as Manifest;
}

/** `manifest`: as read now, or as known from an earlier read (`knownManifest`). */
export function sessionRefOf(sessionDir: string, manifest: Pick<Manifest, 'sessionId' | 'createdAtMs' | 'updatedAtMs'>): SessionRef {
  const ref: SessionRef = { sessionId: manifest.sessionId, dir: sessionDir, createdAtMs: manifest.createdAtMs };
  if (manifest.updatedAtMs !== undefined) ref.updatedAtMs = manifest.updatedAtMs;
  return ref;
}
