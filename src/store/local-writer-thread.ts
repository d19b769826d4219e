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
/** Bounds one transaction (and what a failed group retries one by one). */
const MAX_GROUP_WRITES = 64;
let scheduled = false;

function reply(id: number, error: EvermeError | undefined): void {
  const message: WriterReply = error ? { id, error: toWriterFailure(error) } : { id };
  port!.postMessage(message);
}

/** Commits a group of writes in one transaction (see `LocalCommitter.commitMany`), in this thread's turn. */
function commitGroup(writes: readonly SessionWrite[]): Array<EvermeError | undefined> {
  if (!committer) return writes.map(() => openFailure);
  turn.takeWriter();
  try {
    return committer.commitMany(writes);
  } catch (err) {
    const error = storeWriteError(err);
    return writes.map(() => error);
  } finally {
    turn.give();
  }
}

/**
 * Every write that queued up while the last group committed goes into the next group: one
 * transaction, answered write by write once it committed. A group is never held back to grow: the
 * sessions waiting on it are what keep the main thread reading, so the first write is committed as
 * soon as the thread is free, and the group size follows the load by itself (about as many writes as
 * sessions in flight).
 */
function drain(): void {
  scheduled = false;
  const group = queue.splice(0, MAX_GROUP_WRITES);
  if (group.length > 0) {
    const outcomes = commitGroup(group.map((entry) => entry.write));
    group.forEach((entry, i) => reply(entry.id, outcomes[i]));
  }
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
