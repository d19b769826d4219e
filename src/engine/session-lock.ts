import { randomUUID } from 'node:crypto';
import type Database from 'better-sqlite3';
import { EvermeError } from '../core/errors.js';
import { claimantAlive, parseProcessStamp, processStamp, type ProcessStamp } from '../core/process-liveness.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A lock row's owner: its pid, with the start time its owner string leads with (`pid@start:…`, see
 * `processStamp`), so a pid reused by another process is not taken for the owner. No column holds
 * it: the owner string already names the process, and older rows (`pid:…`) keep the pid check alone.
 */
function ownerOf(row: { owner: string; pid: number }): ProcessStamp {
  const stamp = parseProcessStamp(row.owner.slice(0, row.owner.indexOf(':')));
  return stamp?.pid === row.pid ? stamp : { pid: row.pid };
}

/**
 * A per-session lock held in the shared SQLite file, so an import and a hook worker never work on
 * one session at once. SQLite serialises the claim (BEGIN IMMEDIATE); a holder that died (kill -9)
 * is recognised by its pid and start time (`claimantAlive`) and its claim taken over. The lock is
 * not re-entrant: two directories carrying one session id (a restored copy) are worked on one after
 * the other even in one run, and each instance is its own owner, so two engines in one process
 * exclude each other too.
 */
export class SessionLocks {
  private readonly claim: (sessionId: string) => boolean;
  private readonly releaseStmt: Database.Statement;
  private readonly held = new Set<string>();

  constructor(db: Database.Database, private readonly owner = `${processStamp()}:${randomUUID()}`) {
    const select = db.prepare('SELECT owner, pid FROM session_locks WHERE session_id = ?');
    const upsert = db.prepare(
      'INSERT INTO session_locks (session_id, owner, pid, acquired_at_ms) VALUES (?, ?, ?, ?) ' +
        'ON CONFLICT(session_id) DO UPDATE SET owner = excluded.owner, pid = excluded.pid, acquired_at_ms = excluded.acquired_at_ms',
    );
    this.releaseStmt = db.prepare('DELETE FROM session_locks WHERE session_id = ? AND owner = ?');
    const claim = db.transaction((sessionId: string): boolean => {
      const row = select.get(sessionId) as { owner: string; pid: number } | undefined;
      if (row && row.owner !== this.owner && claimantAlive(ownerOf(row))) return false;
      upsert.run(sessionId, this.owner, process.pid, Date.now());
      return true;
    });
    this.claim = (sessionId) => claim.immediate(sessionId);
  }

  tryAcquire(sessionId: string): boolean {
    if (this.held.has(sessionId) || !this.claim(sessionId)) return false;
    this.held.add(sessionId);
    return true;
  }

  /** The run's sessions, in the order it will claim them: a subclass may claim some ahead. */
  expect(sessionIds: readonly string[]): void {
    void sessionIds;
  }

  /** Claims the row for this owner without counting the session as held (a claim made ahead). */
  protected claimRow(sessionId: string): boolean {
    return this.claim(sessionId);
  }

  protected isHeld(sessionId: string): boolean {
    return this.held.has(sessionId);
  }

  /** Counts a session whose row this owner claimed ahead as held. */
  protected markHeld(sessionId: string): void {
    this.held.add(sessionId);
  }

  /** One claim attempt of `acquire`'s wait loop; a subclass may make it wait for its turn to write. */
  protected attemptClaim(sessionId: string): boolean | Promise<boolean> {
    return this.tryAcquire(sessionId);
  }

  /** Waits for another process to finish with the session, up to `timeoutMs`. */
  async acquire(sessionId: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await this.attemptClaim(sessionId))) {
      if (signal?.aborted) throw new EvermeError('cancelled', 'Interrupted while waiting for a session lock');
      if (Date.now() >= deadline) {
        throw new EvermeError('conflict', `Session ${sessionId} is being processed by another everme process`, {
          code: 'session_locked',
          hint: 'Wait for the other import, sync or hook worker to finish, then run again.',
        });
      }
      await sleep(50);
    }
  }

  release(sessionId: string): void {
    if (!this.held.delete(sessionId)) return;
    this.releaseStmt.run(sessionId, this.owner);
  }

  /**
   * Deletes the rows of sessions released earlier, without touching what this engine holds: for a
   * subclass that releases in batches, inside a transaction of its own (see ThreadSessionLocks).
   */
  protected deleteRows(sessionIds: Iterable<string>): void {
    for (const sessionId of sessionIds) this.releaseStmt.run(sessionId, this.owner);
  }

  /** Forgets a session as held here once its row is gone (or about to go in the same commit). */
  protected forget(sessionId: string): boolean {
    return this.held.delete(sessionId);
  }
}
