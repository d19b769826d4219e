import type Database from 'better-sqlite3';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { builtFile } from '../core/package-root.js';
import { EvermeError, errorFromData, type EvermeErrorData } from '../core/errors.js';
import { SEMI_SPACE_MB } from '../core/heap-cap.js';
import { LocalCommitter, writeTransferList, type EncodedWrite, type SessionWrite } from './local-commit.js';
import { WRITE_TURN_BYTES, WriteTurn } from './write-turn.js';

export type { EncodedWrite, SessionWrite };

/** Where the embedded store's writes are committed: on the caller's connection, or on a thread's. */
export interface LocalWriter {
  /**
   * Resolves once `write` committed in one transaction; rejects (an EvermeError) with none of it
   * committed. `bytes` (about what the write holds) counts towards the backlog until then. The
   * write's buffers may be moved to another thread: the caller must not use them again.
   */
  write(write: EncodedWrite, bytes?: number): Promise<void>;
  /**
   * Resolves once the writes still waiting for their commit hold at most `maxBytes`: what a bulk run
   * awaits before it reads another session, so reading runs ahead of committing by a bounded amount.
   */
  backlogBelow(maxBytes: number): Promise<void>;
  /**
   * The run was interrupted: writes not yet being committed are given up (rejected as `cancelled`),
   * so Ctrl-C does not wait for the backlog. A transaction already under way still commits whole.
   */
  cancelQueued(): void;
  /** Stops the writer; returns once its connection is closed. Nothing may be pending. */
  close(): void;
}

/** Commits on the engine's own connection, before `write` returns: small runs, hooks, tests of sources. */
export class InlineWriter implements LocalWriter {
  private readonly committer: LocalCommitter;

  constructor(db: Database.Database) {
    this.committer = new LocalCommitter(db);
  }

  /** Commits before it returns; a failure is a rejection, never a throw, as with the thread. */
  write(write: EncodedWrite): Promise<void> {
    try {
      this.committer.commit(write);
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  backlogBelow(): Promise<void> {
    return Promise.resolve();
  }

  cancelQueued(): void {}

  close(): void {}
}

// ── the thread's protocol ─────────────────────────────────────────────────────────────────────

export interface WriterThreadData {
  stateDir: string;
  /** One Int32: the thread sets it to 1 once its connection is closed, so `close()` can wait for it. */
  closed: SharedArrayBuffer;
  /** The `WriteTurn` both connections of this process write in. */
  turn: SharedArrayBuffer;
  /**
   * One Int32 the main thread sets to 1 when the run is interrupted: the thread checks it between
   * the sessions of a group, so Ctrl-C never waits for a whole group (or the backlog) to commit.
   */
  cancelled: SharedArrayBuffer;
}

export type WriterRequest = { kind: 'write'; id: number; write: EncodedWrite; bytes: number } | { kind: 'cancel' } | { kind: 'close' };

export interface WriterReply {
  id: number;
  error?: EvermeErrorData;
}

/**
 * The writer thread's old generation. Its live data is the commit backlog (see LocalSink) and one
 * group; without a bound V8 let the heap grow with the garbage of the deserialised writes, and the
 * thread alone took ~100 MB of the process's RSS on the 1x import. Its young generation is the
 * main thread's (three semi-spaces), also where no flag caps the process (a sync).
 */
const WRITER_HEAP_MB = 96;

/** How long `close()` waits for the thread to finish its transaction and close its connection. */
const CLOSE_WAIT_MS = 10_000;

/**
 * Commits on a worker thread that owns a second connection to the same file, so the main thread
 * reads and converts the next sessions while this one indexes and commits. The promise of a write
 * resolves only after its commit, which is what bounds how far the main thread runs ahead (one
 * write in flight per session being delivered). If the thread dies, every pending write is
 * rejected, never left hanging.
 */
export class WriterThread implements LocalWriter {
  private readonly worker: Worker;
  private readonly closedFlag: Int32Array;
  private readonly cancelledFlag: Int32Array;
  private readonly pending = new Map<number, { resolve: () => void; reject: (error: EvermeError) => void; bytes: number }>();
  private backlogBytes = 0;
  private readonly backlogWaiters: Array<{ maxBytes: number; resolve: () => void }> = [];
  /** The main thread's side of the turn it takes for its own writes (see `ThreadSessionLocks`). */
  readonly turn: WriteTurn;
  private nextId = 1;
  private stopped: EvermeError | undefined;

  constructor(stateDir: string, threadUrl: URL) {
    const closed = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
    this.closedFlag = new Int32Array(closed);
    const turn = new SharedArrayBuffer(WRITE_TURN_BYTES);
    this.turn = new WriteTurn(turn);
    const cancelled = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
    this.cancelledFlag = new Int32Array(cancelled);
    const data: WriterThreadData = { stateDir, closed, turn, cancelled };
    this.worker = new Worker(threadUrl, { workerData: data, resourceLimits: { maxOldGenerationSizeMb: WRITER_HEAP_MB, maxYoungGenerationSizeMb: 3 * SEMI_SPACE_MB } });
    this.worker.on('message', (reply: WriterReply) => this.settle(reply));
    this.worker.on('error', (err) => this.stop(new EvermeError('internal', `The store writer thread failed: ${err.message}`, { cause: err })));
    this.worker.on('exit', (code) => this.stop(new EvermeError('internal', `The store writer thread exited (code ${code})`)));
    // Referenced only while a write is pending: a process awaiting a commit must not exit, and an
    // idle thread must not keep one alive.
    this.worker.unref();
  }

  /** False once the thread is gone: its writes are then rejected at once. */
  get running(): boolean {
    return this.stopped === undefined;
  }

  write(write: EncodedWrite, bytes = 0): Promise<void> {
    if (this.stopped) return Promise.reject(this.stopped);
    const id = this.nextId++;
    // Encoded by the plan phase, so the thread that commits receives bytes it binds as they are,
    // moved rather than copied (see MessageRows).
    const request: WriterRequest = { kind: 'write', id, write, bytes };
    return new Promise<void>((resolve, reject) => {
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve, reject, bytes });
      this.backlogBytes += bytes;
      this.worker.postMessage(request, writeTransferList(request.write));
    });
  }

  backlogBelow(maxBytes: number): Promise<void> {
    if (this.backlogBytes <= maxBytes || this.stopped) return Promise.resolve();
    return new Promise((resolve) => this.backlogWaiters.push({ maxBytes, resolve }));
  }

  cancelQueued(): void {
    if (this.stopped) return;
    Atomics.store(this.cancelledFlag, 0, 1);
    // Wakes a thread that waits for its group to grow; it then answers the queue `cancelled`.
    const request: WriterRequest = { kind: 'cancel' };
    this.worker.postMessage(request);
  }

  private wakeBacklogWaiters(): void {
    for (let i = this.backlogWaiters.length - 1; i >= 0; i--) {
      const waiter = this.backlogWaiters[i]!;
      if (this.backlogBytes <= waiter.maxBytes || this.stopped) {
        this.backlogWaiters.splice(i, 1);
        waiter.resolve();
      }
    }
  }

  close(): void {
    if (this.stopped) return;
    const request: WriterRequest = { kind: 'close' };
    this.worker.postMessage(request);
    // A synchronous join: the engine closes its own connection right after, and a caller may
    // remove the state directory as soon as close() returned.
    Atomics.wait(this.closedFlag, 0, 0, CLOSE_WAIT_MS);
    this.stop(new EvermeError('internal', 'The store writer was closed'));
    void this.worker.terminate();
  }

  private settle(reply: WriterReply): void {
    const waiter = this.pending.get(reply.id);
    if (!waiter) return;
    this.pending.delete(reply.id);
    this.backlogBytes -= waiter.bytes;
    if (this.pending.size === 0) this.worker.unref();
    if (reply.error) waiter.reject(errorFromData(reply.error));
    else waiter.resolve();
    this.wakeBacklogWaiters();
  }

  private stop(reason: EvermeError): void {
    if (this.stopped) return;
    this.stopped = reason;
    this.turn.reclaimFromWriter();
    for (const waiter of this.pending.values()) waiter.reject(reason);
    this.pending.clear();
    this.backlogBytes = 0;
    this.wakeBacklogWaiters();
    this.worker.unref();
  }
}

/**
 * The thread entry of the build (see `builtFile`). Sources run by a test runner have none (and a
 * thread cannot load `.ts`): they commit inline.
 */
export function writerThreadUrl(): URL | undefined {
  const file = builtFile(import.meta.url, 'src/store/local-writer-thread.js');
  return file === undefined ? undefined : pathToFileURL(file);
}

/**
 * A thread costs a second connection, an isolate and tens of ms to start: worth it only for a bulk
 * run. Past this many conversations written by one engine the run is one (a hook worker writes a
 * single conversation, a sync of a few changed sessions stays below it).
 */
export const THREAD_AFTER_CONVERSATIONS = 8;

export interface ScalingWriterOptions {
  /** The state directory the thread opens its connection in. */
  stateDir: string;
  threadUrl?: URL;
  threadAfter?: number;
}

/**
 * Commits inline until the engine has written to more than `threadAfter` conversations, then on a
 * writer thread. Inline commits finish before they return, so switching never reorders writes. A
 * thread that died hands the remaining writes back to the inline path.
 */
export class ScalingWriter implements LocalWriter {
  private readonly inline: InlineWriter;
  private started: WriterThread | undefined;
  private readonly seen = new Set<string>();
  private threadUrl: URL | undefined;
  private readonly threadAfter: number;

  constructor(
    private readonly db: Database.Database,
    private readonly opts: ScalingWriterOptions,
  ) {
    this.inline = new InlineWriter(db);
    this.threadUrl = opts.threadUrl ?? writerThreadUrl();
    this.threadAfter = opts.threadAfter ?? THREAD_AFTER_CONVERSATIONS;
  }

  backlogBelow(maxBytes: number): Promise<void> {
    return this.thread()?.backlogBelow(maxBytes) ?? Promise.resolve();
  }

  cancelQueued(): void {
    this.thread()?.cancelQueued();
  }

  write(write: EncodedWrite, bytes = 0): Promise<void> {
    if (this.started === undefined && this.threadUrl !== undefined) {
      this.seen.add(write.conversation.conversationId);
      if (this.seen.size > this.threadAfter) {
        this.seen.clear();
        try {
          this.started = new WriterThread(this.opts.stateDir, this.threadUrl);
          // The engine's connection commits only small writes (session locks) from now on: it must
          // not be the one to run a checkpoint (and wait for the disk) on the main thread. Profiled:
          // lock releases that ran SQLite's auto-checkpoint cost the main thread ~0.3 s of the 1x
          // import. The writer thread's connection keeps the default and checkpoints as before.
          this.db.pragma('wal_autocheckpoint = 0');
        } catch {
          // No thread to be had (resource limits): inline is slower, never wrong.
          this.threadUrl = undefined;
        }
      }
    }
    const thread = this.thread();
    if (thread) return thread.write(write, bytes);
    // A thread that died hands its writes back to this connection: checkpoints too.
    if (this.started) this.restoreAutocheckpoint();
    return this.inline.write(write);
  }

  private restoreAutocheckpoint(): void {
    if (this.autocheckpointRestored || !this.db.open) return;
    this.autocheckpointRestored = true;
    this.db.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
  }

  private autocheckpointRestored = false;

  /** The writer thread, while one runs: the engine's own writes (session locks) then take turns with it. */
  thread(): WriterThread | undefined {
    return this.started?.running ? this.started : undefined;
  }

  close(): void {
    if (!this.started) return;
    this.started.close();
    // SQLite's default again, for whatever this connection still writes before it closes.
    this.restoreAutocheckpoint();
  }
}

const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;
