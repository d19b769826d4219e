/** The error taxonomy of EverMe's CLI contract; every failure a user can see is one of these. */
export const ERROR_TYPES = [
  'invalid_args',
  'not_logged_in',
  'auth',
  'network',
  'upstream',
  'conflict',
  'not_found',
  'rate_limit',
  'permission',
  'plugin_not_detected',
  'io',
  'internal',
  'cancelled',
] as const;

export type ErrorType = (typeof ERROR_TYPES)[number];

const EXIT_CODES: Record<ErrorType, number> = {
  invalid_args: 2,
  not_logged_in: 3,
  auth: 3,
  network: 4,
  upstream: 1,
  conflict: 1,
  not_found: 1,
  rate_limit: 1,
  permission: 1,
  plugin_not_detected: 1,
  io: 5,
  internal: 5,
  cancelled: 130,
};

export function exitCodeFor(type: ErrorType): number {
  return EXIT_CODES[type];
}

export interface EvermeErrorOptions {
  code?: string;
  hint?: string;
  detail?: Record<string, unknown>;
  cause?: unknown;
}

/**
 * Set on every EvermeError, whichever copy of this module made it. The hook runs from a bundle
 * (dist/src/hook/hook-entry.bundle.cjs) that carries its own copy of this class, while what it loads
 * lazily (SessionStart's recall) throws the unbundled one: `instanceof` goes by this mark, so a
 * gateway that timed out is still a `network` error on either side of that line.
 */
const EVERME_ERROR = Symbol.for('everme.EvermeError');

export class EvermeError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[EVERME_ERROR] === true;
  }

  readonly type: ErrorType;
  readonly code: string;
  readonly hint?: string;
  readonly detail?: Record<string, unknown>;

  constructor(type: ErrorType, message: string, options: EvermeErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'EvermeError';
    Object.defineProperty(this, EVERME_ERROR, { value: true });
    this.type = type;
    this.code = options.code ?? type;
    this.hint = options.hint;
    this.detail = options.detail;
  }
}

/** SQLite result codes (better-sqlite3's `SqliteError.code`) that mean the store cannot be used at all. */
const SQLITE_UNAVAILABLE = /^SQLITE_(?:CORRUPT|NOTADB|IOERR|CANTOPEN|READONLY|FULL|PERM|AUTH)/;
const SQLITE_DAMAGED = /^SQLITE_(?:CORRUPT|NOTADB)/;

/**
 * The store cannot be used: one error, the same whichever command or tool met it, and SQLite's own
 * message never shown (it names pages and internals; the code is in `detail`).
 */
export function databaseUnavailable(sqliteCode: string, file?: string, cause?: unknown): EvermeError {
  const damaged = SQLITE_DAMAGED.test(sqliteCode);
  // The same words wherever it was met (opening the file, or a query deep in a search); the path is
  // in `detail` when the place that met it knows it.
  return new EvermeError('io', damaged ? 'The everme database is damaged or is not an everme database' : 'The everme database cannot be opened or written', {
    code: 'database_unavailable',
    // The message stays the same everywhere; the hint names the file when this place knows it.
    hint: damaged
      ? `Move ${file ?? 'the file (everme.db in the state directory, EVERME_STATE_DIR)'} aside and run \`everme import --since YYYY-MM-DD\` to rebuild the local store.`
      : `Check that ${file === undefined ? 'the state directory (EVERME_STATE_DIR)' : `${file}'s directory`} exists and is writable, and that the disk is not full.`,
    detail: { ...(file === undefined ? {} : { path: file }), sqliteCode },
    cause,
  });
}

/** SQLite's codes for a lock another connection holds: the store is fine, only busy. */
const SQLITE_BUSY = /^SQLITE_(?:BUSY|LOCKED)/;

/** `SQLITE_BUSY`, `SQLITE_LOCKED_SHAREDCACHE`…: the code of a failure that means another connection holds the lock. */
export function busySqliteCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && SQLITE_BUSY.test(code) ? code : undefined;
}

/**
 * Another process (an import, a sync, a hook worker, a forget) held the store's write lock for longer
 * than the busy timeout: nothing is wrong with the file or its directory, so the hint says to wait.
 */
export function databaseBusy(sqliteCode: string, file?: string, cause?: unknown): EvermeError {
  return new EvermeError('conflict', 'The everme database is busy: another everme process is writing to it', {
    code: 'database_busy',
    hint: 'Try again in a moment, when the import, sync or forget running now has finished.',
    detail: { ...(file === undefined ? {} : { path: file }), sqliteCode },
    cause,
  });
}

/** stdout refused a write (a full disk, `> /dev/full`): one error, whether the write's listener or the writer met it. */
export function stdoutUnwritable(err: NodeJS.ErrnoException): EvermeError {
  return new EvermeError('io', `Could not write the output to stdout (${err.code ?? err.message})`, {
    code: 'stdout_unwritable',
    hint: 'What the command did (an import or sync committed) is kept; only its output was lost. Point stdout at a file or pipe that can take it.',
    cause: err,
  });
}

/** `SQLITE_CORRUPT`, `SQLITE_IOERR_SHORT_READ`…: the code of a failure that means the store is unusable. */
export function unusableSqliteCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && SQLITE_UNAVAILABLE.test(code) ? code : undefined;
}

/** Wraps anything thrown into the taxonomy; unknown failures are `internal`, never a raw stack. */
export function toEvermeError(err: unknown): EvermeError {
  if (err instanceof EvermeError) return err;
  const sqliteCode = unusableSqliteCode(err);
  if (sqliteCode !== undefined) return databaseUnavailable(sqliteCode, undefined, err);
  const busyCode = busySqliteCode(err);
  if (busyCode !== undefined) return databaseBusy(busyCode, undefined, err);
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  // What the file system refused (a path, a permission, a full or read-only disk, a symlink loop):
  // the user's to act on, never a defect of ours.
  if (typeof code === 'string' && /^E(ACCES|PERM|NOENT|NOTDIR|ISDIR|ROFS|NOSPC|EXIST|LOOP|NAMETOOLONG|IO|DQUOT|FBIG|NOTEMPTY|BUSY|TXTBSY)$/.test(code)) {
    return new EvermeError('io', message, { code: code.toLowerCase(), cause: err });
  }
  return new EvermeError('internal', message, { cause: err });
}

/** An EvermeError as it crosses a thread boundary (a structured clone drops its class). */
export interface EvermeErrorData {
  type: ErrorType;
  code: string;
  message: string;
  hint?: string;
}

export function errorData(error: EvermeError): EvermeErrorData {
  return { type: error.type, code: error.code, message: error.message, ...(error.hint === undefined ? {} : { hint: error.hint }) };
}

export function errorFromData(data: EvermeErrorData): EvermeError {
  return new EvermeError(data.type, data.message, { code: data.code, ...(data.hint === undefined ? {} : { hint: data.hint }) });
}
