import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { busySqliteCode, databaseBusy, databaseUnavailable, EvermeError, unusableSqliteCode } from '../core/errors.js';
import { assertStateDirUsable } from '../config/state-dir.js';

/**
 * The store as its readers open it: the file's name, the schema version this build reads, and the
 * checks every connection makes. Apart from database.ts, which creates and migrates the store, so
 * that a reader loads neither the migrations nor what they run (the term index's writer, FTS5
 * re-indexing, the tokenizer): SessionStart's recall, on the agent's path, spent ~15 ms loading them.
 */

export type Db = Database.Database;

export const DATABASE_FILE = 'everme.db';

/** Several processes share the file (an import and hook workers): wait for a lock rather than fail. */
export const BUSY_TIMEOUT_MS = 5000;

/** The schema version this build writes and reads: the number of steps in database.ts's MIGRATIONS (a test holds them equal). */
export const SCHEMA_VERSION = 20;

export function databasePath(stateDir: string): string {
  return path.join(stateDir, DATABASE_FILE);
}

/**
 * Which file the store in `stateDir` is, or undefined when there is none: a long-lived reader (the
 * viewer, the MCP server) compares it before each use, because a connection keeps reading the file
 * it opened after `uninstall --purge` removed it or a rebuild replaced it. The birth time tells a
 * new file from an old one whose inode number the file system reused.
 */
export function storeIdentity(stateDir: string): string | undefined {
  try {
    const s = fs.statSync(databasePath(stateDir));
    return `${s.dev}:${s.ino}:${s.birthtimeMs}`;
  } catch {
    return undefined;
  }
}

/**
 * The store in `stateDir`, for reading (search, MCP, SessionStart): never creates, never migrates.
 * `openDatabase(stateDir, { readonly: true })` comes here too.
 */
export function openReadonlyDatabase(stateDir: string): Db {
  const file = databasePath(stateDir);
  // The directory as the file's path names it (normalised), in the check and in its message.
  assertStateDirUsable(path.dirname(file));
  if (!fs.existsSync(file)) throw databaseMissing(file);
  // A store the first import (or an upgrading sync) is migrating right now looks, for a moment, empty,
  // half-versioned or even foreign (tables before their version): wait for the migration rather
  // than tell an agent to upgrade it or move it aside.
  for (let waited = 0; ; waited += MIGRATION_WAIT_STEP_MS) {
    try {
      return openChecked(file);
    } catch (err) {
      if (waited >= MIGRATION_WAIT_MS || !mayBeMigrating(err, file)) throw err;
      sleepSync(MIGRATION_WAIT_STEP_MS);
    }
  }
}

/** There is no store at `file` (nothing imported yet, or it was removed). */
export function databaseMissing(file: string): EvermeError {
  return new EvermeError('io', `No everme database at ${file}`, {
    code: 'database_missing',
    hint: 'Run `everme import` or `everme sync` first to create the local store.',
    detail: { path: file },
  });
}

export function isDatabaseMissing(err: unknown): boolean {
  return err instanceof EvermeError && err.code === 'database_missing';
}

/**
 * A long-lived reader's connection to the store (the MCP server, the viewer), kept as `wrap` made it
 * and following the file: none while there is no store (each `get` tries again, so memories a later
 * import creates are found without a restart), and a new one once `uninstall --purge` removed the
 * file or a rebuild replaced it, since a connection goes on reading the file it opened.
 */
export class FollowedStore<T> {
  private db?: Db;
  private value?: T;
  private identity?: string;

  constructor(
    private readonly stateDir: string,
    private readonly wrap: (db: Db) => T,
    private readonly open: () => Db = () => openReadonlyDatabase(stateDir),
  ) {}

  /** What `wrap` made of the store as it is now, or undefined when there is none. */
  get(): T | undefined {
    if (this.value !== undefined) {
      if (storeIdentity(this.stateDir) === this.identity) return this.value;
      this.close();
    }
    // Before opening: should the file be replaced in between, the next call sees it differ.
    const identity = storeIdentity(this.stateDir);
    let db: Db;
    try {
      db = this.open();
    } catch (err) {
      if (isDatabaseMissing(err)) return undefined;
      throw err;
    }
    this.db = db;
    this.identity = identity;
    this.value = this.wrap(db);
    return this.value;
  }

  close(): void {
    this.db?.close();
    this.db = undefined;
    this.value = undefined;
    this.identity = undefined;
  }
}

/** How long a reader waits for a store being migrated: the whole schema takes ~100 ms on a slow disk. */
const MIGRATION_WAIT_MS = 1000;
const MIGRATION_WAIT_STEP_MS = 50;
/** A store written this recently may be being migrated; an older one is as it will stay. */
const MIGRATING_WRITE_MS = 10_000;

function openChecked(file: string): Db {
  const db = connect(file, { readonly: true, fileMustExist: true });
  try {
    assertNotNewer(db, file);
    assertNotForeign(db, file);
    const version = userVersion(db);
    if (version === 0) {
      throw new EvermeError('io', `No everme database at ${file} yet`, {
        code: 'database_missing',
        hint: 'Run `everme import` or `everme sync` first to create the local store.',
        detail: { path: file },
      });
    }
    if (version < SCHEMA_VERSION) {
      throw new EvermeError('io', `The everme database at ${file} needs an upgrade before it can be read`, {
        code: 'database_outdated',
        hint: 'Run `everme sync` once; it upgrades the database in place.',
        detail: { path: file },
      });
    }
    return db;
  } catch (err) {
    db.close();
    throw asDatabaseError(err, file);
  }
}

function mayBeMigrating(err: unknown, file: string): boolean {
  if (!(err instanceof EvermeError)) return false;
  const reason = err.detail?.['reason'];
  const halfWay = err.code === 'database_missing' || err.code === 'database_outdated' || reason === 'not_an_everme_database';
  return halfWay && [file, `${file}-wal`].some((f) => writtenWithin(f, MIGRATING_WRITE_MS));
}

function writtenWithin(file: string, ms: number): boolean {
  try {
    return Date.now() - fs.statSync(file).mtimeMs < ms;
  } catch {
    return false;
  }
}

/** Blocks this thread for `ms` (SQLite's own waits block it too: a store's open is synchronous). */
export function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Every connection: `timeout` is SQLite's busy timeout, so it waits for another process's lock. */
export function connect(file: string, options: Database.Options): Db {
  try {
    return new Database(file, { ...options, timeout: BUSY_TIMEOUT_MS });
  } catch (err) {
    throw ioError(`Cannot open the everme database at ${file}`, file, err);
  }
}

export function userVersion(db: Db): number {
  return Number(db.pragma('user_version', { simple: true }));
}

export function assertNotNewer(db: Db, file: string): void {
  const version = userVersion(db);
  if (version > SCHEMA_VERSION) {
    throw new EvermeError('io', `The everme database at ${file} was written by a newer version of everme`, {
      code: 'database_too_new',
      hint: 'Upgrade everme, or point EVERME_STATE_DIR at another directory.',
      detail: { path: file, schemaVersion: version, supportedVersion: SCHEMA_VERSION },
    });
  }
}

/**
 * A file with tables but no schema version is another program's database (every everme store has
 * its version from its first migration, which creates its tables in the same transaction). Never
 * migrated: that would write everme's tables into it.
 */
export function assertNotForeign(db: Db, file: string): void {
  // One statement, so one snapshot: read one after the other, another process's first migration
  // (an import creating the store at the same moment) could commit between the version (still 0)
  // and the tables (already there), and its fresh store was taken for another program's.
  const foreign = db.prepare<[], number>('SELECT (SELECT user_version FROM pragma_user_version) = 0 AND EXISTS (SELECT 1 FROM sqlite_master)').pluck().get();
  if (foreign !== 1) return;
  throw new EvermeError('io', 'The everme database is damaged or is not an everme database', {
    code: 'database_unavailable',
    hint: `${file} holds another program's tables: move it aside, or point EVERME_STATE_DIR at another directory, and run \`everme import --since YYYY-MM-DD\` to build the local store.`,
    detail: { path: file, reason: 'not_an_everme_database' },
  });
}

export function ioError(message: string, file: string, cause: unknown): EvermeError {
  const sqliteCode = unusableSqliteCode(cause);
  if (sqliteCode !== undefined) return databaseUnavailable(sqliteCode, file, cause);
  const busyCode = busySqliteCode(cause);
  if (busyCode !== undefined) return databaseBusy(busyCode, file, cause);
  // A file-system failure (creating the directory or the file) names its errno, never SQLite's text.
  const errno = (cause as NodeJS.ErrnoException | undefined)?.code;
  const reason = typeof errno === 'string' && !errno.startsWith('SQLITE_') ? ` (${errno})` : '';
  return new EvermeError('io', `${message}${reason}`, {
    code: 'database_unavailable',
    hint: 'Check that the state directory exists and is writable (EVERME_STATE_DIR), and that the file is an everme database.',
    detail: { path: file },
    cause,
  });
}

export function asDatabaseError(err: unknown, file: string): EvermeError {
  if (err instanceof EvermeError) return err;
  return ioError(`Cannot use the everme database at ${file}`, file, err);
}
