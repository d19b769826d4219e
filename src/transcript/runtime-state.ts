import Database from 'better-sqlite3';
import { chmodSync, closeSync, copyFileSync, existsSync, mkdtempSync, openSync, readSync, rmSync, statSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sameFileStamp, type FileStamp } from '../core/file-stamp.js';

/**
 * MiniMax Code's runtime database, `<data>/v2/sqlite/runtime-state.sqlite`: the host keeps it open
 * for writing in WAL mode while it runs. everme only ever reads it, and must leave it exactly as it
 * found it: the file and its `-wal` byte for byte and mtime for mtime, and no `-wal` or `-shm`
 * created or removed (a reader's lock marks inside an existing `-shm` are SQLite's normal sharing).
 *
 * What SQLite does with a read-only connection (checked on this build, and as SQLite documents for
 * read-only WAL databases since 3.22: "the -shm and -wal files already exist, or can be created, or
 * the database is immutable"):
 * - `-wal` and `-shm` both present (the host is running, or stopped without closing): opened in
 *   place it reads rows still only in the WAL, writes nothing but lock marks into `-shm`, and never
 *   checkpoints or deletes on close (a read-only connection cannot).
 * - neither present (the host closed it cleanly) but the header says WAL: opened in place, SQLite
 *   *creates* an empty `-wal` and a 32 KiB `-shm` and leaves them behind. So instead everything is in
 *   the main file, and a private copy of it is read (see `openSnapshot`). `immutable` would avoid the
 *   files too, but it tells SQLite nobody writes, which a host starting at that moment would break.
 * - `-wal` without `-shm`: a writer in EXCLUSIVE locking mode (it keeps the WAL index in its own
 *   memory). Opened in place, a reader gets SQLITE_BUSY while the writer lives, but creates a `-shm`
 *   when the writer died: treated as locked, never opened.
 * - a rollback-journal database (header not WAL): opened in place read-only, which creates nothing
 *   and waits for a writer's lock at most the busy timeout.
 */
export const RUNTIME_STATE_FILE = path.join('v2', 'sqlite', 'runtime-state.sqlite');

/** The host may hold a write lock for a moment; never wait on it longer than this. */
export const RUNTIME_STATE_BUSY_TIMEOUT_MS = 200;

export function runtimeStatePath(dataDir: string): string {
  return path.join(dataDir, RUNTIME_STATE_FILE);
}

/** Why the database could not be read. */
export type RuntimeStateTrouble = 'absent' | 'locked' | 'corrupt' | 'unreadable' | 'unknown_schema';

/** How it was opened: in place (`live`: beside the host's WAL; `direct`: a rollback-journal file), or a private copy. */
export type RuntimeStateMode = 'live' | 'direct' | 'snapshot';

export type RuntimeStateOpen =
  | { ok: true; db: Database.Database; mode: RuntimeStateMode; close(): void }
  | { ok: false; trouble: RuntimeStateTrouble; message: string };

const SQLITE_MAGIC = 'SQLite format 3\0';
const HEADER_BYTES = 100;
/** Header bytes 18 and 19: file format write and read versions, 2 meaning WAL. */
const WRITE_VERSION_OFFSET = 18;
const WAL_VERSION = 2;
const LEGACY_VERSION = 1;

function readHeader(file: string): Buffer {
  const fd = openSync(file, 'r');
  try {
    const header = Buffer.alloc(HEADER_BYTES);
    const n = readSync(fd, header, 0, HEADER_BYTES, 0);
    return header.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/** An SQLite error, or a file-system one, as the reason the database said nothing. */
export function troubleOf(err: unknown): { trouble: RuntimeStateTrouble; message: string } {
  const code = (err as { code?: unknown }).code;
  const message = err instanceof Error ? err.message : String(err);
  if (code === 'ENOENT') return { trouble: 'absent', message: 'no such file' };
  if (typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code)) return { trouble: 'locked', message };
  if (typeof code === 'string' && /^SQLITE_(NOTADB|CORRUPT|FORMAT|RANGE)/.test(code)) return { trouble: 'corrupt', message };
  return { trouble: 'unreadable', message };
}

function inPlace(file: string, mode: RuntimeStateMode, busyTimeoutMs: number): RuntimeStateOpen {
  const db = new Database(file, { readonly: true, fileMustExist: true, timeout: busyTimeoutMs });
  return { ok: true, db, mode, close: () => db.close() };
}

function stampOf(file: string): FileStamp {
  const st = statSync(file);
  return { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino };
}

/**
 * A WAL-mode file nobody has open (no `-wal`): every committed row is in the main file, so a copy
 * of it alone is the whole database. The copy lives in a private temporary directory (0700, removed
 * on close) and is marked as a rollback-journal file, so opening it read-only creates nothing
 * either. Copied by the kernel (no buffer the size of the database in this process's memory).
 * Undefined when the file changed while it was copied (the host started meanwhile): the caller
 * looks at the files again.
 */
function openSnapshot(file: string): RuntimeStateOpen | undefined {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'everme-runtime-state-'));
  const remove = (): void => rmSync(dir, { recursive: true, force: true });
  try {
    const copy = path.join(dir, 'runtime-state.sqlite');
    const before = stampOf(file);
    copyFileSync(file, copy);
    if (!sameFileStamp(before, stampOf(file)) || existsSync(`${file}-wal`)) {
      remove();
      return undefined;
    }
    // The copy has the original's mode (read-only, say): ours to mark, private to this user.
    chmodSync(copy, 0o600);
    const fd = openSync(copy, 'r+');
    try {
      writeSync(fd, Buffer.from([LEGACY_VERSION, LEGACY_VERSION]), 0, 2, WRITE_VERSION_OFFSET);
    } finally {
      closeSync(fd);
    }
    const db = new Database(copy, { readonly: true, fileMustExist: true });
    return {
      ok: true,
      db,
      mode: 'snapshot',
      close: () => {
        db.close();
        remove();
      },
    };
  } catch (err) {
    remove();
    throw err;
  }
}

/**
 * Opens the runtime database for reading without changing anything on disk (see above). Never
 * throws: every way of not being readable is an answer with its reason. A file that changed while
 * its copy was taken is looked at once more (the host may have opened it meanwhile); changing
 * again, it counts as locked.
 */
export function openRuntimeState(file: string, busyTimeoutMs = RUNTIME_STATE_BUSY_TIMEOUT_MS): RuntimeStateOpen {
  try {
    for (let attempt = 0; attempt < 2; attempt++) {
      const st = statSync(file);
      if (!st.isFile()) return { ok: false, trouble: 'unreadable', message: 'not a regular file' };
      const header = readHeader(file);
      if (header.length === 0) return { ok: false, trouble: 'corrupt', message: 'the file is empty' };
      if (header.length < HEADER_BYTES || header.toString('latin1', 0, SQLITE_MAGIC.length) !== SQLITE_MAGIC) {
        return { ok: false, trouble: 'corrupt', message: 'not an SQLite database' };
      }
      const walMode = header[WRITE_VERSION_OFFSET] === WAL_VERSION || header[WRITE_VERSION_OFFSET + 1] === WAL_VERSION;
      if (!walMode) return inPlace(file, 'direct', busyTimeoutMs);
      const wal = existsSync(`${file}-wal`);
      const shm = existsSync(`${file}-shm`);
      if (wal && shm) return inPlace(file, 'live', busyTimeoutMs);
      if (wal) return { ok: false, trouble: 'locked', message: 'held by a writer in exclusive locking mode (a -wal without a -shm)' };
      const snapshot = openSnapshot(file);
      if (snapshot) return snapshot;
    }
    return { ok: false, trouble: 'locked', message: 'it changed while it was being read (the host is starting)' };
  } catch (err) {
    return { ok: false, ...troubleOf(err) };
  }
}
