import type Database from 'better-sqlite3';

/** `kind_skipped`: a side session (peek, channel, cron) or one the host hides, left out by default (`rule` names which). */
export type ScopeStatus = 'excluded' | 'workspace_unknown' | 'kind_skipped';

export interface ScopeRecord {
  sessionId: string;
  status: ScopeStatus;
  sessionDir?: string;
  createdAtMs?: number;
  workspaceDir?: string;
  /** Why: the exclusion (`EVERME_EXCLUDE <pattern>` or the ignore file's path), the kind skipped, or why no workspace is known. */
  rule?: string;
  recordedAtMs: number;
}

interface ScopeRow {
  session_id: string;
  session_dir: string | null;
  created_at_ms: number | null;
  workspace_dir: string | null;
  status: string;
  rule: string | null;
  recorded_at_ms: number;
}

/**
 * Sessions the latest read left out (an excluded workspace) or could not place (no workspace known),
 * for the report. A session whose workspace is known and included has no row: reading it clears one.
 */
export class SessionScopeStore {
  private readonly stmts;

  constructor(db: Database.Database) {
    this.stmts = {
      get: db.prepare<[string], { status: string; workspace_dir: string | null; rule: string | null }>(
        'SELECT status, workspace_dir, rule FROM session_scope WHERE session_id = ?',
      ),
      put: db.prepare<[string, string | null, number | null, string | null, string, string | null, number]>(
        `INSERT INTO session_scope (session_id, session_dir, created_at_ms, workspace_dir, status, rule, recorded_at_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (session_id) DO UPDATE SET session_dir = excluded.session_dir, created_at_ms = excluded.created_at_ms,
           workspace_dir = excluded.workspace_dir, status = excluded.status, rule = excluded.rule, recorded_at_ms = excluded.recorded_at_ms`,
      ),
      clear: db.prepare<[string]>('DELETE FROM session_scope WHERE session_id = ?'),
      list: db.prepare<[], ScopeRow>('SELECT * FROM session_scope ORDER BY status, created_at_ms IS NULL, created_at_ms, session_id'),
    };
  }

  /** Whether `record(r)` would change anything: a no-op sync over thousands of sessions writes nothing. */
  differs(r: Omit<ScopeRecord, 'recordedAtMs'>): boolean {
    const current = this.stmts.get.get(r.sessionId);
    return !(current && current.status === r.status && current.workspace_dir === (r.workspaceDir ?? null) && current.rule === (r.rule ?? null));
  }

  /** Whether the session has a record (which `clear` would remove). */
  has(sessionId: string): boolean {
    return this.stmts.get.get(sessionId) !== undefined;
  }

  record(r: Omit<ScopeRecord, 'recordedAtMs'>): void {
    if (!this.differs(r)) return;
    this.stmts.put.run(r.sessionId, r.sessionDir ?? null, r.createdAtMs ?? null, r.workspaceDir ?? null, r.status, r.rule ?? null, Date.now());
  }

  clear(sessionId: string): void {
    if (this.stmts.get.get(sessionId)) this.stmts.clear.run(sessionId);
  }

  list(): ScopeRecord[] {
    return this.stmts.list.all().flatMap((row): ScopeRecord[] => {
      if (row.status !== 'excluded' && row.status !== 'workspace_unknown' && row.status !== 'kind_skipped') return [];
      return [
        {
          sessionId: row.session_id,
          status: row.status,
          recordedAtMs: row.recorded_at_ms,
          ...(row.session_dir === null ? {} : { sessionDir: row.session_dir }),
          ...(row.created_at_ms === null ? {} : { createdAtMs: row.created_at_ms }),
          ...(row.workspace_dir === null ? {} : { workspaceDir: row.workspace_dir }),
          ...(row.rule === null ? {} : { rule: row.rule }),
        },
      ];
    });
  }
}
