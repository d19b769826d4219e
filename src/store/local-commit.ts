import Database from 'better-sqlite3';
import { busySqliteCode, databaseBusy, EvermeError } from '../core/errors.js';
import type { KeyedMessage } from '../core/agent-message.js';
import { LocalStore, type FtsRow } from './local-store.js';
import { encodeMessageRows, rowsTransferList, type MessageRows } from './message-rows.js';
import { SessionStateWriter } from './session-state.js';
import type { TermIndexOptions } from './term-index.js';
import type { ConversationMeta, SessionStateWrite } from './store-types.js';

type GroupApply = (writes: readonly EncodedWrite[], outcomes: Array<EvermeError | undefined>, interrupted: () => boolean) => void;

/** One commit of the embedded store: a conversation's messages and, at a session's end, its state. */
export interface SessionWrite {
  conversation: ConversationMeta;
  messages: KeyedMessage[];
  /** Present once the session was read to its end: committed together with its messages. */
  state?: SessionStateWrite;
}

/**
 * A `SessionWrite` as the committer takes it: its messages encoded (see `MessageRows`), in the
 * chunks the plan phase encoded them in, in order.
 */
export interface EncodedWrite {
  conversation: ConversationMeta;
  rows: MessageRows[];
  state?: SessionStateWrite;
}

export function encodeWrite(write: SessionWrite): EncodedWrite {
  return { conversation: write.conversation, rows: [encodeMessageRows(write.messages)], ...(write.state ? { state: write.state } : {}) };
}

/** What a `postMessage` of the write moves to the other thread instead of copying. */
export function writeTransferList(write: EncodedWrite): ArrayBuffer[] {
  return write.rows.flatMap(rowsTransferList);
}

/**
 * SQLite result codes that describe the machine rather than the data (a full or read-only disk, a
 * file that is gone or damaged): `io`, which the user can act on. Everything else (a constraint, a
 * misuse) is a defect: `internal`. Another process holding the lock past the timeout is neither.
 */
const IO_RESULT_CODES = /^SQLITE_(?:FULL|READONLY|IOERR|CANTOPEN|PERM|CORRUPT|NOTADB|NOLFS|AUTH)(?:_|$)/;

/** A failed write of the embedded store, in the taxonomy; the same whichever thread it failed on. */
export function storeWriteError(err: unknown): EvermeError {
  if (err instanceof EvermeError) return err;
  // A lock held past the busy timeout is the busy store every reader and opener reports
  // (`conflict`, `database_busy`: try again), not a disk to check.
  const busyCode = busySqliteCode(err);
  if (busyCode !== undefined) return databaseBusy(busyCode, undefined, err);
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof Database.SqliteError) {
    const type = IO_RESULT_CODES.test(err.code) ? 'io' : 'internal';
    return new EvermeError(type, `Cannot write to the everme database: ${message}`, {
      code: err.code.toLowerCase(),
      ...(type === 'io' ? { hint: 'Check free space and permissions of the state directory (EVERME_STATE_DIR), then run again.' } : {}),
      cause: err,
    });
  }
  return new EvermeError('internal', message, { cause: err });
}

function cancelledWrite(): EvermeError {
  return new EvermeError('cancelled', 'Interrupted before this session was committed');
}

/**
 * The embedded store's one commit rule: a conversation's messages and their session's state in
 * one transaction (BEGIN IMMEDIATE: it takes the write lock up front, so a commit never fails half
 * way on a snapshot another connection moved). A stored message is its own high-water mark.
 */
export class LocalCommitter {
  private readonly store: LocalStore;
  private readonly state: SessionStateWriter;
  private readonly applyOne: Database.Transaction<(write: EncodedWrite, deferIndex?: FtsRow[]) => void>;
  private readonly applyGroup: Database.Transaction<GroupApply>;
  private readonly applyGroupGuarded: Database.Transaction<GroupApply>;

  /** `termIndex`: see `TermIndexOptions` (the writer thread's committer is a bulk loader). */
  constructor(
    private readonly db: Database.Database,
    termIndex: TermIndexOptions = {},
  ) {
    this.store = new LocalStore(db, termIndex);
    this.state = new SessionStateWriter(db);
    this.applyOne = db.transaction((write: EncodedWrite, deferIndex?: FtsRow[]) => this.apply(write, deferIndex));
    this.applyGroup = db.transaction((writes, outcomes, interrupted) => this.group(writes, outcomes, interrupted, false));
    this.applyGroupGuarded = db.transaction((writes, outcomes, interrupted) => this.group(writes, outcomes, interrupted, true));
  }

  /** Ends the run: see `LocalStore.finishTermIndex`. */
  finish(): void {
    this.store.finishTermIndex();
  }

  /** Commits one write; throws (an EvermeError) with nothing of it committed. */
  commit(write: EncodedWrite): void {
    try {
      this.applyOne.immediate(write);
    } catch (err) {
      throw storeWriteError(err);
    }
  }

  /**
   * Commits several writes in one transaction: a write that fails is rolled back alone and answered
   * with its error, the others commit together. One commit instead of one per session is what makes
   * a bulk import cheap: every commit flushes a new FTS segment (later merged again) and appends a
   * WAL commit. Returns one outcome per write, in order; undefined = committed. Once `interrupted`
   * says so (Ctrl-C), the writes not yet applied are answered `cancelled`; those applied commit,
   * each whole.
   *
   * Writes almost never fail, so the group is first applied with no savepoint per write: a
   * savepoint makes SQLite copy every page the write touches into its statement journal, which on
   * the 1x import was ~220 MB of disk writes for a 181 MB database. Should a write fail, that
   * transaction is rolled back whole and the group applied again with a savepoint per write, so
   * the failure costs only its session. Should that transaction be lost too (a full disk rolls
   * everything back), each write is tried again on its own.
   */
  commitMany(writes: readonly EncodedWrite[], interrupted: () => boolean = () => false): Array<EvermeError | undefined> {
    if (writes.length === 1) return [interrupted() ? cancelledWrite() : this.tryCommit(writes[0]!)];
    for (const attempt of [this.applyGroup, this.applyGroupGuarded]) {
      const outcomes: Array<EvermeError | undefined> = [];
      try {
        attempt.immediate(writes, outcomes, interrupted);
        return outcomes;
      } catch {
        // Rolled back whole: the next attempt isolates the failure.
      }
    }
    return writes.map((write) => (interrupted() ? cancelledWrite() : this.tryCommit(write)));
  }

  private tryCommit(write: EncodedWrite): EvermeError | undefined {
    try {
      this.commit(write);
      return undefined;
    } catch (err) {
      return storeWriteError(err);
    }
  }

  /**
   * The group in the caller's transaction. Without `savepoints` any failure throws (and rolls all
   * back); with them, each write runs in its own and a failed one is rolled back alone.
   */
  private group(writes: readonly EncodedWrite[], outcomes: Array<EvermeError | undefined>, interrupted: () => boolean, savepoints: boolean): void {
    // The group's index rows, inserted after every write: FTS5 flushes its pending terms into a new
    // segment whenever a savepoint opens, so indexing inside them wrote (and later merged) one
    // small segment per session. Profiled on the 1x import: that flush was ~4 s of the writer's ~13.
    const index: FtsRow[] = [];
    for (const write of writes) {
      if (interrupted()) {
        outcomes.push(cancelledWrite());
        continue;
      }
      if (!savepoints) {
        this.apply(write, index);
        outcomes.push(undefined);
        continue;
      }
      try {
        const rows: FtsRow[] = [];
        // Nested in the group's transaction, better-sqlite3 runs this as a savepoint.
        this.applyOne(write, rows);
        for (const row of rows) index.push(row);
        outcomes.push(undefined);
      } catch (err) {
        // A failure that ended the whole transaction (not just the savepoint): retry one by one.
        if (!this.db.inTransaction) throw err;
        outcomes.push(storeWriteError(err));
      }
    }
    // A failure here ends the whole transaction: `commitMany` then retries the writes one by one.
    this.store.indexRows(index);
  }

  private apply(write: EncodedWrite, deferIndex?: FtsRow[]): void {
    const { conversation, rows, state } = write;
    if (rows.some((chunk) => chunk.count > 0)) {
      this.store.upsertConversation({
        conversationId: conversation.conversationId,
        sessionId: conversation.sessionId,
        source: conversation.source,
        workspaceDir: conversation.workspaceDir,
        historyFile: conversation.historyFile,
        createdAtMs: conversation.createdAtMs,
      });
      // The transaction around this (applyOne's, or a whole group's) makes the write whole.
      for (const chunk of rows) this.store.appendRowsWithinTransaction(conversation.conversationId, chunk, deferIndex);
    }
    if (state) this.state.write(state);
  }
}
