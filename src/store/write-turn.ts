/**
 * Whose turn it is to write to the state file in this process: the engine's own connection (main
 * thread) or the writer thread's. SQLite would serialise the two anyway, but a connection that
 * finds the file locked sleeps in its busy handler, and on the main thread that sleep stops all
 * reading. Taking turns in shared memory instead, the main thread waits without blocking (and only
 * for a few short writes, the session locks), and the writer thread blocks only for those.
 */

const FREE = 0;
const WRITER = 1;
const MAIN = 2;

type WaitAsync = (
  view: Int32Array,
  index: number,
  value: number,
  timeoutMs?: number,
) => { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };

// Node 16+ has it; the ES2023 lib this project compiles against does not declare it yet.
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

/** Cell 0: whose turn it is. Cell 1: main-thread writes waiting for one. */
const TURN = 0;
const MAIN_WAITING = 1;

/** Bytes the turn needs in a SharedArrayBuffer. */
export const WRITE_TURN_BYTES = 2 * Int32Array.BYTES_PER_ELEMENT;

/**
 * How long the writer holds back its next transaction for a main-thread write that waits: that
 * write (a session lock) is what lets a new session start reading, and it takes a fraction of a
 * millisecond once the main thread gets to it, which may take a few. Measured: 0 ms (no yield)
 * was clearly slower than 1 to 3 ms; 6 ms was slower again.
 */
const YIELD_MS = 3;

export class WriteTurn {
  private readonly cell: Int32Array;

  constructor(buffer: SharedArrayBuffer) {
    this.cell = new Int32Array(buffer, 0, 2);
  }

  // ── main thread ──────────────────────────────────────────────────────────────────────────────

  /** Takes the turn if it is free, without waiting. */
  tryTakeMain(): boolean {
    return Atomics.compareExchange(this.cell, TURN, FREE, MAIN) === FREE;
  }

  /**
   * Runs a synchronous write on the main connection in the main thread's turn, waiting for the
   * writer's transaction to end without blocking the event loop. The turn is taken and given back
   * in the same synchronous step: held across an await, another waiter on this thread would spin.
   * An urgent write (one that holds up work) also makes the writer let it go first.
   */
  async runMain<T>(write: () => T, opts: { urgent?: boolean } = {}): Promise<T> {
    let waiting = false;
    try {
      for (;;) {
        if (this.tryTakeMain()) return this.writeAndGive(write);
        if (!waiting && opts.urgent) {
          waiting = true;
          Atomics.add(this.cell, MAIN_WAITING, 1);
        }
        // Bounded, so a wake-up that never comes costs a retry rather than a hang.
        const waited = waitAsync(this.cell, TURN, WRITER, 1000);
        if (waited.async) await waited.value;
      }
    } finally {
      if (waiting) {
        Atomics.sub(this.cell, MAIN_WAITING, 1);
        Atomics.notify(this.cell, MAIN_WAITING);
      }
    }
  }

  /**
   * As `runMain`, but blocking this thread until the writer's transaction ends: only where nothing
   * else is left to run on it (the last writes at close). Past `timeoutMs` the write runs anyway
   * and SQLite's busy handler decides: a writer thread that died in its turn gives it back only
   * when this thread hears of its exit, which a blocked thread never would.
   */
  runMainBlocking<T>(write: () => T, timeoutMs: number): T {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      if (this.tryTakeMain()) return this.writeAndGive(write);
      const left = deadline - performance.now();
      if (left <= 0) return write();
      Atomics.wait(this.cell, TURN, WRITER, Math.min(100, left));
    }
  }

  /** The write, in the turn this thread just took, which it gives back whatever happens. */
  private writeAndGive<T>(write: () => T): T {
    try {
      return write();
    } finally {
      this.give();
    }
  }

  // ── writer thread ────────────────────────────────────────────────────────────────────────────

  /**
   * Blocks until the main thread's short write (if any) is over, letting one that waits go first
   * (for at most YIELD_MS); then takes the turn.
   */
  takeWriter(): void {
    const yieldUntil = performance.now() + YIELD_MS;
    for (;;) {
      const waiting = Atomics.load(this.cell, MAIN_WAITING);
      const left = yieldUntil - performance.now();
      if (waiting > 0 && left > 0) {
        Atomics.wait(this.cell, MAIN_WAITING, waiting, left);
        continue;
      }
      const seen = Atomics.compareExchange(this.cell, TURN, FREE, WRITER);
      if (seen === FREE) return;
      Atomics.wait(this.cell, TURN, seen, 100);
    }
  }

  give(): void {
    Atomics.store(this.cell, TURN, FREE);
    Atomics.notify(this.cell, TURN);
  }

  /** A writer thread that died in its turn (its transaction rolled back with it) leaves it free. */
  reclaimFromWriter(): void {
    if (Atomics.compareExchange(this.cell, TURN, WRITER, FREE) === WRITER) Atomics.notify(this.cell, TURN);
  }
}

/**
 * A short write on the main connection that holds up work (a session lock, the gateway's marks):
 * in the main thread's turn, ahead of the writer's next transaction, while a writer thread runs
 * (`turn` defined); at once otherwise.
 */
export async function writeInTurn<T>(turn: WriteTurn | undefined, write: () => T): Promise<T> {
  return turn ? turn.runMain(write, { urgent: true }) : write();
}
