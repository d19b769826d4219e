import type Database from 'better-sqlite3';
import type { WriteTurn } from '../store/write-turn.js';
import { SessionLocks } from './session-lock.js';

/**
 * How long released locks wait to be deleted together when no claim comes first. A bulk run
 * claims a new session every few milliseconds, and each claim deletes what was released before it
 * in its own transaction; this bounds the wait for anyone else when the run goes quiet.
 */
const RELEASE_BATCH_MS = 5;

/**
 * Session locks for an engine whose store writes may move to a writer thread. While that thread
 * runs, every claim and release here waits for its turn (`WriteTurn`) instead of for SQLite's lock:
 * SQLite's busy handler would sleep on the event loop while the thread commits, stalling the very
 * reading the thread exists to overlap with. Same rows, same owner, same rules as `SessionLocks`.
 *
 * Releases are batched while the thread runs: each was its own write transaction on the main
 * thread (and a turn taken from the writer), two per session with the claim. Now the next claim
 * deletes the released rows in its own transaction, or a flush does a few milliseconds later.
 */
export class ThreadSessionLocks extends SessionLocks {
  /** Released by the session, not yet deleted from the database. */
  private readonly releasing = new Set<string>();
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly claimWithReleases: Database.Transaction<(released: string[], sessionId: string) => boolean>;
  private readonly deleteReleased: Database.Transaction<(released: string[]) => void>;

  constructor(
    db: Database.Database,
    private readonly turn: () => WriteTurn | undefined,
  ) {
    super(db);
    // The claim nests (a savepoint) inside: one commit for the released rows and the new claim.
    this.claimWithReleases = db.transaction((released: string[], sessionId: string) => {
      this.deleteRows(released);
      return this.tryAcquire(sessionId);
    });
    this.deleteReleased = db.transaction((released: string[]) => this.deleteRows(released));
  }

  /** `SessionLocks.acquire`'s wait loop, each attempt made in the main thread's turn. */
  protected override attemptClaim(sessionId: string): Promise<boolean> {
    return this.inTurn(() => {
      const released = [...this.releasing];
      if (released.length === 0) return this.tryAcquire(sessionId);
      const acquired = this.claimWithReleases.immediate(released, sessionId);
      this.settled(released);
      return acquired;
    });
  }

  /**
   * Without a writer thread: released now. With one: deleted with the next claim or flush (the
   * session's commit is durable either way). Until then the session counts as held here, so this
   * engine never claims it twice.
   */
  override release(sessionId: string): void {
    const turn = this.turn();
    if (!turn) {
      super.release(sessionId);
      return;
    }
    if (!this.forget(sessionId)) return;
    this.releasing.add(sessionId);
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined;
      void turn.runMain(() => this.settle());
    }, RELEASE_BATCH_MS);
  }

  override tryAcquire(sessionId: string): boolean {
    return !this.releasing.has(sessionId) && super.tryAcquire(sessionId);
  }

  /**
   * Deletes what waits to be released; the caller has the turn (or the writer is idle: the engine
   * closes). Nobody waits on these to report a failure: a lock left behind names this live
   * process, and once it exits the next claimant takes it over.
   */
  settle(): void {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer);
      this.flushTimer = undefined;
    }
    const released = [...this.releasing];
    if (released.length === 0) return;
    try {
      this.deleteReleased.immediate(released);
      this.settled(released);
    } catch {
      // Kept in `releasing`: the next claim or flush tries again (see above).
    }
  }

  private settled(released: string[]): void {
    for (const sessionId of released) this.releasing.delete(sessionId);
  }

  private async inTurn<T>(write: () => T): Promise<T> {
    const turn = this.turn();
    return turn ? turn.runMain(write, { urgent: true }) : write();
  }
}
