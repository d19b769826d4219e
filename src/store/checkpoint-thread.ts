/**
 * The checkpoint thread beside a `WriterThread`: its own connection to the state file, copying the
 * WAL back into the database every few hundred milliseconds (a PASSIVE checkpoint: it never waits
 * for, nor blocks, a reader or the writer).
 *
 * Why a thread of its own: a checkpoint syncs the WAL and the database file to disk, and on a bulk
 * import that waiting was the writer thread's largest cost (measured: about a third of its time
 * with SQLite's default auto-checkpoint every 1,000 pages, run by whichever connection committed).
 * Here the waiting costs no busy thread anything. The writer keeps a far larger auto-checkpoint of
 * its own as a backstop; it then finds the WAL already copied and only resets it.
 */
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { z } from 'zod';
import { BUSY_TIMEOUT_MS, databasePath } from './database.js';

const threadDataSchema = z.object({
  stateDir: z.string().min(1),
  closed: z.instanceof(SharedArrayBuffer),
  intervalMs: z.number().int().positive(),
});

export type CheckpointRequest = { kind: 'close' };

const port = parentPort;
if (!port) throw new Error('checkpoint-thread must run as a worker thread');
const init = threadDataSchema.parse(workerData);
const closedFlag = new Int32Array(init.closed);

let db: Database.Database | undefined;
try {
  // The writer thread creates and migrates the file; this connection only copies pages.
  db = new Database(databasePath(init.stateDir), { fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
} catch {
  // No checkpoints from here then: the writer's own auto-checkpoint still bounds the WAL.
  db = undefined;
}

const timer = setInterval(() => {
  try {
    db?.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // Busy or failed: the next tick (or the writer's own auto-checkpoint) tries again.
  }
}, init.intervalMs);

port.on('message', (request: CheckpointRequest) => {
  if (request.kind !== 'close') return;
  clearInterval(timer);
  try {
    db?.close();
  } finally {
    Atomics.store(closedFlag, 0, 1);
    Atomics.notify(closedFlag, 0);
    port.close();
  }
});
