import type Database from 'better-sqlite3';
import * as z from 'zod';
import { claimantAlive, parseProcessStamp, processStamp } from '../core/process-liveness.js';
import { parseJsonColumn } from './json-column.js';

export type RunKind = 'import' | 'sync' | 'hook';
export type RunStatus = 'ok' | 'partial' | 'failed' | 'cancelled';

export interface RunRecord {
  id: number;
  kind: RunKind;
  startedAtMs: number;
  finishedAtMs?: number;
  status?: RunStatus;
  /** Never finished, and the process that ran it is gone (killed outright): it stopped anywhere. */
  interrupted?: true;
  params: Record<string, unknown>;
  summary?: Record<string, unknown>;
}

interface RunRow {
  id: number;
  started_at_ms: number;
  finished_at_ms: number | null;
  status: string | null;
  params_json: string;
  summary_json: string | null;
  owner: string | null;
}

const jsonObjectSchema = z.record(z.string(), z.unknown());
const runStatusSchema = z.enum(['ok', 'partial', 'failed', 'cancelled']);

/**
 * Imports that covered their range: a failed or cancelled one may have stopped anywhere. Unfinished
 * imports are read too, and count once their owner is dead (see `interrupted`).
 */
const COVERING_IMPORT_STATUSES: readonly RunStatus[] = ['ok', 'partial'];
const COVERING_STATUSES_SQL = COVERING_IMPORT_STATUSES.map((s) => `'${s}'`).join(', ');
const RUN_COLUMNS = 'id, started_at_ms, finished_at_ms, status, params_json, summary_json, owner';

/**
 * A run without a finish whose recorded owner no longer runs: killed outright, it could record
 * nothing. Rows of builds that recorded no owner cannot tell, and stay "running".
 */
function interrupted(row: { finished_at_ms: number | null; owner: string | null }): boolean {
  if (row.finished_at_ms !== null || row.owner === null) return false;
  const stamp = parseProcessStamp(row.owner);
  return stamp !== undefined && !claimantAlive(stamp);
}

function runRecord(kind: RunKind, row: RunRow): RunRecord {
  const run: RunRecord = { id: row.id, kind, startedAtMs: row.started_at_ms, params: parseJsonColumn(row.params_json, jsonObjectSchema) ?? {} };
  if (row.finished_at_ms !== null) run.finishedAtMs = row.finished_at_ms;
  const status = runStatusSchema.safeParse(row.status);
  if (status.success) run.status = status.data;
  if (interrupted(row)) run.interrupted = true;
  const summary = parseJsonColumn(row.summary_json, jsonObjectSchema);
  if (summary) run.summary = summary;
  return run;
}

/** One row per import, sync or hook run: what it was asked, how it ended, its summary, whose it is. */
export class RunStore {
  private readonly stmts;

  constructor(db: Database.Database) {
    this.stmts = {
      start: db.prepare<[string, number, string, string]>('INSERT INTO runs (kind, started_at_ms, params_json, owner) VALUES (?, ?, ?, ?)'),
      finish: db.prepare<[number, string, string, number]>('UPDATE runs SET finished_at_ms = ?, status = ?, summary_json = ? WHERE id = ?'),
      last: db.prepare<[string], RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE kind = ? ORDER BY id DESC LIMIT 1`),
      finishedAfter: db.prepare<[string, number], RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE kind = ? AND id > ? AND status IN (${COVERING_STATUSES_SQL}) ORDER BY id`),
      prune: db.prepare<[string, string, number]>('DELETE FROM runs WHERE kind = ? AND id <= (SELECT id FROM runs WHERE kind = ? ORDER BY id DESC LIMIT 1 OFFSET ?)'),
      importSinces: db.prepare<[], { since: string; finished_at_ms: number | null; owner: string | null }>(
        `SELECT json_extract(params_json, '$.since') AS since, finished_at_ms, owner FROM runs
         WHERE kind = 'import'
           AND (status IN (${COVERING_STATUSES_SQL}) OR (finished_at_ms IS NULL AND owner IS NOT NULL))
           AND json_valid(params_json) AND json_type(params_json, '$.since') = 'text'`,
      ),
    };
  }

  start(kind: RunKind, params: object): number {
    return Number(this.stmts.start.run(kind, Date.now(), JSON.stringify(params), processStamp()).lastInsertRowid);
  }

  finish(id: number, summary: object, status: RunStatus): void {
    this.stmts.finish.run(Date.now(), status, JSON.stringify(summary), id);
  }

  /** Keeps the newest `keep` runs of a kind: hook workers record one per interval per session. */
  prune(kind: RunKind, keep: number): void {
    this.stmts.prune.run(kind, kind, keep);
  }

  last(kind: RunKind): RunRecord | undefined {
    const row = this.stmts.last.get(kind);
    return row && runRecord(kind, row);
  }

  /** Runs of a kind that ran to the end (ok or partial) after run `afterId`, oldest first. */
  finishedAfter(kind: RunKind, afterId: number): RunRecord[] {
    return this.stmts.finishedAfter.all(kind, afterId).map((row) => runRecord(kind, row));
  }

  /**
   * The earliest `since`, as it was given, of an import that ran to the end (ok or partial) or was
   * interrupted: what an interrupted one left is for the next sync to complete.
   */
  earliestImportSince(): string | undefined {
    let best: { since: string; at: number } | undefined;
    for (const row of this.stmts.importSinces.all()) {
      if (row.finished_at_ms === null && !interrupted(row)) continue;
      const parsed = Date.parse(row.since);
      const at = Number.isNaN(parsed) ? Number.POSITIVE_INFINITY : parsed;
      if (!best || at < best.at || (at === best.at && row.since < best.since)) best = { since: row.since, at };
    }
    return best?.since;
  }
}
