import { statfsSync } from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { LocalStore } from '../../store/local-store.js';
import { InlineWriter, type LocalWriter } from '../../store/local-writer.js';
import type { MessageRows } from '../../store/message-rows.js';
import type { ConversationMeta, Handoff, PlanPart, Rekey, SessionContext, SessionEnd, SessionStateWrite, SessionTally, Sink, SinkSession } from '../sink.js';

/** Past this many held messages, or bytes, a session's rows are committed early, to bound memory. */
const MAX_HELD_MESSAGES = 5000;
const MAX_HELD_BYTES = 8 * 1024 * 1024;
/**
 * How far reading may run ahead of the writer thread's commits (bytes of sessions read and waiting
 * for their commit). Large enough that the thread commits many sessions per transaction (one FTS
 * segment each, where a transaction per session cost twice the indexing) while the reader goes on
 * reading (a group is at most a third of this, see local-writer-thread), small enough for the
 * memory bound. A MiB of backlog is held once, as the encoded bytes moved to the writer thread
 * (see MessageRows); as objects it was held twice and 12 MiB peaked at 217–226 MB on the 1x import.
 * 24 MiB now peaks at ~217 MB on the 10x tree, where the reader waited 6 s for commits, not 15 s.
 */
export const MAX_COMMIT_BACKLOG_BYTES = 24 * 1024 * 1024;

/**
 * Free space under which the disk counts as nearly full (`Sink.nearlyFull`): a few sessions' commits
 * (a held session commits at 8 MiB of rows, more with its index) could fill it. Above it, the store
 * commits beside the gateway's requests, as it always did; below it, after their marks.
 */
const NEARLY_FULL_BYTES = 64 * 1024 * 1024;

/**
 * The embedded store: a stored message IS its high-water mark (its key is unique per
 * conversation), so messages and marks can never disagree and nothing is written twice.
 * A session's rows (encoded by the plan phase, see MessageRows) are held and committed together
 * with its warnings and fingerprint at its end (or early, when many are held): a commit per request
 * cost more than the indexing itself on a cold import, and grouping changes nothing about what
 * commits together. Commits go through a `LocalWriter` (inline, or a writer thread for bulk runs);
 * reads and the rare retraction use the engine's own connection.
 */
export class LocalSink implements Sink {
  readonly takes = 'rows' as const;
  readonly name = 'local' as const;
  /** A session's rows, warnings and fingerprint commit together, so one it is given nothing for leaves nothing to commit. */
  readonly endsUnchanged = false;
  private readonly store: LocalStore;
  /** Runs whose Ctrl-C already gives up the writes still queued (one listener per run, not per session). */
  private readonly watched = new WeakSet<AbortSignal>();

  constructor(
    private readonly db: Database.Database,
    private readonly writer: LocalWriter = new InlineWriter(db),
  ) {
    this.store = new LocalStore(db);
  }

  /** One statfs per session: microseconds, where a full disk costs the gateway a resend. */
  nearlyFull(): boolean {
    try {
      const fs = statfsSync(path.dirname(this.db.name));
      return fs.bavail * fs.bsize < NEARLY_FULL_BYTES;
    } catch {
      // An in-memory database (a dry run), or a directory gone: nothing to protect.
      return false;
    }
  }

  deliveredKeys(conversationId: string): Set<string> {
    return this.store.keysOf(conversationId);
  }

  /** A bulk run reads the next session only once the commits it waits for are few enough. */
  async begin(context: SessionContext): Promise<SinkSession> {
    const signal = context.signal;
    if (signal && !this.watched.has(signal)) {
      this.watched.add(signal);
      // Ctrl-C: a session read but not yet committed is given up whole, not waited for.
      signal.addEventListener('abort', () => this.writer.cancelQueued(), { once: true });
    }
    await this.writer.backlogBelow(MAX_COMMIT_BACKLOG_BYTES);
    return new LocalSession(this.store, this.writer);
  }

  close(): void {
    this.writer.close();
  }
}

class LocalSession implements SinkSession {
  readonly tally: SessionTally = { requests: 0, messages: 0, removed: 0, invalidResponses: [], warnings: [] };
  private held: MessageRows[] = [];
  private heldMessages = 0;
  private heldRequests = 0;
  private heldBytes = 0;

  constructor(
    private readonly store: LocalStore,
    private readonly writer: LocalWriter,
  ) {}

  /*
   * Neither `deliver` nor `finish` awaits the commit it starts: the suspended frame of an async
   * function would keep its locals (the session's rows) alive until the writer thread committed
   * them, though they were moved to it when posted. Measured on the 1x import: the main thread's
   * live heap after a full GC peaked at 40 MB this way, 24 MB without.
   */
  deliver(part: PlanPart): Promise<void> {
    this.heldRequests += part.requestCount;
    if (part.rows) this.held.push(part.rows);
    this.heldMessages += part.messageCount;
    this.heldBytes += part.bytes;
    if (this.heldMessages < MAX_HELD_MESSAGES && this.heldBytes < MAX_HELD_BYTES) return Promise.resolve();
    return this.commit(part.conversation);
  }

  retract(conversation: ConversationMeta, keys: string[]): void {
    this.tally.removed += this.store.removeMessages(conversation.conversationId, keys);
  }

  /** Rare (an upgrade's first read of a compacted ledger), so on the engine's connection, as `retract`. */
  rekey(conversation: ConversationMeta, moves: readonly Rekey[]): void {
    this.store.rekeyMessages(conversation.conversationId, moves);
  }

  finish({ conversation, state }: SessionEnd): Promise<Handoff> {
    if (!state) return Promise.resolve({ durable: Promise.resolve() });
    const durable = this.commit(conversation, state);
    // Awaited by the caller once every sink holds the session; a failure meanwhile is not unhandled.
    durable.catch(() => undefined);
    return Promise.resolve({ durable });
  }

  abandon(): void {
    this.take();
  }

  /**
   * Commits the rows held; their messages count as delivered once committed, never when handed over:
   * a write that fails (a full disk) delivered nothing, and the summary and `everme status` say so.
   */
  private commit(conversation: ConversationMeta, state?: SessionStateWrite): Promise<void> {
    const messages = this.heldMessages;
    const requests = this.heldRequests;
    const bytes = this.takeBytes();
    const committed = this.writer.write({ conversation, rows: this.take(), ...(state ? { state } : {}) }, bytes);
    return committed.then(() => {
      this.tally.messages += messages;
      this.tally.requests += requests;
    });
  }

  private take(): MessageRows[] {
    const rows = this.held;
    this.held = [];
    this.heldMessages = 0;
    this.heldRequests = 0;
    return rows;
  }

  private takeBytes(): number {
    const bytes = this.heldBytes;
    this.heldBytes = 0;
    return bytes;
  }
}
