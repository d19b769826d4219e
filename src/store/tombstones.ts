import type Database from 'better-sqlite3';

export interface Tombstone {
  conversationId: string;
  sessionId: string;
  workspaceDir?: string;
  forgottenAtMs: number;
}

interface TombstoneRow {
  conversation_id: string;
  session_id: string;
  workspace_dir: string | null;
  forgotten_at_ms: number;
}

function toTombstone(row: TombstoneRow): Tombstone {
  return {
    conversationId: row.conversation_id,
    sessionId: row.session_id,
    forgottenAtMs: row.forgotten_at_ms,
    ...(row.workspace_dir === null ? {} : { workspaceDir: row.workspace_dir }),
  };
}

/**
 * Conversations the user forgot. A tombstone outlives the data: import, sync and the hook check it
 * before reading a session, for either sink, however the session's files change later.
 */
export class TombstoneStore {
  private readonly stmts;

  constructor(db: Database.Database) {
    this.stmts = {
      has: db.prepare<[string], number>('SELECT 1 FROM tombstones WHERE conversation_id = ?').pluck(),
      get: db.prepare<[string], TombstoneRow>('SELECT * FROM tombstones WHERE conversation_id = ?'),
      put: db.prepare<[string, string, string | null, number]>(
        `INSERT INTO tombstones (conversation_id, session_id, workspace_dir, forgotten_at_ms) VALUES (?, ?, ?, ?)
         ON CONFLICT (conversation_id) DO UPDATE SET workspace_dir = coalesce(excluded.workspace_dir, workspace_dir)`,
      ),
      lift: db.prepare<[string]>('DELETE FROM tombstones WHERE conversation_id = ?'),
      list: db.prepare<[], TombstoneRow>('SELECT * FROM tombstones ORDER BY forgotten_at_ms, conversation_id'),
      count: db.prepare<[], number>('SELECT count(*) FROM tombstones').pluck(),
      ids: db.prepare<[], string>('SELECT conversation_id FROM tombstones').pluck(),
    };
  }

  /** Every forgotten conversation's id, in one query (a run over many sessions reads them at its start). */
  forgottenIds(): Set<string> {
    return new Set(this.stmts.ids.all());
  }

  isForgotten(conversationId: string): boolean {
    return this.stmts.has.get(conversationId) !== undefined;
  }

  /** Idempotent: forgetting again keeps the first date. */
  put(t: { conversationId: string; sessionId: string; workspaceDir?: string }, nowMs = Date.now()): void {
    this.stmts.put.run(t.conversationId, t.sessionId, t.workspaceDir ?? null, nowMs);
  }

  /** Returns whether there was a tombstone to lift. */
  lift(conversationId: string): boolean {
    return this.stmts.lift.run(conversationId).changes > 0;
  }

  get(conversationId: string): Tombstone | undefined {
    const row = this.stmts.get.get(conversationId);
    return row ? toTombstone(row) : undefined;
  }

  list(): Tombstone[] {
    return this.stmts.list.all().map(toTombstone);
  }

  count(): number {
    return this.stmts.count.get() ?? 0;
  }
}
