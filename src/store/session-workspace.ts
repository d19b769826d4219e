import type Database from 'better-sqlite3';

export const WORKSPACE_FOR_SESSION_SQL = `SELECT coalesce(
    (SELECT workspace_dir FROM conversations WHERE session_id = ? AND workspace_dir IS NOT NULL LIMIT 1),
    (SELECT workspace_dir FROM sessions WHERE session_id = ?)
  ) AS workspace`;

/**
 * A session's workspace (its project directory), for features that act per project: what the
 * session's own files said (kept on its conversation by the last delivery), else the `cwd` a hook
 * payload reported (kept in `sessions` by the hook worker). Undefined when neither is known.
 */
export function workspaceForSession(db: Database.Database, sessionId: string): string | undefined {
  const row = db.prepare<[string, string], { workspace: string | null }>(WORKSPACE_FOR_SESSION_SQL).get(sessionId, sessionId);
  return row?.workspace ?? undefined;
}
