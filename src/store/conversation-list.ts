import type Database from 'better-sqlite3';
import { maskedWorkspace } from './masked-workspace.js';

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
  /** What MiniMax Code's session index calls the session (see store/session-meta.ts). */
  title?: string;
  /** The session's kind in the index (`conversation`, `task`, …), when it said. */
  kind?: string;
  /** A branch or task session's parent session. */
  parentSessionId?: string;
  /** The ids (row ids) of its first and last stored messages: where `mem_timeline` can open it. */
  firstMessageId?: number;
  lastMessageId?: number;
}

export interface ProjectParams {
  project: string | null;
  projectSlash: string | null;
  projectBackslash: string | null;
  /** Just past every string that starts with `projectSlash` (see `prefixEnd`). */
  projectSlashEnd: string | null;
  projectBackslashEnd: string | null;
}

/**
 * The least string greater than every string starting with `prefix`, whose last character is a
 * path separator (ASCII): that character plus one. Under SQLite's BINARY collation (bytes compared
 * in order) `w >= prefix AND w < prefixEnd(prefix)` holds exactly when `w` starts with `prefix`,
 * and unlike a `substr` comparison it can use an index.
 */
function prefixEnd(prefix: string): string {
  return `${prefix.slice(0, -1)}${String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)}`;
}

/**
 * `project` matches itself and anything below it, never a sibling that merely shares a prefix. It
 * is masked first, as every recorded workspace is (`maskedWorkspace`): a directory
 * named after a token is stored masked, and asked for as the user or the host spells it.
 */
export function projectParams(project: string | undefined): ProjectParams {
  const trimmed = project === undefined ? undefined : maskedWorkspace(project.trim());
  if (!trimmed) return { project: null, projectSlash: null, projectBackslash: null, projectSlashEnd: null, projectBackslashEnd: null };
  const base = trimmed.length > 1 ? trimmed.replace(/[\\/]+$/, '') || trimmed[0]! : trimmed;
  const isRoot = base.endsWith('/') || base.endsWith('\\');
  const projectSlash = isRoot ? base : `${base}/`;
  const projectBackslash = isRoot ? base : `${base}\\`;
  return { project: base, projectSlash, projectBackslash, projectSlashEnd: prefixEnd(projectSlash), projectBackslashEnd: prefixEnd(projectBackslash) };
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

/**
 * `conversations c` in the project named by `ProjectParams` (not null): three ranges of
 * `conversations_by_workspace`, so listing a project's conversations reads only its own rows.
 */
const IN_PROJECT = `(c.workspace_dir = @project
  OR (c.workspace_dir >= @projectSlash AND c.workspace_dir < @projectSlashEnd)
  OR (c.workspace_dir >= @projectBackslash AND c.workspace_dir < @projectBackslashEnd))`;

/** A condition on `conversations c` for the named parameters of `ProjectParams`; all of them when `@project` is null. */
export const PROJECT_FILTER = `(@project IS NULL OR ${IN_PROJECT})`;

/** A `conversations` row as SQLite returns it. */
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
  title: string | null;
  kind: string | null;
  parent_session_id: string | null;
}

/**
 * A conversation with what the session index says of its session (a primary-key lookup per row),
 * plus any `extraColumns` a reader orders or pages by.
 */
export function conversationWithMeta(extraColumns?: string): string {
  return `SELECT c.*, m.title AS title, m.kind AS kind, m.parent_session_id AS parent_session_id${extraColumns === undefined ? '' : `, ${extraColumns}`}
  FROM conversations c LEFT JOIN session_meta m ON m.session_id = c.session_id`;
}

export const CONVERSATION_WITH_META = conversationWithMeta();

const RECENT_ORDER = 'ORDER BY c.updated_at_ms IS NULL, c.updated_at_ms DESC, c.conversation_id LIMIT @limit';

/** Conversations with messages in the project (all when `@project` is null), most recently active first. */
const RECENT_CONVERSATIONS_SQL = `${CONVERSATION_WITH_META} WHERE c.message_count > 0 AND ${PROJECT_FILTER} ${RECENT_ORDER}`;

/**
 * For a project that is named, in two steps. First every conversation of the project as its row id
 * and last update, from the index ranges of `conversations_by_workspace` alone (without the
 * `@project IS NULL` alternative SQLite can use them; the index holds both columns, so no row is
 * read). Then, of the newest `limit` and any tied with the last of them, the rows themselves in
 * RECENT_ORDER, whose tie-break by conversation id only the rows hold. Read in one query, every
 * row of the project went through the sort: on the 10x bench store (353 conversations in the
 * project, a fresh process as the SessionStart hook runs it) 15.9–17.8 ms against 6.8–8.2 ms.
 */
export const PROJECT_KEYS_SQL = `SELECT c.rowid, c.updated_at_ms FROM conversations c WHERE c.message_count > 0 AND ${IN_PROJECT}`;
const RECENT_BY_ROW_ID_SQL = `${CONVERSATION_WITH_META} WHERE c.rowid IN (SELECT value FROM json_each(@ids)) ${RECENT_ORDER}`;

function recentInProject(db: Database.Database, params: ProjectParams, limit: number): ConversationRow[] {
  const keys = db.prepare<ProjectParams, [number, number | null]>(PROJECT_KEYS_SQL).raw().all(params);
  // RECENT_ORDER without its tie-break: newest first, undated last.
  keys.sort((a, b) => Number(a[1] === null) - Number(b[1] === null) || (b[1] ?? 0) - (a[1] ?? 0));
  // LIMIT's own rules for the rest: 0 is none, a negative limit is no limit.
  const cut = limit > 0 && keys.length > limit;
  const last = cut ? keys[limit - 1]![1] : undefined;
  const ids = (cut ? keys.filter(([, updated], i) => i < limit || updated === last) : keys).map(([id]) => id);
  return db.prepare<{ ids: string; limit: number }, ConversationRow>(RECENT_BY_ROW_ID_SQL).all({ ids: JSON.stringify(ids), limit });
}

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
  if (row.title !== null) summary.title = row.title;
  if (row.kind !== null) summary.kind = row.kind;
  if (row.parent_session_id !== null) summary.parentSessionId = row.parent_session_id;
  return summary;
}

/** Recent conversations, newest first, read on a connection the caller owns (the SessionStart hook's read-only one). */
export function listRecentConversations(db: Database.Database, opts: { project?: string; limit: number }): ConversationSummary[] {
  const params = projectParams(opts.project);
  const rows =
    params.project === null
      ? db.prepare<ProjectParams & { limit: number }, ConversationRow>(RECENT_CONVERSATIONS_SQL).all({ ...params, limit: opts.limit })
      : recentInProject(db, params, opts.limit);
  const summaries = rows.map(toConversationSummary);
  if (summaries.length > 0) {
    // From each conversation's (conversation_id, msg_key) index entries, which carry the row id:
    // no message row is read. One query for the whole list.
    const ends = db
      .prepare<[string], { conversation_id: string; first: number; last: number }>(
        `SELECT conversation_id, min(id) AS first, max(id) AS last FROM messages
         WHERE conversation_id IN (SELECT value FROM json_each(?)) GROUP BY conversation_id`,
      )
      .all(JSON.stringify(summaries.map((s) => s.conversationId)));
    const byId = new Map(ends.map((e) => [e.conversation_id, e]));
    for (const summary of summaries) {
      const e = byId.get(summary.conversationId);
      if (e) {
        summary.firstMessageId = e.first;
        summary.lastMessageId = e.last;
      }
    }
  }
  return summaries;
}
