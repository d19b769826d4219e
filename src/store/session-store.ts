import type Database from 'better-sqlite3';
import { withinTransaction } from './within-transaction.js';

/** A session's conversations that have no workspace get the one recorded for it (by session id: see migration 8). */
export const FILL_CONVERSATION_WORKSPACE_SQL = 'UPDATE conversations SET workspace_dir = ? WHERE session_id = ? AND workspace_dir IS NULL';

/** What is remembered per session outside its files: where its directory is, and the workspace a hook saw. */
export class SessionStore {
  private readonly stmts;
  private readonly inTransaction: (fn: () => void) => void;

  constructor(db: Database.Database) {
    this.inTransaction = withinTransaction(db);
    this.stmts = {
      rememberDir: db.prepare<[string, string]>(
        `INSERT INTO sessions (session_id, session_dir) VALUES (?, ?)
         ON CONFLICT (session_id) DO UPDATE SET session_dir = excluded.session_dir`,
      ),
      dirFor: db.prepare<[string], string | null>('SELECT session_dir FROM sessions WHERE session_id = ?').pluck(),
      rememberWorkspace: db.prepare<[string, string]>(
        `INSERT INTO sessions (session_id, workspace_dir) VALUES (?, ?)
         ON CONFLICT (session_id) DO UPDATE SET workspace_dir = excluded.workspace_dir`,
      ),
      workspaceFor: db.prepare<[string], string | null>('SELECT workspace_dir FROM sessions WHERE session_id = ?').pluck(),
      fillConversationWorkspace: db.prepare<[string, string]>(FILL_CONVERSATION_WORKSPACE_SQL),
    };
  }

  rememberDir(sessionId: string, dir: string): void {
    this.stmts.rememberDir.run(sessionId, dir);
  }

  dirFor(sessionId: string): string | undefined {
    return this.stmts.dirFor.get(sessionId) ?? undefined;
  }

  /**
   * The workspace a hook payload reported (`cwd`). It stands in wherever the session's files say
   * nothing (messages.jsonl sessions never do): the next delivery records it on the conversation,
   * and a conversation already stored without one (imported before any hook ran) gets it now, so
   * recall and per-project features know the project without waiting for new messages.
   */
  rememberWorkspace(sessionId: string, cwd: string): void {
    this.inTransaction(() => {
      this.stmts.rememberWorkspace.run(sessionId, cwd);
      this.stmts.fillConversationWorkspace.run(cwd, sessionId);
    });
  }

  workspaceFor(sessionId: string): string | undefined {
    return this.stmts.workspaceFor.get(sessionId) ?? undefined;
  }
}
