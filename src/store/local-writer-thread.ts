/**
 * The writer thread behind `WriterThread`: its own connection to the state file, committing the
 * writes the main thread sends, in order, and answering each with its outcome.
 */
import type Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { z } from 'zod';
import type { EvermeError } from '../core/errors.js';
import { openDatabase } from './database.js';
import { LocalCommitter, storeWriteError, type SessionWrite } from './local-commit.js';
import { toWriterFailure, type WriterReply, type WriterRequest } from './local-writer.js';
import { WriteTurn } from './write-turn.js';

const threadDataSchema = z.object({
  stateDir: z.string().min(1),
  closed: z.instanceof(SharedArrayBuffer),
  turn: z.instanceof(SharedArrayBuffer),
});

const port = parentPort;
if (!port) throw new Error('local-writer-thread must run as a worker thread');
const init = threadDataSchema.parse(workerData);
const closedFlag = new Int32Array(init.closed);
const turn = new WriteTurn(init.turn);

let db: Database.Database | undefined;
let committer: LocalCommitter | undefined;
let openFailure: EvermeError | undefined;
try {
  // Opening may write (WAL mode, a migration check): in this thread's turn like every write.
  turn.takeWriter();
  db = openDatabase(init.stateDir);
  committer = new LocalCommitter(db);
} catch (err) {
  // Kept, not thrown: every write is answered with it, so each session fails with the reason.
  openFailure = storeWriteError(err);
} finally {
  turn.give();
}

let queue: Array<{ id: number; write: SessionWrite }> = [];
let scheduled = false;

function reply(id: number, error: EvermeError | undefined): void {
  const message: WriterReply = error ? { id, error: toWriterFailure(error) } : { id };
  port!.postMessage(message);
}

function commit(write: SessionWrite): EvermeError | undefined {
  if (!committer) return openFailure;
  turn.takeWriter();
  try {
    committer.commit(write);
    return undefined;
  } catch (err) {
    return storeWriteError(err);
  } finally {
    turn.give();
  }
}

/**
 * One write per turn of the event loop, each its own transaction and answered at once. Grouping
 * queued writes into one commit was measured slower: answering them together makes the sessions
 * waiting on them restart together, and main thread and writer then take turns being idle.
 */
function drain(): void {
  scheduled = false;
  const next = queue.shift();
  if (next) reply(next.id, commit(next.write));
  schedule();
}

function schedule(): void {
  // Messages that arrived during the last commit are all delivered before this runs.
  if (!scheduled && queue.length > 0) {
    scheduled = true;
    setImmediate(drain);
  }
}

function close(): void {
  // Writes still queued were given up by the main thread (it rejected them): never commit them.
  queue = [];
  try {
    db?.close();
  } finally {
    Atomics.store(closedFlag, 0, 1);
    Atomics.notify(closedFlag, 0);
    port!.close();
  }
}

port.on('message', (request: WriterRequest) => {
  switch (request.kind) {
    case 'write':
      queue.push({ id: request.id, write: request.write });
      return schedule();
    case 'close':
      return close();
  }
});
