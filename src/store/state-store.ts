import type Database from 'better-sqlite3';
import { z } from 'zod';
import { EvermeError } from '../core/errors.js';
import type { SinkName } from '../config/settings.js';
import { WARNING_CODES, WarningCollector, type WarningEntry } from '../core/warnings.js';
import { parseJsonColumn } from './json-column.js';

export type { SinkName };

/** Identifies a history file's contents cheaply: unchanged fingerprint ⇒ nothing new to read. */
export interface SessionFingerprint {
  file: string;
  size: number;
  mtimeMs: number;
  ino: number;
  headHash: string;
}

export interface WarningOwner {
  conversationId: string | null;
  sessionId: string | null;
  /** 'messages' | 'ledger' | 'none' | 'manifest' */
  source: string;
  historyFile?: string;
  sessionDir?: string;
  createdAtMs?: number;
  workspaceDir?: string;
}

export interface ConversationWarnings extends WarningOwner {
  warnings: WarningEntry[];
}

export interface WarningFilter {
  conversationId?: string;
  code?: string;
  /** Conversations created at or after this instant (when unknown: recorded at or after it). */
  sinceMs?: number;
}

export type RunKind = 'import' | 'sync' | 'hook';
export type RunStatus = 'ok' | 'partial' | 'failed' | 'cancelled';

export interface RunRecord {
  id: number;
  kind: RunKind;
  startedAtMs: number;
  finishedAtMs?: number;
  status?: RunStatus;
  params: Record<string, unknown>;
  summary?: Record<string, unknown>;
}

const samplesSchema = z.array(z.object({ file: z.string(), line: z.number().int() }));
const warningCodeSchema = z.enum(WARNING_CODES);
const jsonObjectSchema = z.record(z.string(), z.unknown());
const runStatusSchema = z.enum(['ok', 'partial', 'failed', 'cancelled']);

/** A session's conversations that have no workspace get the one recorded for it (by session id: see migration 8). */
export const FILL_CONVERSATION_WORKSPACE_SQL = 'UPDATE conversations SET workspace_dir = ? WHERE session_id = ? AND workspace_dir IS NULL';

/** Imports that covered their range: a failed or cancelled one may have stopped anywhere. */
const COVERING_IMPORT_STATUSES: readonly RunStatus[] = ['ok', 'partial'];


interface FingerprintRow {
  file: string;
  size: number;
  mtime_ms: number;
  ino: number;
  head_hash: string;
}

function fingerprintOf(row: FingerprintRow): SessionFingerprint {
  return { file: row.file, size: row.size, mtimeMs: row.mtime_ms, ino: row.ino, headHash: row.head_hash };
}

interface WarningRow {
  id: number;
  conversation_id: string | null;
  session_id: string | null;
  source: string;
  history_file: string | null;
  session_dir: string | null;
  created_at_ms: number | null;
  workspace_dir: string | null;
  code: string;
  count: number;
  samples_json: string;
}

interface RunRow {
  id: number;
  started_at_ms: number;
  finished_at_ms: number | null;
  status: string | null;
  params_json: string;
  summary_json: string | null;
}

interface WarningSetParams {
  setKey: string;
  conversationId: string | null;
  sessionId: string | null;
  source: string;
  historyFile: string | null;
  sessionDir: string | null;
  createdAtMs: number | null;
  workspaceDir: string | null;
  recordedAtMs: number;
}

interface WarningFilterParams {
  conversationId: string | null;
  code: string | null;
  sinceMs: number | null;
}

/** Longer than any one request can take, Retry-After waits included. */
const FLUSH_CLAIM_MAX_AGE_MS = 30 * 60 * 1000;

function flushClaimStale(claim: string, now: number): boolean {
  const m = /^(\d+):(\d+)$/.exec(claim);
  if (!m) return true;
  const pid = Number(m[1]);
  if (now - Number(m[2]) > FLUSH_CLAIM_MAX_AGE_MS) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'EPERM';
  }
}

/**
 * Engine state for both sinks, in the same SQLite file as the embedded store. Every write is a plain
 * synchronous call, so a caller can commit messages and their marks in one `db.transaction`.
 */
export class StateStore {
  private readonly stmts;
  /** Runs `fn` atomically; inside a caller's transaction it nests as a savepoint. Built once. */
  private readonly inTransaction: (fn: () => void) => void;

  constructor(db: Database.Database) {
    this.inTransaction = db.transaction((fn: () => void) => fn());
    this.stmts = {
      getFlush: db.prepare<[string, string], { pending: number; ends_turn: number; flush_claim: string | null }>(
        'SELECT pending, ends_turn, flush_claim FROM flush_state WHERE sink = ? AND conversation_id = ?',
      ),
      setFlush: db.prepare<[string, string, number, number]>(
        'INSERT INTO flush_state (sink, conversation_id, pending, ends_turn) VALUES (?, ?, ?, ?) ' +
          'ON CONFLICT (sink, conversation_id) DO UPDATE SET pending = excluded.pending, ends_turn = excluded.ends_turn, flush_claim = NULL',
      ),
      // Compare-and-swap: succeeds for exactly one of any number of concurrent claimers.
      claimFlush: db.prepare<[string, string, string, string, string | null]>(
        'UPDATE flush_state SET flush_claim = ? WHERE sink = ? AND conversation_id = ? AND pending = 1 ' +
          'AND (ends_turn = 1 OR ? = \'any\') AND flush_claim IS ?',
      ),
      releaseFlush: db.prepare<[string, string, string]>(
        'UPDATE flush_state SET flush_claim = NULL WHERE sink = ? AND conversation_id = ? AND flush_claim = ?',
      ),
      pruneRuns: db.prepare<[string, string, number]>(
        'DELETE FROM runs WHERE kind = ? AND id <= (SELECT id FROM runs WHERE kind = ? ORDER BY id DESC LIMIT 1 OFFSET ?)',
      ),
      deliveredKeys: db
        .prepare<[string, string], string>('SELECT msg_key FROM delivered WHERE sink = ? AND conversation_id = ?')
        .pluck(),
      recordDelivered: db.prepare<[string, string, string]>(
        'INSERT INTO delivered (sink, conversation_id, msg_key) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
      ),
      forgetDelivered: db.prepare<[string, string, string]>(
        'DELETE FROM delivered WHERE sink = ? AND conversation_id = ? AND msg_key = ?',
      ),
      getFingerprint: db.prepare<[string, string], FingerprintRow>(
        'SELECT file, size, mtime_ms, ino, head_hash FROM fingerprints WHERE sink = ? AND session_id = ?',
      ),
      setFingerprint: db.prepare<[string, string, string, number, number, number, string]>(
        `INSERT INTO fingerprints (sink, session_id, file, size, mtime_ms, ino, head_hash) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (sink, session_id) DO UPDATE SET
           file = excluded.file, size = excluded.size, mtime_ms = excluded.mtime_ms, ino = excluded.ino, head_hash = excluded.head_hash`,
      ),
      clearFingerprint: db.prepare<[string, string]>('DELETE FROM fingerprints WHERE sink = ? AND session_id = ?'),
      allFingerprints: db.prepare<[string], FingerprintRow & { session_id: string }>(
        'SELECT session_id, file, size, mtime_ms, ino, head_hash FROM fingerprints WHERE sink = ?',
      ),
      deleteWarningEntries: db.prepare<{ setKey: string; sessionDir: string | null }>(
        `DELETE FROM warning_entries WHERE set_id IN (
           SELECT id FROM warning_sets WHERE set_key = @setKey OR (@sessionDir IS NOT NULL AND session_dir = @sessionDir))`,
      ),
      deleteWarningSets: db.prepare<{ setKey: string; sessionDir: string | null }>(
        'DELETE FROM warning_sets WHERE set_key = @setKey OR (@sessionDir IS NOT NULL AND session_dir = @sessionDir)',
      ),
      insertWarningSet: db.prepare<WarningSetParams>(
        `INSERT INTO warning_sets (set_key, conversation_id, session_id, source, history_file, session_dir, created_at_ms, workspace_dir, recorded_at_ms)
         VALUES (@setKey, @conversationId, @sessionId, @source, @historyFile, @sessionDir, @createdAtMs, @workspaceDir, @recordedAtMs)`,
      ),
      insertWarningEntry: db.prepare<[number | bigint, string, number, string]>(
        'INSERT INTO warning_entries (set_id, code, count, samples_json) VALUES (?, ?, ?, ?)',
      ),
      listWarnings: db.prepare<WarningFilterParams, WarningRow>(
        `SELECT s.id, s.conversation_id, s.session_id, s.source, s.history_file, s.session_dir, s.created_at_ms,
                s.workspace_dir, e.code, e.count, e.samples_json
         FROM warning_sets s JOIN warning_entries e ON e.set_id = s.id
         WHERE (@conversationId IS NULL OR s.conversation_id = @conversationId)
           AND (@code IS NULL OR e.code = @code)
           AND (@sinceMs IS NULL OR coalesce(s.created_at_ms, s.recorded_at_ms) >= @sinceMs)
         ORDER BY s.created_at_ms IS NULL, s.created_at_ms, s.id`,
      ),
      startRun: db.prepare<[string, number, string]>(
        'INSERT INTO runs (kind, started_at_ms, params_json) VALUES (?, ?, ?)',
      ),
      finishRun: db.prepare<[number, string, string, number]>(
        'UPDATE runs SET finished_at_ms = ?, status = ?, summary_json = ? WHERE id = ?',
      ),
      lastRun: db.prepare<[string], RunRow>(
        'SELECT id, started_at_ms, finished_at_ms, status, params_json, summary_json FROM runs WHERE kind = ? ORDER BY id DESC LIMIT 1',
      ),
      importSinces: db
        .prepare<[], string>(
          `SELECT json_extract(params_json, '$.since') AS since FROM runs
           WHERE kind = 'import' AND finished_at_ms IS NOT NULL
             AND status IN (${COVERING_IMPORT_STATUSES.map((s) => `'${s}'`).join(', ')})
             AND json_valid(params_json) AND json_type(params_json, '$.since') = 'text'`,
        )
        .pluck(),
      rememberSessionDir: db.prepare<[string, string]>(
        `INSERT INTO sessions (session_id, session_dir) VALUES (?, ?)
         ON CONFLICT (session_id) DO UPDATE SET session_dir = excluded.session_dir`,
      ),
      sessionDirFor: db.prepare<[string], string | null>('SELECT session_dir FROM sessions WHERE session_id = ?').pluck(),
      rememberWorkspace: db.prepare<[string, string]>(
        `INSERT INTO sessions (session_id, workspace_dir) VALUES (?, ?)
         ON CONFLICT (session_id) DO UPDATE SET workspace_dir = excluded.workspace_dir`,
      ),
      workspaceFor: db.prepare<[string], string | null>('SELECT workspace_dir FROM sessions WHERE session_id = ?').pluck(),
      fillConversationWorkspace: db.prepare<[string, string]>(FILL_CONVERSATION_WORKSPACE_SQL),
    };
  }

  // ── high-water marks ────────────────────────────────────────────────────────────────────────

  /** Runs `fn` in one transaction (a savepoint inside a caller's). */
  transaction(fn: () => void): void {
    this.inTransaction(fn);
  }

  /** Whether the conversation's deliveries since its last flush still owe the gateway one. */
  pendingFlush(sink: SinkName, conversationId: string): { endsTurn: boolean } | undefined {
    const row = this.stmts.getFlush.get(sink, conversationId);
    return row && row.pending === 1 ? { endsTurn: row.ends_turn === 1 } : undefined;
  }

  /**
   * Takes the owed flush for this process, atomically: of concurrent runs exactly one gets it and
   * sends it. A claim whose owner died, or that is older than any request can take, is taken over.
   * Returns the claim to pass to `releaseFlushClaim` should the send fail.
   */
  claimPendingFlush(sink: SinkName, conversationId: string, requireEndsTurn: boolean, now = Date.now()): string | undefined {
    const row = this.stmts.getFlush.get(sink, conversationId);
    if (!row || row.pending !== 1 || (requireEndsTurn && row.ends_turn !== 1)) return undefined;
    if (row.flush_claim !== null && !flushClaimStale(row.flush_claim, now)) return undefined;
    const claim = `${process.pid}:${now}`;
    const info = this.stmts.claimFlush.run(claim, sink, conversationId, requireEndsTurn ? 'turn' : 'any', row.flush_claim);
    return info.changes === 1 ? claim : undefined;
  }

  /** Gives an unsent flush back (the send failed); a claim already superseded is left alone. */
  releaseFlushClaim(sink: SinkName, conversationId: string, claim: string): void {
    this.stmts.releaseFlush.run(sink, conversationId, claim);
  }

  recordFlushState(sink: SinkName, conversationId: string, pending: boolean, endsTurn: boolean): void {
    this.stmts.setFlush.run(sink, conversationId, pending ? 1 : 0, endsTurn ? 1 : 0);
  }

  /** Keeps the newest `keep` runs of a kind: hook workers record one per interval per session. */
  pruneRuns(kind: RunKind, keep: number): void {
    this.stmts.pruneRuns.run(kind, kind, keep);
  }

  deliveredKeys(sink: SinkName, conversationId: string): Set<string> {
    return new Set(this.stmts.deliveredKeys.all(sink, conversationId));
  }

  recordDelivered(sink: SinkName, conversationId: string, keys: string[]): void {
    if (keys.length === 0) return;
    this.inTransaction(() => {
      for (const key of keys) this.stmts.recordDelivered.run(sink, conversationId, key);
    });
  }

  forgetDelivered(sink: SinkName, conversationId: string, keys: string[]): void {
    if (keys.length === 0) return;
    this.inTransaction(() => {
      for (const key of keys) this.stmts.forgetDelivered.run(sink, conversationId, key);
    });
  }

  // ── file fingerprints ───────────────────────────────────────────────────────────────────────

  getFingerprint(sink: SinkName, sessionId: string): SessionFingerprint | undefined {
    const row = this.stmts.getFingerprint.get(sink, sessionId);
    return row ? fingerprintOf(row) : undefined;
  }

  /** Every session's fingerprint for `sink`, in one query: what a run over many sessions reads at its start. */
  fingerprintsOf(sink: SinkName): Map<string, SessionFingerprint> {
    const all = new Map<string, SessionFingerprint>();
    for (const row of this.stmts.allFingerprints.iterate(sink)) all.set(row.session_id, fingerprintOf(row));
    return all;
  }

  setFingerprint(sink: SinkName, sessionId: string, fp: SessionFingerprint): void {
    this.stmts.setFingerprint.run(sink, sessionId, fp.file, fp.size, fp.mtimeMs, fp.ino, fp.headHash);
  }

  clearFingerprint(sink: SinkName, sessionId: string): void {
    this.stmts.clearFingerprint.run(sink, sessionId);
  }

  // ── warnings ────────────────────────────────────────────────────────────────────────────────

  /**
   * Replaces everything recorded for this conversation (or, without an id, this session dir) with
   * `entries`: counts describe the latest read, never a sum over runs, and an empty list clears.
   * A set recorded for the same session dir under another key goes too (a manifest that was
   * invalid and is now readable).
   */
  replaceWarnings(conv: WarningOwner, entries: WarningEntry[]): void {
    const setKey = conv.conversationId !== null ? `c:${conv.conversationId}` : conv.sessionDir ? `d:${conv.sessionDir}` : undefined;
    if (setKey === undefined) {
      throw new EvermeError('internal', 'Warnings need a conversation id or a session directory to be recorded under');
    }
    const merged = new WarningCollector();
    merged.merge(entries.filter((e) => e.count > 0));
    const sessionDir = conv.sessionDir ?? null;
    this.inTransaction(() => {
      this.stmts.deleteWarningEntries.run({ setKey, sessionDir });
      this.stmts.deleteWarningSets.run({ setKey, sessionDir });
      if (merged.size === 0) return;
      const { lastInsertRowid } = this.stmts.insertWarningSet.run({
        setKey,
        conversationId: conv.conversationId,
        sessionId: conv.sessionId,
        source: conv.source,
        historyFile: conv.historyFile ?? null,
        sessionDir,
        createdAtMs: conv.createdAtMs ?? null,
        workspaceDir: conv.workspaceDir ?? null,
        recordedAtMs: Date.now(),
      });
      for (const entry of merged.entries()) {
        this.stmts.insertWarningEntry.run(lastInsertRowid, entry.code, entry.count, JSON.stringify(entry.samples));
      }
    });
  }

  /** Conversations with warnings, oldest first (creation time, then insertion), entries in code order. */
  listWarnings(filter: WarningFilter = {}): ConversationWarnings[] {
    const rows = this.stmts.listWarnings.all({
      conversationId: filter.conversationId ?? null,
      code: filter.code ?? null,
      sinceMs: filter.sinceMs ?? null,
    });
    const bySet = new Map<number, ConversationWarnings>();
    for (const row of rows) {
      const code = warningCodeSchema.safeParse(row.code);
      if (!code.success) continue;
      const samples: WarningEntry['samples'] = parseJsonColumn(row.samples_json, samplesSchema) ?? [];
      let set = bySet.get(row.id);
      if (!set) {
        set = { conversationId: row.conversation_id, sessionId: row.session_id, source: row.source, warnings: [] };
        if (row.history_file !== null) set.historyFile = row.history_file;
        if (row.session_dir !== null) set.sessionDir = row.session_dir;
        if (row.created_at_ms !== null) set.createdAtMs = row.created_at_ms;
        if (row.workspace_dir !== null) set.workspaceDir = row.workspace_dir;
        bySet.set(row.id, set);
      }
      set.warnings.push({ code: code.data, count: row.count, samples });
    }
    const order = (code: string) => WARNING_CODES.indexOf(code as (typeof WARNING_CODES)[number]);
    for (const set of bySet.values()) set.warnings.sort((a, b) => order(a.code) - order(b.code));
    return [...bySet.values()];
  }

  // ── runs ────────────────────────────────────────────────────────────────────────────────────

  startRun(kind: RunKind, params: object): number {
    return Number(this.stmts.startRun.run(kind, Date.now(), JSON.stringify(params)).lastInsertRowid);
  }

  finishRun(id: number, summary: object, status: RunStatus): void {
    this.stmts.finishRun.run(Date.now(), status, JSON.stringify(summary), id);
  }

  lastRun(kind: RunKind): RunRecord | undefined {
    const row = this.stmts.lastRun.get(kind);
    if (!row) return undefined;
    const run: RunRecord = {
      id: row.id,
      kind,
      startedAtMs: row.started_at_ms,
      params: parseJsonColumn(row.params_json, jsonObjectSchema) ?? {},
    };
    if (row.finished_at_ms !== null) run.finishedAtMs = row.finished_at_ms;
    const status = runStatusSchema.safeParse(row.status);
    if (status.success) run.status = status.data;
    const summary = parseJsonColumn(row.summary_json, jsonObjectSchema);
    if (summary) run.summary = summary;
    return run;
  }

  /** The earliest `since` of an import that ran to the end (ok or partial), as it was given. */
  earliestImportSince(): string | undefined {
    let best: { since: string; at: number } | undefined;
    for (const since of this.stmts.importSinces.all()) {
      const parsed = Date.parse(since);
      const at = Number.isNaN(parsed) ? Number.POSITIVE_INFINITY : parsed;
      if (!best || at < best.at || (at === best.at && since < best.since)) best = { since, at };
    }
    return best?.since;
  }

  // ── per-session memory for the hook worker ──────────────────────────────────────────────────

  rememberSessionDir(sessionId: string, dir: string): void {
    this.stmts.rememberSessionDir.run(sessionId, dir);
  }

  sessionDirFor(sessionId: string): string | undefined {
    return this.stmts.sessionDirFor.get(sessionId) ?? undefined;
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
