import type Database from 'better-sqlite3';
import type { WriteTurn } from '../../store/write-turn.js';

/** How long close waits for the writer thread's turn: as long as that thread is given to close. */
const CLOSE_TURN_WAIT_MS = 10_000;

interface QueuedMark {
  write: () => void;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * When the gateway's marks (the keys it acknowledged, its flush bookkeeping, each session's state)
 * reach the state file.
 *
 * With no writer thread (the gateway alone, the hook) a mark is committed as soon as the gateway
 * acknowledged its request. While the embedded store's writer thread runs, the file is that
 * thread's for one group commit at a time, tens of milliseconds each, and the main thread writes
 * only in its turn (WriteTurn). When every mark waited for that turn before the session's next
 * request went out, the sessions in flight spent their time waiting rather than sending. On the 1x
 * import to both sinks, 6,481 mark writes waited 14.6 s in all, and the main thread was idle for
 * 4.4 s of a 17 s run.
 *
 * So while a writer thread runs, the marks acknowledged meanwhile queue up here and commit together
 * in the main thread's next turn, in one transaction. A session sends its next request without
 * waiting for them. Its end is durable (`Handoff.durable`) once they are committed, as the store's
 * rows are, and its session lock is held until then.
 */
export class GatewayMarks {
  private queued: QueuedMark[] = [];
  /** A commit of the queue is waiting for the main thread's turn. */
  private waiting = false;
  private readonly commitAll: Database.Transaction<(writes: ReadonlyArray<() => void>) => void>;

  constructor(
    db: Database.Database,
    private readonly turn: () => WriteTurn | undefined,
  ) {
    this.commitAll = db.transaction((writes: ReadonlyArray<() => void>) => {
      for (const write of writes) write();
    });
  }

  /**
   * With no writer thread, commits `write` at once and throws if it cannot: the session stops before
   * its next request, as it always did. Beside a writer thread, queues it: the promise resolves
   * once it is committed and rejects if it is not.
   */
  record(write: () => void): Promise<void> {
    const turn = this.turn();
    if (!turn) {
      this.commitAll([write]);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      this.queued.push({ write, resolve, reject });
      if (this.waiting) return;
      this.waiting = true;
      // commitQueued never throws (a failure rejects the marks it held), so neither does this.
      void turn.runMain(() => this.commitQueued(), { urgent: true });
    });
  }

  /**
   * Commits what is queued now, blocking until the writer thread's transaction ends: at close,
   * where marks the gateway acknowledged must not be left behind (a session that failed after an
   * acknowledged request leaves its marks queued with no one waiting for them).
   */
  commitNow(): void {
    if (this.queued.length === 0) return;
    const turn = this.turn();
    if (turn) turn.runMainBlocking(() => this.commitQueued(), CLOSE_TURN_WAIT_MS);
    else this.commitQueued();
  }

  private commitQueued(): void {
    const batch = this.queued;
    this.queued = [];
    this.waiting = false;
    if (batch.length === 0) return;
    try {
      this.commitAll(batch.map((mark) => mark.write));
    } catch (err) {
      for (const mark of batch) mark.reject(err);
      return;
    }
    for (const mark of batch) mark.resolve();
  }
}
