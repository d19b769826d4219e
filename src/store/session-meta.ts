import type Database from 'better-sqlite3';
import * as z from 'zod';
import { parseJsonColumn } from './json-column.js';
import { maskedTitle } from '../core/masked-title.js';
import { maskedWorkspace } from './masked-workspace.js';
import { withinTransaction } from './within-transaction.js';

/**
 * What is known about each MiniMax session beyond its files (migration 11): what the host's session
 * index said (title, kind, visibility, archive flag, parent, the host's times), each source's claim
 * about its workspace with the time of that claim, and which claim won. The winning workspace is
 * also kept where features read it: `sessions.workspace_dir` and the session's conversations.
 */
export type WorkspaceFrom = 'ledger' | 'index' | 'cwd';

/** What the index said about a session (field for field `IndexedSession` of the transcript layer). */
export interface IndexFacts {
  workspaceDir?: string;
  projectWorkspaceDir?: string;
  defaultWorkspace?: boolean;
  title?: string;
  kind?: string;
  sessionType?: string;
  visibility?: string;
  archived?: boolean;
  parentSessionId?: string;
  createdAtMs?: number;
  updatedAtMs?: number;
}

export interface StoredClaim {
  from: WorkspaceFrom;
  dir: string;
  atMs?: number;
}

export interface SessionMeta {
  sessionId: string;
  /** Present when the index described the session at least once. */
  index?: IndexFacts;
  ledger?: StoredClaim;
  cwd?: StoredClaim;
  workspaceFrom?: WorkspaceFrom;
  /** The workspace features use (`sessions.workspace_dir`): the last decision, or what was recorded before decisions were. */
  decided?: string;
  /** Every claim, when they disagreed at the last decision. */
  conflict?: StoredClaim[];
}

interface MetaRow {
  session_id: string;
  title: string | null;
  kind: string | null;
  session_type: string | null;
  visibility: string | null;
  archived: number | null;
  parent_session_id: string | null;
  default_workspace: number | null;
  project_workspace_dir: string | null;
  host_created_at_ms: number | null;
  host_updated_at_ms: number | null;
  index_workspace_dir: string | null;
  ledger_workspace_dir: string | null;
  ledger_at_ms: number | null;
  cwd: string | null;
  cwd_at_ms: number | null;
  workspace_from: string | null;
  workspace_conflict: string | null;
  decided: string | null;
}

const claimSchema = z.object({ from: z.enum(['ledger', 'index', 'cwd']), dir: z.string(), atMs: z.number().optional() });
const conflictSchema = z.array(claimSchema);
const fromSchema = z.enum(['ledger', 'index', 'cwd']);

/** The index columns, in the order of `INDEX_PARAMS`. */
type IndexParams = [
  string,
  string | null,
  string | null,
  string | null,
  string | null,
  number | null,
  string | null,
  number | null,
  string | null,
  number | null,
  number | null,
  string | null,
  number,
];

/** The one home of masking a workspace is masked-workspace.ts; the store's readers find it here too. */
export { maskedWorkspace };

/** The facts as they are stored: workspace paths masked (the title is masked where it is read). */
export function maskedIndexFacts(f: IndexFacts): IndexFacts {
  const masked = { ...f };
  if (f.workspaceDir !== undefined) masked.workspaceDir = maskedWorkspace(f.workspaceDir);
  if (f.projectWorkspaceDir !== undefined) masked.projectWorkspaceDir = maskedWorkspace(f.projectWorkspaceDir);
  return masked;
}

function indexParams(sessionId: string, facts: IndexFacts, now: number): IndexParams {
  const f = maskedIndexFacts(facts);
  const bit = (v: boolean | undefined): number | null => (v === undefined ? null : v ? 1 : 0);
  return [
    sessionId,
    // Masked here too, whatever the facts came from (the index, or an export file's conversation).
    f.title === undefined ? null : maskedTitle(f.title),
    f.kind ?? null,
    f.sessionType ?? null,
    f.visibility ?? null,
    bit(f.archived),
    f.parentSessionId ?? null,
    bit(f.defaultWorkspace),
    f.projectWorkspaceDir ?? null,
    f.createdAtMs ?? null,
    f.updatedAtMs ?? null,
    f.workspaceDir ?? null,
    now,
  ];
}

function indexFactsOf(row: MetaRow): IndexFacts | undefined {
  // host_updated_at_ms or a workspace or a title: the index described this session at least once.
  if (row.host_updated_at_ms === null && row.index_workspace_dir === null && row.title === null && row.kind === null) return undefined;
  const f: IndexFacts = {};
  if (row.index_workspace_dir !== null) f.workspaceDir = row.index_workspace_dir;
  if (row.project_workspace_dir !== null) f.projectWorkspaceDir = row.project_workspace_dir;
  if (row.default_workspace !== null) f.defaultWorkspace = row.default_workspace === 1;
  if (row.title !== null) f.title = row.title;
  if (row.kind !== null) f.kind = row.kind;
  if (row.session_type !== null) f.sessionType = row.session_type;
  if (row.visibility !== null) f.visibility = row.visibility;
  if (row.archived !== null) f.archived = row.archived === 1;
  if (row.parent_session_id !== null) f.parentSessionId = row.parent_session_id;
  if (row.host_created_at_ms !== null) f.createdAtMs = row.host_created_at_ms;
  if (row.host_updated_at_ms !== null) f.updatedAtMs = row.host_updated_at_ms;
  return f;
}

function claim(from: WorkspaceFrom, dir: string | null, atMs: number | null): StoredClaim | undefined {
  if (dir === null) return undefined;
  return atMs === null ? { from, dir } : { from, dir, atMs };
}

function metaOf(row: MetaRow): SessionMeta {
  const meta: SessionMeta = { sessionId: row.session_id };
  const index = indexFactsOf(row);
  if (index) meta.index = index;
  const ledger = claim('ledger', row.ledger_workspace_dir, row.ledger_at_ms);
  if (ledger) meta.ledger = ledger;
  const cwd = claim('cwd', row.cwd, row.cwd_at_ms);
  if (cwd) meta.cwd = cwd;
  if (row.decided !== null) meta.decided = row.decided;
  const from = fromSchema.safeParse(row.workspace_from);
  if (from.success) meta.workspaceFrom = from.data;
  const conflict = parseJsonColumn(row.workspace_conflict, conflictSchema);
  if (conflict && conflict.length > 0) meta.conflict = conflict.map((c) => (c.atMs === undefined ? { from: c.from, dir: c.dir } : { from: c.from, dir: c.dir, atMs: c.atMs }));
  return meta;
}

/** Same facts, field for field: a run over an unchanged index writes nothing. */
export function sameIndexFacts(a: IndexFacts | undefined, b: IndexFacts): boolean {
  if (!a) return false;
  const keys: Array<keyof IndexFacts> = [
    'workspaceDir',
    'projectWorkspaceDir',
    'defaultWorkspace',
    'title',
    'kind',
    'sessionType',
    'visibility',
    'archived',
    'parentSessionId',
    'createdAtMs',
    'updatedAtMs',
  ];
  return keys.every((k) => a[k] === b[k]);
}

const SELECT_META = 'SELECT m.*, s.workspace_dir AS decided FROM session_meta m LEFT JOIN sessions s ON s.session_id = m.session_id';
export class SessionMetaStore {
  private readonly stmts;
  /** Atomic on its own; inside a caller's transaction, part of it (see withinTransaction). */
  private readonly inTransaction: (fn: () => void) => void;

  constructor(db: Database.Database) {
    this.inTransaction = withinTransaction(db);
    this.stmts = {
      get: db.prepare<[string], MetaRow>(`${SELECT_META} WHERE m.session_id = ?`),
      all: db.prepare<[], MetaRow>(SELECT_META),
      // Sessions with only a workspace (recorded before claims had sources, or by an older hook worker).
      legacy: db.prepare<[], { session_id: string; workspace_dir: string }>(
        'SELECT s.session_id, s.workspace_dir FROM sessions s WHERE s.workspace_dir IS NOT NULL AND NOT EXISTS (SELECT 1 FROM session_meta m WHERE m.session_id = s.session_id)',
      ),
      putIndex: db.prepare<IndexParams>(
        `INSERT INTO session_meta (session_id, title, kind, session_type, visibility, archived, parent_session_id, default_workspace,
           project_workspace_dir, host_created_at_ms, host_updated_at_ms, index_workspace_dir, recorded_at_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (session_id) DO UPDATE SET title = excluded.title, kind = excluded.kind, session_type = excluded.session_type,
           visibility = excluded.visibility, archived = excluded.archived, parent_session_id = excluded.parent_session_id,
           default_workspace = excluded.default_workspace, project_workspace_dir = excluded.project_workspace_dir,
           host_created_at_ms = excluded.host_created_at_ms, host_updated_at_ms = excluded.host_updated_at_ms,
           index_workspace_dir = excluded.index_workspace_dir, recorded_at_ms = excluded.recorded_at_ms`,
      ),
      putLedger: db.prepare<[string, string, number | null, number]>(
        `INSERT INTO session_meta (session_id, ledger_workspace_dir, ledger_at_ms, recorded_at_ms) VALUES (?, ?, ?, ?)
         ON CONFLICT (session_id) DO UPDATE SET ledger_workspace_dir = excluded.ledger_workspace_dir, ledger_at_ms = excluded.ledger_at_ms,
           recorded_at_ms = excluded.recorded_at_ms`,
      ),
      // The time moves only when the cwd changes: it is when the hook first reported this workspace.
      putCwd: db.prepare<[string, string, number, number]>(
        `INSERT INTO session_meta (session_id, cwd, cwd_at_ms, recorded_at_ms) VALUES (?, ?, ?, ?)
         ON CONFLICT (session_id) DO UPDATE SET cwd_at_ms = CASE WHEN cwd IS excluded.cwd THEN coalesce(cwd_at_ms, excluded.cwd_at_ms) ELSE excluded.cwd_at_ms END,
           cwd = excluded.cwd, recorded_at_ms = excluded.recorded_at_ms`,
      ),
      putDecision: db.prepare<[string, string | null, string | null, number]>(
        `INSERT INTO session_meta (session_id, workspace_from, workspace_conflict, recorded_at_ms) VALUES (?, ?, ?, ?)
         ON CONFLICT (session_id) DO UPDATE SET workspace_from = excluded.workspace_from, workspace_conflict = excluded.workspace_conflict,
           recorded_at_ms = excluded.recorded_at_ms`,
      ),
      setSessionWorkspace: db.prepare<[string, string]>(
        `INSERT INTO sessions (session_id, workspace_dir) VALUES (?, ?)
         ON CONFLICT (session_id) DO UPDATE SET workspace_dir = excluded.workspace_dir`,
      ),
      sessionWorkspace: db.prepare<[string], string | null>('SELECT workspace_dir FROM sessions WHERE session_id = ?').pluck(),
      // A decision overrides what an earlier one gave the session's conversations, not only gaps.
      setConversationWorkspace: db.prepare<[string, string, string]>(
        'UPDATE conversations SET workspace_dir = ? WHERE session_id = ? AND workspace_dir IS NOT ?',
      ),
      conflicts: db.prepare<[], MetaRow>(`${SELECT_META} WHERE m.workspace_conflict IS NOT NULL ORDER BY m.session_id`),
      count: db.prepare<[], number>('SELECT count(*) FROM session_meta WHERE host_updated_at_ms IS NOT NULL OR index_workspace_dir IS NOT NULL').pluck(),
    };
  }

  get(sessionId: string): SessionMeta | undefined {
    const row = this.stmts.get.get(sessionId);
    if (row) return metaOf(row);
    const decided = this.stmts.sessionWorkspace.get(sessionId);
    return decided == null ? undefined : { sessionId, decided };
  }

  /** Every session's meta, in one query: what a run over many sessions reads at its start. */
  all(): Map<string, SessionMeta> {
    const out = new Map<string, SessionMeta>();
    for (const row of this.stmts.all.all()) out.set(row.session_id, metaOf(row));
    for (const row of this.stmts.legacy.all()) out.set(row.session_id, { sessionId: row.session_id, decided: row.workspace_dir });
    return out;
  }

  recordIndex(sessionId: string, facts: IndexFacts, now = Date.now()): void {
    this.stmts.putIndex.run(...indexParams(sessionId, facts, now));
  }

  recordLedger(sessionId: string, dir: string, atMs: number | undefined, now = Date.now()): void {
    this.stmts.putLedger.run(sessionId, maskedWorkspace(dir), atMs ?? null, now);
  }

  /** The hook payload's `cwd`: its time is when the hook first reported this value. */
  recordCwd(sessionId: string, cwd: string, now = Date.now()): void {
    this.stmts.putCwd.run(sessionId, maskedWorkspace(cwd), now, now);
  }

  /**
   * The decided workspace: recorded with its source (and the claims, when they disagreed), and
   * given to the session and its conversations, replacing what an earlier decision gave them.
   */
  recordDecision(sessionId: string, decided: string, from: WorkspaceFrom, conflict: readonly StoredClaim[] | undefined, now = Date.now()): void {
    const dir = maskedWorkspace(decided);
    this.inTransaction(() => {
      // Only what a claim is (a caller's claims may carry more for its own checks).
      const stored = conflict?.map(({ from: by, dir: at, atMs }) => {
        const shown = maskedWorkspace(at);
        return atMs === undefined ? { from: by, dir: shown } : { from: by, dir: shown, atMs };
      });
      this.stmts.putDecision.run(sessionId, from, stored && stored.length > 0 ? JSON.stringify(stored) : null, now);
      if (this.stmts.sessionWorkspace.get(sessionId) !== dir) this.stmts.setSessionWorkspace.run(sessionId, dir);
      this.stmts.setConversationWorkspace.run(dir, sessionId, dir);
    });
  }

  /** The decided workspace as features read it (the session's row). */
  decidedWorkspace(sessionId: string): string | undefined {
    return this.stmts.sessionWorkspace.get(sessionId) ?? undefined;
  }

  /** Sessions whose sources disagreed at their last decision, for the report. */
  conflicts(): SessionMeta[] {
    return this.stmts.conflicts.all().map(metaOf);
  }

  /** How many sessions the index has described. */
  indexedCount(): number {
    return this.stmts.count.get() ?? 0;
  }
}

