/**
 * The host's side of MiniMax Code's session index for tests: files in each schema variant, a host
 * that keeps the index open in WAL mode without checkpointing, another process holding an exclusive
 * lock, and a fingerprint of the files (bytes and mtimes) to show everme left them as they were.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { openHostIndex, putIndexRecords, sessionIndexFile, type IndexRecord, type IndexVariant } from '../../bench/session-index-file.js';
import { repoRoot } from './cli.js';

export { sessionIndexFile, writeSessionIndex, type IndexRecord, type IndexVariant } from '../../bench/session-index-file.js';

export const VARIANTS: readonly IndexVariant[] = ['record_json', '0.5.4', 'newest'];

/** A running host: the index open for writing in WAL mode, never checkpointed, so new rows live only in -wal. */
export function liveHost(dataDir: string, variant: IndexVariant): { db: Database.Database; put(records: readonly IndexRecord[]): void; close(): void } {
  const db = openHostIndex(sessionIndexFile(dataDir), variant);
  db.pragma('wal_autocheckpoint = 0');
  return {
    db,
    put: (records) => putIndexRecords(db, variant, records),
    // Closed without a checkpoint either: a host killed in the middle of its work leaves -wal and -shm.
    close: () => db.close(),
  };
}

/** The files of the index as they are: for each of the main file, -wal and -shm, its bytes' hash and mtime (absent: null). */
export function indexFiles(dataDir: string): Record<string, { sha256: string; mtimeMs: number; size: number } | null> {
  const file = sessionIndexFile(dataDir);
  const out: Record<string, { sha256: string; mtimeMs: number; size: number } | null> = {};
  for (const suffix of ['', '-wal', '-shm']) {
    const f = `${file}${suffix}`;
    if (!fs.existsSync(f)) {
      out[path.basename(f)] = null;
      continue;
    }
    const st = fs.statSync(f);
    out[path.basename(f)] = { sha256: createHash('sha256').update(fs.readFileSync(f)).digest('hex'), mtimeMs: st.mtimeMs, size: st.size };
  }
  return out;
}

/** What must stay exactly as it was: the main file and its -wal, and whether -shm exists (its lock marks may change). */
export function untouchable(dataDir: string): unknown {
  const files = indexFiles(dataDir);
  const shm = Object.keys(files).find((k) => k.endsWith('-shm'))!;
  return { ...files, [shm]: files[shm] === null ? 'absent' : 'present' };
}

/**
 * Another process holding the index with an exclusive lock (`locking_mode = EXCLUSIVE` and an open
 * write transaction), in WAL or rollback-journal mode; resolves once the lock is held.
 */
export async function exclusiveWriter(file: string, journal: 'wal' | 'delete'): Promise<{ child: ChildProcess; stop(): Promise<void> }> {
  const script = `
    const Database = require('better-sqlite3');
    const db = new Database(${JSON.stringify(file)});
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = ${journal === 'wal' ? 'WAL' : 'DELETE'}');
    db.exec('BEGIN EXCLUSIVE');
    db.exec("CREATE TABLE IF NOT EXISTS scratch (a)");
    process.stdout.write('held\\n');
    process.stdin.on('data', () => { db.exec('ROLLBACK'); db.close(); process.exit(0); });
  `;
  const child = spawn(process.execPath, ['-e', script], { cwd: repoRoot, stdio: ['pipe', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the exclusive writer exited (${code})`)));
  });
  return {
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.stdin.write('stop\n');
      }),
  };
}

/** A record for session `sessionId` with sensible times; `extra` overrides. */
export function indexRecord(sessionId: string, extra: Partial<IndexRecord> = {}): IndexRecord {
  return { sessionId, createdAtMs: Date.UTC(2026, 8, 10, 8), updatedAtMs: Date.UTC(2026, 8, 10, 9), sessionKind: 'conversation', visibility: 'visible', ...extra };
}
