import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import path from 'node:path';

/**
 * Writes MiniMax Code's session index (`<data>/v2/sqlite/runtime-state.sqlite`, table
 * `local_runtime_sessions`) in the shapes builds have used (reference §8), for the bench trees, the
 * demo data dir and the tests: the host's side of the file, never everme's.
 *
 * - `record_json`: every build's columns only (`session_id`, `record_json`, `updated_at_ms`);
 * - `0.5.4`: those plus `workspace_dir`;
 * - `newest`: the record mirrored in columns too, and `local_runtime_projects`.
 */
export type IndexVariant = 'record_json' | '0.5.4' | 'newest';

/** The session record as the host writes it into `record_json`. */
export interface IndexRecord {
  sessionId: string;
  agentName?: string;
  workspaceDir?: string;
  projectWorkspaceDir?: string;
  isDefaultWorkspace?: boolean;
  runtime?: string;
  sessionType?: 'root' | 'branch';
  sessionKind?: string;
  archived?: boolean;
  title?: string;
  parentSessionId?: string | null;
  visibility?: 'visible' | 'hidden';
  purpose?: string;
  status?: string;
  createdAtMs: number;
  updatedAtMs: number;
}

const BASE = 'session_id TEXT PRIMARY KEY, record_json TEXT NOT NULL, updated_at_ms INTEGER';
const NEWEST_COLUMNS =
  'workspace_dir TEXT, project_workspace_dir TEXT, is_default_workspace INTEGER, title TEXT, archived INTEGER, visibility TEXT, ' +
  'session_kind TEXT, session_type TEXT, parent_session_id TEXT, agent_name TEXT, status TEXT, created_at_ms INTEGER, columnar_version INTEGER';

function tableSql(variant: IndexVariant): string {
  switch (variant) {
    case 'record_json':
      return `CREATE TABLE local_runtime_sessions (${BASE});`;
    case '0.5.4':
      return `CREATE TABLE local_runtime_sessions (${BASE}, workspace_dir TEXT);`;
    case 'newest':
      return (
        `CREATE TABLE local_runtime_sessions (${BASE}, ${NEWEST_COLUMNS});` +
        'CREATE TABLE local_runtime_projects (project_id TEXT PRIMARY KEY, project_kind TEXT, workspace_dir TEXT, hidden INTEGER, pinned INTEGER, session_count INTEGER, latest_activity_at_ms INTEGER);'
      );
  }
}

export function sessionIndexFile(dataDir: string): string {
  return path.join(dataDir, 'v2', 'sqlite', 'runtime-state.sqlite');
}

/** Opens (creating) the index as the host does: WAL mode, the table of `variant`. The caller closes it. */
export function openHostIndex(file: string, variant: IndexVariant): Database.Database {
  mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec(`CREATE TABLE IF NOT EXISTS local_runtime_plugin_official_state (principal_id TEXT, deployment TEXT, state_json TEXT, updated_at_ms INTEGER);`);
  if (!db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'local_runtime_sessions'").get()) db.exec(tableSql(variant));
  return db;
}

/** Inserts (or replaces) rows the way `variant` stores them. */
export function putIndexRecords(db: Database.Database, variant: IndexVariant, records: readonly IndexRecord[]): void {
  // Each variant's statement only: the others name columns its table does not have.
  const insert =
    variant === 'record_json'
      ? db.prepare('INSERT OR REPLACE INTO local_runtime_sessions (session_id, record_json, updated_at_ms) VALUES (@sessionId, @recordJson, @updatedAtMs)')
      : variant === '0.5.4'
        ? db.prepare(
            'INSERT OR REPLACE INTO local_runtime_sessions (session_id, record_json, updated_at_ms, workspace_dir) VALUES (@sessionId, @recordJson, @updatedAtMs, @workspaceDir)',
          )
        : db.prepare(
            `INSERT OR REPLACE INTO local_runtime_sessions (session_id, record_json, updated_at_ms, workspace_dir, project_workspace_dir, is_default_workspace, title,
               archived, visibility, session_kind, session_type, parent_session_id, agent_name, status, created_at_ms, columnar_version)
             VALUES (@sessionId, @recordJson, @updatedAtMs, @workspaceDir, @projectWorkspaceDir, @isDefault, @title, @archived, @visibility, @sessionKind,
               @sessionType, @parentSessionId, @agentName, @status, @createdAtMs, 1)`,
          );
  db.transaction(() => {
    for (const r of records) {
      const record = { agentName: 'mavis', runtime: 'pi-agent', sessionType: 'root', archived: false, status: 'idle', ...r };
      const all = {
        sessionId: r.sessionId,
        recordJson: JSON.stringify(record),
        updatedAtMs: r.updatedAtMs,
        workspaceDir: r.workspaceDir ?? null,
        projectWorkspaceDir: r.projectWorkspaceDir ?? null,
        isDefault: r.isDefaultWorkspace === undefined ? null : r.isDefaultWorkspace ? 1 : 0,
        title: r.title ?? null,
        archived: record.archived ? 1 : 0,
        visibility: r.visibility ?? null,
        sessionKind: r.sessionKind ?? null,
        sessionType: record.sessionType,
        parentSessionId: r.parentSessionId ?? null,
        agentName: record.agentName,
        status: record.status,
        createdAtMs: r.createdAtMs,
      };
      const params: Record<string, unknown> =
        variant === 'record_json'
          ? { sessionId: all.sessionId, recordJson: all.recordJson, updatedAtMs: all.updatedAtMs }
          : variant === '0.5.4'
            ? { sessionId: all.sessionId, recordJson: all.recordJson, updatedAtMs: all.updatedAtMs, workspaceDir: all.workspaceDir }
            : all;
      insert.run(params);
    }
  })();
}

/** Writes a whole index and closes it cleanly, as a host that quit leaves it: WAL mode, no -wal or -shm. */
export function writeSessionIndex(dataDir: string, variant: IndexVariant, records: readonly IndexRecord[]): string {
  const file = sessionIndexFile(dataDir);
  const db = openHostIndex(file, variant);
  try {
    putIndexRecords(db, variant, records);
  } finally {
    db.close();
  }
  return file;
}
