import type Database from 'better-sqlite3';
import { writeInTurn, type WriteTurn } from '../store/write-turn.js';
import { SessionLocks } from './session-lock.js';

/**
 * How long released locks wait to be deleted together when no claim comes first. A bulk run
 * claims a new session every few milliseconds, and each claim deletes what was released before it
 * in its own transaction; this bounds the wait for anyone else when the run goes quiet.
 */
const RELEASE_BATCH_MS = 5;

/**
 * Sessions claimed ahead, in one transaction with the claim a session waits for. Every claim takes
 * the main thread's turn, which waits while the writer thread commits; profiled on the 1x import,
 * readers waiting for a claim left both threads idle about 40% of the run. A session claimed ahead
 * is held for the few hundred milliseconds until it is read: another process wanting it waits (as
 * it would for the session itself), and what the run never reaches is released when it closes.
 * 64 ran out while the writer thread held its turn for a group of a few MiB (a refill waits for
 * it): on the 1x import, five interleaved runs each, 256 took ~4.3–4.5 s where 64 took ~5.2 s;
 * 1024 was no faster than 256.
 */
const CLAIM_AHEAD = 256;

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
  private readonly claimWithReleases: Database.Transaction<(released: string[], sessionId: string | undefined, ahead: string[]) => boolean>;
  private readonly deleteReleased: Database.Transaction<(released: string[]) => void>;
  private readonly claimAheadTx: Database.Transaction<(sessionIds: string[]) => void>;
  /** The run's sessions in claiming order (see `expect`) and how far claims ahead have got. */
  private upcoming: readonly string[] = [];
  private nextUpcoming = 0;
  /** Rows this engine claimed ahead that no session has taken yet. */
  private readonly claimedAhead = new Set<string>();

  constructor(
    db: Database.Database,
    private readonly turn: () => WriteTurn | undefined,
  ) {
    super(db);
    // The claim nests (a savepoint) inside: one commit for the released rows and the new claim.
    this.claimWithReleases = db.transaction((released: string[], sessionId: string | undefined, ahead: string[]) => {
      this.deleteRows(released);
      const acquired = sessionId !== undefined && this.tryAcquire(sessionId);
      this.claimAheadTx(ahead);
      return acquired;
    });
    this.deleteReleased = db.transaction((released: string[]) => this.deleteRows(released));
    this.claimAheadTx = db.transaction((sessionIds: string[]) => {
      for (const sessionId of sessionIds) if (this.claimRow(sessionId)) this.claimedAhead.add(sessionId);
    });
  }

  override expect(sessionIds: readonly string[]): void {
    this.upcoming = sessionIds;
    this.nextUpcoming = 0;
  }

  /** `SessionLocks.acquire`'s wait loop, each attempt made in the main thread's turn. */
  protected override attemptClaim(sessionId: string): Promise<boolean> {
    if (this.claimedAhead.delete(sessionId)) {
      this.markHeld(sessionId);
      // Claimed again before the last claims ahead run out: no reader waits for the writer's commit.
      if (this.claimedAhead.size <= CLAIM_AHEAD / 2) this.refillAhead();
      return Promise.resolve(true);
    }
    return this.inTurn(() => {
      const released = [...this.releasing];
      const ahead = this.turn() ? this.aheadOf(sessionId) : [];
      const acquired =
        released.length === 0 && ahead.length === 0 ? this.tryAcquire(sessionId) : this.claimWithReleases.immediate(released, sessionId, ahead);
      this.settled(released);
      return acquired;
    });
  }

  private refilling = false;

  private refillAhead(): void {
    if (this.refilling || this.nextUpcoming >= this.upcoming.length) return;
    this.refilling = true;
    void this.inTurn(() => {
      const released = [...this.releasing];
      try {
        this.claimWithReleases.immediate(released, undefined, this.aheadOf(undefined));
        this.settled(released);
      } catch {
        // Nothing claimed ahead: each session then claims for itself (and retries the releases).
      }
    }).finally(() => {
      this.refilling = false;
    });
  }

  /** The next sessions of the run not yet claimed or held by this engine, up to CLAIM_AHEAD. */
  private aheadOf(sessionId: string | undefined): string[] {
    const ahead: string[] = [];
    while (this.nextUpcoming < this.upcoming.length && ahead.length < CLAIM_AHEAD) {
      const next = this.upcoming[this.nextUpcoming++]!;
      if (next === sessionId || this.isHeld(next) || this.claimedAhead.has(next) || this.releasing.has(next)) continue;
      ahead.push(next);
    }
    return ahead;
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

  /**
   * The engine closes: releases everything, the rows claimed ahead for sessions the run never
   * reached (it was stopped, interrupted, or they needed no reading) included.
   */
  close(): void {
    for (const sessionId of this.claimedAhead) this.releasing.add(sessionId);
    this.claimedAhead.clear();
    this.upcoming = [];
    this.settle();
  }

  private settled(released: string[]): void {
    for (const sessionId of released) this.releasing.delete(sessionId);
  }

  private inTurn<T>(write: () => T): Promise<T> {
    return writeInTurn(this.turn(), write);
  }
}
