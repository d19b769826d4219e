import type Database from 'better-sqlite3';
import type { WriteTurn } from '../store/write-turn.js';
import { SessionLocks } from './session-lock.js';

/**
 * Session locks for an engine whose store writes may move to a writer thread. While that thread
 * runs, every claim and release here waits for its turn (`WriteTurn`) instead of for SQLite's lock:
 * SQLite's busy handler would sleep on the event loop while the thread commits, stalling the very
 * reading the thread exists to overlap with. Same rows, same owner, same rules as `SessionLocks`.
 */
export class ThreadSessionLocks extends SessionLocks {
  /** Released by the session, not yet in the database: the writer held the turn at the time. */
  private readonly releasing = new Set<string>();

  constructor(
    db: Database.Database,
    private readonly turn: () => WriteTurn | undefined,
  ) {
    super(db);
  }

  /** `SessionLocks.acquire`'s wait loop, each attempt made in the main thread's turn. */
  protected override attemptClaim(sessionId: string): Promise<boolean> {
    return this.inTurn(() => {
      this.settle();
      return this.tryAcquire(sessionId);
    });
  }

  /**
   * Released now when the turn is free, else in the main thread's next turn (the next claim's, or
   * one taken for it once the writer's transaction is over): the session's commit is durable
   * either way. Until then the session counts as held here, so this engine never claims it twice.
   */
  override release(sessionId: string): void {
    const turn = this.turn();
    if (!turn || turn.tryTakeMain()) {
      try {
        super.release(sessionId);
      } finally {
        turn?.give();
      }
      return;
    }
    this.releasing.add(sessionId);
    void turn.runMain(() => this.settle());
  }

  override tryAcquire(sessionId: string): boolean {
    return !this.releasing.has(sessionId) && super.tryAcquire(sessionId);
  }

  /**
   * Releases what waits for a turn; the caller has the turn (or the writer is idle: the engine
   * closes). Nobody waits on these to report a failure: a lock left behind names this live
   * process, and once it exits the next claimant takes it over.
   */
  settle(): void {
    for (const sessionId of [...this.releasing]) {
      this.releasing.delete(sessionId);
      try {
        super.release(sessionId);
      } catch {
        // See above.
      }
    }
  }

  private async inTurn<T>(write: () => T): Promise<T> {
    const turn = this.turn();
    return turn ? turn.runMain(write, { urgent: true }) : write();
  }
}
