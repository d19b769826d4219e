import { mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { hookStateDir } from '../store/hook-workspace.js';

/**
 * What a hook asks of the session's worker beyond "something changed" (the debounce slot's pending
 * mark): `turn` (Stop: deliver the finished turn soon, not after the debounce interval) and
 * `boundary` (PreCompact, SessionEnd: deliver everything and flush). Plain files next to the slot,
 * so the hook sets them without opening SQLite; several marks of one kind are one mark (coalesced).
 */
export type DeliveryMark = 'turn' | 'boundary';

export interface TakenMarks {
  turn: boolean;
  boundary: boolean;
}

export class DeliveryMarks {
  private readonly dir: string;
  private readonly base: string;

  constructor(stateDir: string, sessionId: string) {
    this.dir = hookStateDir(stateDir);
    this.base = path.join(this.dir, sessionId);
  }

  private file(mark: DeliveryMark): string {
    return `${this.base}.${mark}`;
  }

  set(mark: DeliveryMark, now = Date.now()): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    writeFileSync(this.file(mark), String(now), { mode: 0o600 });
  }

  has(mark: DeliveryMark): boolean {
    try {
      statSync(this.file(mark));
      return true;
    } catch {
      return false;
    }
  }

  any(): boolean {
    return this.has('turn') || this.has('boundary');
  }

  /**
   * Takes both marks. Each is renamed away before it counts as taken, so of two workers (an
   * outgoing and an incoming one) only one takes it; a hook that sets it again afterwards leaves a
   * new mark for the next run.
   */
  take(): TakenMarks {
    return { turn: this.takeOne('turn'), boundary: this.takeOne('boundary') };
  }

  private takeOne(mark: DeliveryMark): boolean {
    const file = this.file(mark);
    const taken = `${file}.${process.pid}.taken`;
    try {
      renameSync(file, taken);
    } catch {
      return false;
    }
    rmSync(taken, { force: true });
    return true;
  }
}
