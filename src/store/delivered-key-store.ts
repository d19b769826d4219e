import type Database from 'better-sqlite3';
import type { SinkName } from '../config/settings.js';
import type { Rekey } from './store-types.js';
import { withinTransaction } from './within-transaction.js';

/**
 * The message marks of a sink that keeps no messages itself (the gateway): the keys it acknowledged,
 * per conversation. The embedded store needs none: a stored message is its own mark.
 */
export class DeliveredKeyStore {
  private readonly stmts;
  private readonly inTransaction: (fn: () => void) => void;

  constructor(db: Database.Database) {
    this.inTransaction = withinTransaction(db);
    this.stmts = {
      keys: db.prepare<[string, string], string>('SELECT msg_key FROM delivered WHERE sink = ? AND conversation_id = ?').pluck(),
      record: db.prepare<[string, string, string]>('INSERT INTO delivered (sink, conversation_id, msg_key) VALUES (?, ?, ?) ON CONFLICT DO NOTHING'),
      counts: db.prepare<[string], { conversations: number; messages: number }>(
        'SELECT count(DISTINCT conversation_id) AS conversations, count(*) AS messages FROM delivered WHERE sink = ?',
      ),
      forget: db.prepare<[string, string, string]>('DELETE FROM delivered WHERE sink = ? AND conversation_id = ? AND msg_key = ?'),
      // Ignored where a mark is already under the new key: the old one is then a second mark of the
      // same message, and `rekey` takes it out.
      rekey: db.prepare<[string, string, string, string]>('UPDATE OR IGNORE delivered SET msg_key = ? WHERE sink = ? AND conversation_id = ? AND msg_key = ?'),
      holdsAny: db.prepare<[string, string], number>('SELECT 1 FROM delivered WHERE sink = ? AND conversation_id = ? LIMIT 1').pluck(),
    };
  }

  keysOf(sink: SinkName, conversationId: string): Set<string> {
    return new Set(this.stmts.keys.all(sink, conversationId));
  }

  /** Whether the sink acknowledged any message of the conversation. */
  holdsAny(sink: SinkName, conversationId: string): boolean {
    return this.stmts.holdsAny.get(sink, conversationId) !== undefined;
  }

  /** Conversations and messages the sink acknowledged. */
  counts(sink: SinkName): { conversations: number; messages: number } {
    return this.stmts.counts.get(sink) ?? { conversations: 0, messages: 0 };
  }

  /** Atomic; inside a caller's transaction, part of it (see withinTransaction). */
  record(sink: SinkName, conversationId: string, keys: readonly string[]): void {
    if (keys.length === 0) return;
    this.inTransaction(() => {
      for (const key of keys) this.stmts.record.run(sink, conversationId, key);
    });
  }

  /**
   * Moves marks to new keys (the same messages, keyed anew: see `Rekey`). Each move reads the mark it
   * moves in the transaction that moves it, so one already moved (or never there) is left alone.
   * Atomic; inside a caller's transaction, part of it, as `record` is.
   */
  rekey(sink: SinkName, conversationId: string, moves: readonly Rekey[]): void {
    if (moves.length === 0) return;
    this.inTransaction(() => {
      for (const { from, to } of moves) {
        this.stmts.rekey.run(to, sink, conversationId, from);
        this.stmts.forget.run(sink, conversationId, from);
      }
    });
  }

  forget(sink: SinkName, conversationId: string, keys: readonly string[]): void {
    if (keys.length === 0) return;
    this.inTransaction(() => {
      for (const key of keys) this.stmts.forget.run(sink, conversationId, key);
    });
  }
}
