import type Database from 'better-sqlite3';
import * as z from 'zod';
import { openRuntimeState, runtimeStatePath, troubleOf, RUNTIME_STATE_BUSY_TIMEOUT_MS, type RuntimeStateMode, type RuntimeStateTrouble } from './runtime-state.js';
import { maskedTitle } from '../core/masked-title.js';

/**
 * MiniMax Code's own index of its sessions: table `local_runtime_sessions` of the runtime database
 * (reference §8). messages.jsonl-era session directories name no workspace, title or kind; this row
 * does. Every build has `session_id`, `record_json` (the session record, the same one the ledger's
 * `session.created` carries) and `updated_at_ms`; newer builds mirror record fields in columns
 * (0.5.4 only `workspace_dir`). A column a build has is read first, `record_json` where the column
 * is missing or NULL.
 */
export const SESSION_INDEX_TABLE = 'local_runtime_sessions';

/** One session as the index describes it. Every field may be unknown. */
export interface IndexedSession {
  sessionId: string;
  /** The session's workspace: `workspace_dir`, else `record_json.workspaceDir`. */
  workspaceDir?: string;
  /** `project_workspace_dir` (newer builds): the project a worktree session belongs to. */
  projectWorkspaceDir?: string;
  /** True: the session ran in the host's default workspace, not a project the user chose. */
  defaultWorkspace?: boolean;
  title?: string;
  /** `conversation` | `task` | `peek` | `channel` | `cron` | `unknown` (others may come). */
  kind?: string;
  /** `root` | `branch`. */
  sessionType?: string;
  /** `visible` | `hidden`. */
  visibility?: string;
  archived?: boolean;
  parentSessionId?: string;
  /** The host's times: when the session was created and its row last updated. */
  createdAtMs?: number;
  updatedAtMs?: number;
}

/** The columns that mirror a record field, and that field's name in `record_json`. */
const MIRRORED = {
  workspace_dir: 'workspaceDir',
  project_workspace_dir: 'projectWorkspaceDir',
  is_default_workspace: 'isDefaultWorkspace',
  title: 'title',
  session_kind: 'sessionKind',
  session_type: 'sessionType',
  visibility: 'visibility',
  archived: 'archived',
  parent_session_id: 'parentSessionId',
  created_at_ms: 'createdAtMs',
  updated_at_ms: 'updatedAtMs',
} as const;

type MirroredColumn = keyof typeof MIRRORED;
const MIRRORED_COLUMNS = Object.keys(MIRRORED) as MirroredColumn[];

/** What schema was found: the mirrored columns present (besides `session_id`), and whether `record_json` is. */
export interface SessionIndexSchema {
  recordJson: boolean;
  columns: MirroredColumn[];
  /** For people: `record_json only`, `0.5.4 (record_json + workspace_dir)`, or the columns found. */
  name: string;
}

export type SessionIndexRead =
  | {
      status: 'ok';
      path: string;
      mode: RuntimeStateMode;
      schema: SessionIndexSchema;
      /** Rows in the table, whichever sessions were asked for. */
      known: number;
      sessions: Map<string, IndexedSession>;
    }
  | { status: 'unavailable'; path: string; reason: RuntimeStateTrouble; message: string };

export interface SessionIndexOptions {
  /** Only these sessions (the hook worker's one); all rows when unset. */
  sessionIds?: readonly string[];
  busyTimeoutMs?: number;
}

function schemaName(recordJson: boolean, columns: readonly MirroredColumn[]): string {
  const own = columns.filter((c) => c !== 'updated_at_ms');
  if (own.length === 0) return recordJson ? 'record_json only' : 'no record fields';
  if (own.length === 1 && own[0] === 'workspace_dir' && recordJson) return '0.5.4 (record_json + workspace_dir)';
  return recordJson ? 'record_json + columns' : 'columns only';
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** `column`, else the record's field (NULL when record_json is not valid JSON), else NULL. */
function selectExpr(column: MirroredColumn, present: ReadonlySet<string>, recordJson: boolean): string {
  // Scalars only: json_extract would hand an array or object over as its JSON text.
  const key = `'$.${MIRRORED[column]}'`;
  const fromRecord = recordJson
    ? `CASE WHEN json_valid(record_json) AND json_type(record_json, ${key}) IN ('text', 'integer', 'real', 'true', 'false') THEN json_extract(record_json, ${key}) END`
    : 'NULL';
  if (!present.has(column)) return `${fromRecord} AS ${column}`;
  return recordJson ? `coalesce(${quoteIdent(column)}, ${fromRecord}) AS ${column}` : `${quoteIdent(column)} AS ${column}`;
}

/**
 * Values as SQLite hands them over: TEXT as a string, INTEGER or REAL as a number (a JSON `true` or
 * `false` from record_json as 1 or 0), NULL for "not said". Anything else (a BLOB, a string where a
 * number belongs) is unknown, never guessed. Checked with plain types and finished in `toIndexed`:
 * a value zod has to catch costs it an issue object, and a 30,000-row index read spent most of its
 * time on those.
 */
const text = z.string().nullable().catch(null);
const number = z.number().nullable().catch(null);

const IndexRow = z.object({
  session_id: z.string().min(1),
  workspace_dir: text,
  project_workspace_dir: text,
  is_default_workspace: number,
  title: text,
  session_kind: text,
  session_type: text,
  visibility: text,
  archived: number,
  parent_session_id: text,
  created_at_ms: number,
  updated_at_ms: number,
});

/** A string with something in it, trimmed. */
function said(v: string | null): string | undefined {
  const t = v?.trim();
  return t ? t : undefined;
}

/** Epoch milliseconds: finite and not negative. */
function when(v: number | null): number | undefined {
  return v !== null && Number.isFinite(v) && v >= 0 ? v : undefined;
}

function toIndexed(row: z.infer<typeof IndexRow>): IndexedSession {
  const s: IndexedSession = { sessionId: row.session_id };
  const put = <K extends keyof IndexedSession>(key: K, value: IndexedSession[K] | undefined): void => {
    if (value !== undefined) s[key] = value;
  };
  put('workspaceDir', said(row.workspace_dir));
  put('projectWorkspaceDir', said(row.project_workspace_dir));
  put('defaultWorkspace', row.is_default_workspace === null ? undefined : row.is_default_workspace !== 0);
  // MiniMax Code often makes a title of the first prompt, so it can hold what the prompt held: a
  // title is masked like every other text (private spans, credentials) before anything shows, stores or uploads it.
  const title = said(row.title);
  put('title', title === undefined ? undefined : maskedTitle(title));
  put('kind', said(row.session_kind));
  put('sessionType', said(row.session_type));
  put('visibility', said(row.visibility));
  put('archived', row.archived === null ? undefined : row.archived !== 0);
  put('parentSessionId', said(row.parent_session_id));
  put('createdAtMs', when(row.created_at_ms));
  put('updatedAtMs', when(row.updated_at_ms));
  return s;
}

/** How many ids go into one `IN (…)`: well under SQLite's bound-parameter limit. */
const IDS_PER_QUERY = 500;

function readRows(db: Database.Database, path: string, mode: RuntimeStateMode, opts: SessionIndexOptions): SessionIndexRead {
  const table = db.prepare<[string]>("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(SESSION_INDEX_TABLE);
  if (!table) return { status: 'unavailable', path, reason: 'unknown_schema', message: `no ${SESSION_INDEX_TABLE} table` };
  const info = db.prepare<[], { name: string }>(`PRAGMA table_info(${SESSION_INDEX_TABLE})`).all();
  const present = new Set(info.map((c) => c.name));
  const recordJson = present.has('record_json');
  const columns = MIRRORED_COLUMNS.filter((c) => present.has(c));
  if (!present.has('session_id') || (!recordJson && !present.has('workspace_dir'))) {
    return { status: 'unavailable', path, reason: 'unknown_schema', message: `${SESSION_INDEX_TABLE} has neither session_id with record_json nor workspace_dir` };
  }
  const select = `SELECT session_id, ${MIRRORED_COLUMNS.map((c) => selectExpr(c, present, recordJson)).join(', ')} FROM ${SESSION_INDEX_TABLE}`;
  const sessions = new Map<string, IndexedSession>();
  const take = (rows: Iterable<unknown>): void => {
    for (const raw of rows) {
      const row = IndexRow.safeParse(raw);
      if (row.success) sessions.set(row.data.session_id, toIndexed(row.data));
    }
  };
  if (opts.sessionIds === undefined) {
    take(db.prepare(`${select} WHERE typeof(session_id) = 'text'`).all());
  } else {
    for (let i = 0; i < opts.sessionIds.length; i += IDS_PER_QUERY) {
      const ids = opts.sessionIds.slice(i, i + IDS_PER_QUERY);
      take(db.prepare(`${select} WHERE session_id IN (${ids.map(() => '?').join(', ')})`).all(...ids));
    }
  }
  const known = opts.sessionIds === undefined ? sessions.size : db.prepare<[], number>(`SELECT count(*) FROM ${SESSION_INDEX_TABLE}`).pluck().get() ?? 0;
  return { status: 'ok', path, mode, schema: { recordJson, columns, name: schemaName(recordJson, columns) }, known, sessions };
}

/**
 * Reads the session index of a data dir, once (a run asks once, a hook worker once for its session).
 * Never throws and never writes: an index that is absent, locked past the busy timeout, corrupt or
 * of a schema without these fields is `unavailable`, with the reason.
 */
export function readSessionIndex(dataDir: string, opts: SessionIndexOptions = {}): SessionIndexRead {
  const file = runtimeStatePath(dataDir);
  const opened = openRuntimeState(file, opts.busyTimeoutMs ?? RUNTIME_STATE_BUSY_TIMEOUT_MS);
  if (!opened.ok) return { status: 'unavailable', path: file, reason: opened.trouble, message: opened.message };
  try {
    return readRows(opened.db, file, opened.mode, opts);
  } catch (err) {
    return { status: 'unavailable', path: file, ...reasonOf(err) };
  } finally {
    try {
      opened.close();
    } catch {
      // a close that fails leaves nothing of ours behind that matters
    }
  }
}

function reasonOf(err: unknown): { reason: RuntimeStateTrouble; message: string } {
  const { trouble, message } = troubleOf(err);
  return { reason: trouble, message };
}
