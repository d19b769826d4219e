import type Database from 'better-sqlite3';
import type { SinkName } from '../config/settings.js';

/** Identifies a history file's contents cheaply: unchanged fingerprint ⇒ nothing new to read. */
export interface SessionFingerprint {
  file: string;
  size: number;
  mtimeMs: number;
  ino: number;
  headHash: string;
}

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

/**
 * Each sink's file marks: the fingerprint of the history file it last took whole, per session. A
 * sink whose fingerprint still matches the file has nothing new to take from it.
 */
export class FingerprintStore {
  private readonly stmts;

  constructor(db: Database.Database) {
    this.stmts = {
      get: db.prepare<[string, string], FingerprintRow>('SELECT file, size, mtime_ms, ino, head_hash FROM fingerprints WHERE sink = ? AND session_id = ?'),
      set: db.prepare<[string, string, string, number, number, number, string]>(
        `INSERT INTO fingerprints (sink, session_id, file, size, mtime_ms, ino, head_hash) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (sink, session_id) DO UPDATE SET
           file = excluded.file, size = excluded.size, mtime_ms = excluded.mtime_ms, ino = excluded.ino, head_hash = excluded.head_hash`,
      ),
      clear: db.prepare<[string, string]>('DELETE FROM fingerprints WHERE sink = ? AND session_id = ?'),
      count: db.prepare<[string], number>('SELECT count(*) FROM fingerprints WHERE sink = ?').pluck(),
      all: db.prepare<[string], FingerprintRow & { session_id: string }>('SELECT session_id, file, size, mtime_ms, ino, head_hash FROM fingerprints WHERE sink = ?'),
    };
  }

  get(sink: SinkName, sessionId: string): SessionFingerprint | undefined {
    const row = this.stmts.get.get(sink, sessionId);
    return row ? fingerprintOf(row) : undefined;
  }

  /** Every session's fingerprint for `sink`, in one query: what a run over many sessions reads at its start. */
  allOf(sink: SinkName): Map<string, SessionFingerprint> {
    const all = new Map<string, SessionFingerprint>();
    for (const row of this.stmts.all.iterate(sink)) all.set(row.session_id, fingerprintOf(row));
    return all;
  }

  /** How many sessions the sink took whole at least once. */
  count(sink: SinkName): number {
    return this.stmts.count.get(sink) ?? 0;
  }

  set(sink: SinkName, sessionId: string, fp: SessionFingerprint): void {
    this.stmts.set.run(sink, sessionId, fp.file, fp.size, fp.mtimeMs, fp.ino, fp.headHash);
  }

  clear(sink: SinkName, sessionId: string): void {
    this.stmts.clear.run(sink, sessionId);
  }
}
