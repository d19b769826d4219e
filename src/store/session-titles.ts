import type Database from 'better-sqlite3';

export interface SessionTitle {
  title?: string;
  kind?: string;
  parentSessionId?: string;
}

/** How many ids go into one `IN (…)`: well under SQLite's bound-parameter limit. */
const IDS_PER_QUERY = 500;

/**
 * Titles (and kind and parent) of these sessions, for whatever lists conversations: one query per
 * 500 ids on a connection the caller owns (read-only ones included). No zod: the SessionStart hook
 * runs it on the agent's path.
 */
export function sessionTitles(db: Database.Database, sessionIds: Iterable<string>): Map<string, SessionTitle> {
  const ids = [...new Set(sessionIds)];
  const out = new Map<string, SessionTitle>();
  for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
    const chunk = ids.slice(i, i + IDS_PER_QUERY);
    const rows = db
      .prepare<string[], { session_id: string; title: string | null; kind: string | null; parent_session_id: string | null }>(
        `SELECT session_id, title, kind, parent_session_id FROM session_meta WHERE session_id IN (${chunk.map(() => '?').join(', ')})`,
      )
      .all(...chunk);
    for (const row of rows) {
      const t: SessionTitle = {};
      if (row.title !== null) t.title = row.title;
      if (row.kind !== null) t.kind = row.kind;
      if (row.parent_session_id !== null) t.parentSessionId = row.parent_session_id;
      out.set(row.session_id, t);
    }
  }
  return out;
}
