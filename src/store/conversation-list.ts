import type Database from 'better-sqlite3';

/**
 * Listing conversations of the embedded store, by project. Kept apart from the message store (and
 * free of zod) because the SessionStart hook runs it on the agent's path, where every module loaded
 * is startup time.
 */

export interface ConversationSummary {
  conversationId: string;
  sessionId: string;
  source: string;
  workspaceDir?: string;
  historyFile?: string;
  createdAtMs?: number;
  updatedAtMs?: number;
  messageCount: number;
  firstUserText?: string;
  lastAssistantText?: string;
}

export interface ProjectParams {
  project: string | null;
  projectSlash: string | null;
  projectBackslash: string | null;
}

/** `project` matches itself and anything below it, never a sibling that merely shares a prefix. */
export function projectParams(project: string | undefined): ProjectParams {
  const trimmed = project?.trim();
  if (!trimmed) return { project: null, projectSlash: null, projectBackslash: null };
  const base = trimmed.length > 1 ? trimmed.replace(/[\\/]+$/, '') || trimmed[0]! : trimmed;
  const isRoot = base.endsWith('/') || base.endsWith('\\');
  return {
    project: base,
    projectSlash: isRoot ? base : `${base}/`,
    projectBackslash: isRoot ? base : `${base}\\`,
  };
}

/**
 * The same rule as `PROJECT_FILTER`, for a workspace already in hand (forget and export filter in
 * code): `dir` itself or anything below it, never a sibling that merely shares a prefix.
 */
export function inProject(workspace: string | undefined, dir: string): boolean {
  const p = projectParams(dir);
  if (workspace === undefined || p.project === null) return false;
  return workspace === p.project || workspace.startsWith(p.projectSlash!) || workspace.startsWith(p.projectBackslash!);
}

/** A condition on `conversations c` for the named parameters of `ProjectParams`. */
export const PROJECT_FILTER = `(@project IS NULL OR c.workspace_dir = @project
  OR substr(c.workspace_dir, 1, length(@projectSlash)) = @projectSlash
  OR substr(c.workspace_dir, 1, length(@projectBackslash)) = @projectBackslash)`;

export interface ConversationRow {
  conversation_id: string;
  session_id: string;
  source: string;
  workspace_dir: string | null;
  history_file: string | null;
  created_at_ms: number | null;
  updated_at_ms: number | null;
  message_count: number;
  first_user_text: string | null;
  last_assistant_text: string | null;
}

/** Conversations with messages in the project (all when `@project` is null), most recently active first. */
export const RECENT_CONVERSATIONS_SQL = `SELECT * FROM conversations c
  WHERE c.message_count > 0 AND ${PROJECT_FILTER}
  ORDER BY c.updated_at_ms IS NULL, c.updated_at_ms DESC, c.conversation_id
  LIMIT @limit`;

export function toConversationSummary(row: ConversationRow): ConversationSummary {
  const summary: ConversationSummary = {
    conversationId: row.conversation_id,
    sessionId: row.session_id,
    source: row.source,
    messageCount: row.message_count,
  };
  if (row.workspace_dir !== null) summary.workspaceDir = row.workspace_dir;
  if (row.history_file !== null) summary.historyFile = row.history_file;
  if (row.created_at_ms !== null) summary.createdAtMs = row.created_at_ms;
  if (row.updated_at_ms !== null) summary.updatedAtMs = row.updated_at_ms;
  if (row.first_user_text !== null) summary.firstUserText = row.first_user_text;
  if (row.last_assistant_text !== null) summary.lastAssistantText = row.last_assistant_text;
  return summary;
}

/** One query on a connection the caller owns (the SessionStart hook's read-only one). */
export function listRecentConversations(db: Database.Database, opts: { project?: string; limit: number }): ConversationSummary[] {
  const rows = db.prepare<ProjectParams & { limit: number }, ConversationRow>(RECENT_CONVERSATIONS_SQL).all({ ...projectParams(opts.project), limit: opts.limit });
  return rows.map(toConversationSummary);
}
