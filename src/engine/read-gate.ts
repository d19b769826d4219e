/**
 * How many sessions are read at once. Unlike a plain concurrency limit, a session leaves the gate
 * when its reading is done, not when it is committed: waiting for its commit (which the writer
 * thread groups with others) must not keep the next session from being read.
 */
export class ReadGate {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly slots: number) {}

  /** Resolves with a `leave` function once a slot is free; calling `leave` more than once is harmless. */
  async enter(): Promise<() => void> {
    if (this.active < this.slots) this.active++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter, so `active` stays as it is.
      if (next) next();
      else this.active--;
    };
  }
}
