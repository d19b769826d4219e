import type Database from 'better-sqlite3';
import type { SinkName } from '../config/settings.js';
import { claimantAlive, parseProcessStamp, processStamp } from '../core/process-liveness.js';

/** Longer than any one request can take, Retry-After waits included. */
const FLUSH_CLAIM_MAX_AGE_MS = 30 * 60 * 1000;

/** A claim is `<processStamp>:<ms>`; one written by an earlier build has a bare pid for the stamp. */
function flushClaimStale(claim: string, now: number): boolean {
  const m = /^([\d@]+):(\d+)$/.exec(claim);
  const stamp = m ? parseProcessStamp(m[1]!) : undefined;
  if (!m || !stamp) return true;
  if (now - Number(m[2]) > FLUSH_CLAIM_MAX_AGE_MS) return true;
  // The pid and its start time, as session locks and hook slots judge theirs: a reused pid is not the owner.
  return !claimantAlive(stamp);
}

/**
 * The gateway's flush bookkeeping: whether a conversation delivered without a flush (by the hook)
 * still owes one, and who is sending it. Only the gateway sink uses it.
 */
export class FlushClaimStore {
  private readonly stmts;

  constructor(db: Database.Database) {
    this.stmts = {
      get: db.prepare<[string, string], { pending: number; ends_turn: number; flush_claim: string | null }>(
        'SELECT pending, ends_turn, flush_claim FROM flush_state WHERE sink = ? AND conversation_id = ?',
      ),
      set: db.prepare<[string, string, number, number]>(
        'INSERT INTO flush_state (sink, conversation_id, pending, ends_turn) VALUES (?, ?, ?, ?) ' +
          'ON CONFLICT (sink, conversation_id) DO UPDATE SET pending = excluded.pending, ends_turn = excluded.ends_turn, flush_claim = NULL',
      ),
      // Compare-and-swap: succeeds for exactly one of any number of concurrent claimers.
      claim: db.prepare<[string, string, string, string, string | null]>(
        'UPDATE flush_state SET flush_claim = ? WHERE sink = ? AND conversation_id = ? AND pending = 1 ' +
          'AND (ends_turn = 1 OR ? = \'any\') AND flush_claim IS ?',
      ),
      release: db.prepare<[string, string, string]>('UPDATE flush_state SET flush_claim = NULL WHERE sink = ? AND conversation_id = ? AND flush_claim = ?'),
    };
  }

  /** Whether the conversation's deliveries since its last flush still owe the gateway one. */
  pending(sink: SinkName, conversationId: string): { endsTurn: boolean } | undefined {
    const row = this.stmts.get.get(sink, conversationId);
    return row && row.pending === 1 ? { endsTurn: row.ends_turn === 1 } : undefined;
  }

  /**
   * Takes the owed flush for this process, atomically: of concurrent runs exactly one gets it and
   * sends it. A claim whose owner died, or that is older than any request can take, is taken over.
   * Returns the claim to pass to `release` should the send fail.
   */
  claim(sink: SinkName, conversationId: string, requireEndsTurn: boolean, now = Date.now()): string | undefined {
    const row = this.stmts.get.get(sink, conversationId);
    if (!row || row.pending !== 1 || (requireEndsTurn && row.ends_turn !== 1)) return undefined;
    if (row.flush_claim !== null && !flushClaimStale(row.flush_claim, now)) return undefined;
    const claim = `${processStamp()}:${now}`;
    const info = this.stmts.claim.run(claim, sink, conversationId, requireEndsTurn ? 'turn' : 'any', row.flush_claim);
    return info.changes === 1 ? claim : undefined;
  }

  /** Gives an unsent flush back (the send failed); a claim already superseded is left alone. */
  release(sink: SinkName, conversationId: string, claim: string): void {
    this.stmts.release.run(sink, conversationId, claim);
  }

  record(sink: SinkName, conversationId: string, pending: boolean, endsTurn: boolean): void {
    this.stmts.set.run(sink, conversationId, pending ? 1 : 0, endsTurn ? 1 : 0);
  }
}
