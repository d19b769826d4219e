import type Database from 'better-sqlite3';

/**
 * Messages per UTC day, kept next to the messages (migration 10) so the viewer's activity chart
 * reads a few hundred rows instead of every message: counting them by day scanned the whole
 * messages table, ~2 s warm on the 10x bench store (828k messages). Every write path keeps it
 * exact: an append adds its batch's days (one row per day, not per message), a removal takes away
 * what it removed. A test checks it against a count of the messages themselves.
 */
export const DAY_MS = 86_400_000;

export function dayOf(timestampMs: number): number {
  return Math.floor(timestampMs / DAY_MS);
}

export class MessageDays {
  private readonly stmts;

  constructor(db: Database.Database) {
    this.stmts = {
      add: db.prepare<[number, number]>(
        'INSERT INTO message_days (day, messages) VALUES (?, ?) ON CONFLICT (day) DO UPDATE SET messages = messages + excluded.messages',
      ),
      ofConversation: db.prepare<[string], { day: number; n: number }>(
        `SELECT timestamp / ${DAY_MS} AS day, count(*) AS n FROM messages WHERE conversation_id = ? GROUP BY day`,
      ),
      range: db.prepare<[number, number], { day: number; messages: number }>('SELECT day, messages FROM message_days WHERE day >= ? AND day <= ?'),
    };
  }

  /** Adds (or with negative counts, takes away) messages per day. */
  add(counts: ReadonlyMap<number, number>): void {
    for (const [day, n] of counts) if (n !== 0) this.stmts.add.run(day, n);
  }

  /** Takes away a conversation's messages: call inside the transaction that deletes them, before it does. */
  removeConversation(conversationId: string): void {
    for (const { day, n } of this.stmts.ofConversation.all(conversationId)) this.stmts.add.run(day, -n);
  }

  /** Day number (days since the epoch, UTC) to messages, for days in [firstDay, lastDay]. */
  range(firstDay: number, lastDay: number): Map<number, number> {
    return new Map(this.stmts.range.all(firstDay, lastDay).map((r) => [r.day, r.messages]));
  }
}
