/**
 * Holding one session's lock from the test process, as another everme process would: a run that
 * reaches that session waits for it, so the run cannot finish while the hold lasts. A test that
 * must interrupt a run mid-way (SIGKILL, Ctrl-C) holds one session, so the interrupt lands before
 * the run is complete however fast or slow the machine is, and the test can still assert that the
 * first run was incomplete.
 */
import fs from 'node:fs';
import path from 'node:path';
import { openDatabase } from '../../src/store/database.js';

/** The first session id (in id order) a finished state dir holds. */
export function someSessionOf(stateDir: string): string {
  const db = openDatabase(stateDir, { readonly: true });
  try {
    const id = db.prepare<[], string>('SELECT session_id FROM fingerprints ORDER BY session_id LIMIT 1').pluck().get();
    if (id === undefined) throw new Error(`no session in ${stateDir}`);
    return id;
  } finally {
    db.close();
  }
}

/** The session id of the newest session directory under `<data>/v2/sessions` (a run reaches it last). */
export function newestSessionIn(dataDir: string): string {
  const manifests = fs
    .readdirSync(path.join(dataDir, 'v2', 'sessions'), { recursive: true })
    .map(String)
    .filter((rel) => rel.endsWith('manifest.json'))
    .sort();
  const newest = manifests.at(-1);
  if (newest === undefined) throw new Error(`no session under ${dataDir}`);
  return (JSON.parse(fs.readFileSync(path.join(dataDir, 'v2', 'sessions', newest), 'utf8')) as { sessionId: string }).sessionId;
}

/** Takes the session's lock (creating the store when needed) for this live process; returns the release. */
export function holdSessionLock(stateDir: string, sessionId: string): () => void {
  const db = openDatabase(stateDir);
  try {
    db.prepare('INSERT INTO session_locks (session_id, owner, pid, acquired_at_ms) VALUES (?, ?, ?, ?)').run(sessionId, 'test-hold', process.pid, Date.now());
  } finally {
    db.close();
  }
  return () => {
    const rw = openDatabase(stateDir);
    try {
      rw.prepare("DELETE FROM session_locks WHERE session_id = ? AND owner = 'test-hold'").run(sessionId);
    } finally {
      rw.close();
    }
  };
}
