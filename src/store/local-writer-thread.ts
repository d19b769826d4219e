/**
 * The writer thread behind `WriterThread`: its own connection to the state file, committing the
 * writes the main thread sends, in order, and answering each with its outcome.
 */
import type Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import * as z from 'zod';
import { errorData, EvermeError } from '../core/errors.js';
import { openDatabase, pagesOf } from './database.js';
import { LocalCommitter, storeWriteError, type EncodedWrite } from './local-commit.js';
import type { WriterReply, WriterRequest } from './local-writer.js';
import { groupLength } from './write-group.js';
import { WriteTurn } from './write-turn.js';

const threadDataSchema = z.object({
  stateDir: z.string().min(1),
  closed: z.instanceof(SharedArrayBuffer),
  turn: z.instanceof(SharedArrayBuffer),
  cancelled: z.instanceof(SharedArrayBuffer),
});

/** The writer connection's page cache (see where it is set). */
const WRITER_CACHE_KIB = 16 * 1024;
/**
 * How much WAL the writer lets accumulate before it checkpoints it into the database. A checkpoint
 * waits for the disk twice (it syncs the WAL, then the database file): at SQLite's default of 1,000
 * pages (4 MB of 4 KiB pages) every group commit ran one, and on the 10x bench tree the writer
 * thread waited 11.9 s in 1,215 fsyncs (strace) of its ~52 s of commits. At ~40 MB (10,000 such
 * pages), commits took 44 s against 50 s in the same hour, and a page rewritten by several commits
 * in between (index interior pages, the FTS structure) is copied back once. Counted in bytes, as
 * stores differ in page size (see PAGE_SIZE).
 */
const WRITER_AUTOCHECKPOINT_BYTES = 40 * 1024 * 1024;

const port = parentPort;
if (!port) throw new Error('local-writer-thread must run as a worker thread');
const init = threadDataSchema.parse(workerData);
const closedFlag = new Int32Array(init.closed);
const cancelledFlag = new Int32Array(init.cancelled);
const interrupted = (): boolean => Atomics.load(cancelledFlag, 0) === 1;
const turn = new WriteTurn(init.turn);

let db: Database.Database | undefined;
let committer: LocalCommitter | undefined;
let openFailure: EvermeError | undefined;
try {
  // Opening may write (WAL mode, a migration check): in this thread's turn like every write.
  turn.takeWriter();
  db = openDatabase(init.stateDir);
  // A group commits MiBs of messages and index rows: with SQLite's default 2 MB page cache it spilled
  // dirty pages mid-transaction. Measured on the 1x import, five interleaved runs each: 16 MB was
  // ~4.5% faster than the default at the same peak RSS; 32 MB no faster than 16, and ~20 MB larger.
  db.pragma(`cache_size = -${WRITER_CACHE_KIB}`);
  db.pragma(`wal_autocheckpoint = ${pagesOf(db, WRITER_AUTOCHECKPOINT_BYTES)}`);
  // A bulk loader: while no word is common (a cold import), the term index's counting waits for
  // the end of the run (see TermIndexOptions.bulk and close below).
  committer = new LocalCommitter(db, { bulk: true });
} catch (err) {
  // Kept, not thrown: every write is answered with it, so each session fails with the reason.
  openFailure = storeWriteError(err);
} finally {
  turn.give();
}

let queue: Array<{ id: number; write: EncodedWrite; bytes: number; at: number }> = [];
let queuedBytes = 0;
/** Bounds one transaction (and what a failed group retries one by one). */
const MAX_GROUP_WRITES = 512;
/**
 * Bounds a transaction's bytes to a third of the main thread's commit backlog (see LocalSink): a
 * group still counts against that backlog while it commits, and one as large as the backlog left
 * the reader nothing to read meanwhile. On the 10x bench tree the reader waited 15 s of a 73 s
 * import for commits with whole-backlog groups; 6 s of 62 s with this bound and a 24 MiB backlog.
 */
const MAX_GROUP_BYTES = 8 * 1024 * 1024;
let scheduled = false;

function reply(id: number, error: EvermeError | undefined): void {
  const message: WriterReply = error ? { id, error: errorData(error) } : { id };
  port!.postMessage(message);
}

/** Commits a group of writes in one transaction (see `LocalCommitter.commitMany`), in this thread's turn. */
function commitGroup(writes: readonly EncodedWrite[]): Array<EvermeError | undefined> {
  if (!committer) return writes.map(() => openFailure);
  turn.takeWriter();
  try {
    return committer.commitMany(writes, interrupted);
  } catch (err) {
    const error = storeWriteError(err);
    return writes.map(() => error);
  } finally {
    turn.give();
  }
}

/**
 * The writes that queued up go into the next group (see GROUP_MIN_BYTES, MAX_GROUP_BYTES): one
 * transaction, answered write by write once it committed.
 *
 * A group waits to grow to this many bytes, for at most GROUP_MAX_WAIT_MS after its first write
 * arrived. Every transaction costs an FTS segment (merged again later) and a WAL commit: grouped
 * as writes happened to queue up, groups averaged 3.5 sessions on the 1x import; waiting for a few
 * MiB makes them tens of sessions. Reading is not held up meanwhile (the commit backlog is bounded
 * in bytes, see LocalSink), and a search sees a session at most this much later.
 */
const GROUP_MIN_BYTES = 4 * 1024 * 1024;
const GROUP_MAX_WAIT_MS = 50;

function drain(): void {
  scheduled = false;
  if (interrupted()) return cancelQueued();
  const oldest = queue[0];
  if (oldest && queuedBytes < GROUP_MIN_BYTES && queue.length < MAX_GROUP_WRITES) {
    const wait = oldest.at + GROUP_MAX_WAIT_MS - performance.now();
    if (wait > 0) {
      scheduled = true;
      setTimeout(drain, wait);
      return;
    }
  }
  const group = queue.splice(0, groupLength(queue, MAX_GROUP_WRITES, MAX_GROUP_BYTES));
  for (const entry of group) queuedBytes -= entry.bytes;
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

/** The main thread was interrupted: what waits in the queue is answered `cancelled`, never committed. */
function cancelQueued(): void {
  const dropped = queue;
  queue = [];
  queuedBytes = 0;
  const cancelled = new EvermeError('cancelled', 'Interrupted before this session was committed');
  for (const entry of dropped) reply(entry.id, cancelled);
}

/**
 * The words the run's deferred writes made common. Not after Ctrl-C, which must not wait for it:
 * the index then has no common word, every query is scored by FTS5 (exact, slower), and the next
 * run makes them common. A failure leaves the same, so it is not the run's failure.
 */
function finishTermIndex(): void {
  if (!committer || interrupted()) return;
  turn.takeWriter();
  try {
    committer.finish();
  } catch {
    // See above: nothing committed is lost or wrong without it.
  } finally {
    turn.give();
  }
}

function close(): void {
  // Writes still queued were given up by the main thread (it rejected them): never commit them.
  queue = [];
  try {
    finishTermIndex();
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
      queue.push({ id: request.id, write: request.write, bytes: request.bytes, at: performance.now() });
      queuedBytes += request.bytes;
      return schedule();
    case 'cancel':
      return cancelQueued();
    case 'close':
      return close();
  }
});
