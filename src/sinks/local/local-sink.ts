import type Database from 'better-sqlite3';
import type { KeyedMessage } from '../../core/agent-message.js';
import { LocalStore } from '../../store/message-store.js';
import { InlineWriter, type LocalWriter } from '../../store/local-writer.js';
import type { ConversationMeta, DeliveryReceipt, DeliveryRequest, RetractOutcome, SessionStateWrite, Sink } from '../sink.js';

/** Past this many held messages, or bytes, a session's requests are committed early, to bound memory. */
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
 * The embedded store: a stored message IS its high-water mark (its key is unique per
 * conversation), so messages and marks can never disagree and nothing is written twice.
 * Requests are held per conversation and committed together with the session's warnings and
 * fingerprint at its end (or early, when many are held): a commit per request cost more than the
 * indexing itself on a cold import, and grouping changes nothing about what commits together.
 * Commits go through a `LocalWriter` (inline, or a writer thread for bulk runs); reads and the rare
 * retraction use the engine's own connection.
 */
export class LocalSink implements Sink {
  readonly name = 'local' as const;
  private readonly store: LocalStore;
  private readonly held = new Map<string, { conversation: ConversationMeta; messages: KeyedMessage[]; bytes: number }>();

  constructor(
    db: Database.Database,
    private readonly writer: LocalWriter = new InlineWriter(db),
  ) {
    this.store = new LocalStore(db);
  }

  /*
   * Neither `deliver` nor `finishSession` awaits the commit it starts: the suspended frame of an
   * async function would keep its locals (the session's messages) alive until the writer thread
   * committed them, though they were copied to it when posted. Measured on the 1x import: the main
   * thread's live heap after a full GC peaked at 40 MB this way, 24 MB without.
   */
  deliver(request: DeliveryRequest): Promise<DeliveryReceipt> {
    const id = request.conversation.conversationId;
    let entry = this.held.get(id);
    if (!entry) {
      entry = { conversation: request.conversation, messages: [], bytes: 0 };
      this.held.set(id, entry);
    }
    entry.conversation = request.conversation;
    for (let i = 0; i < request.messages.length; i++) entry.messages.push({ key: request.keys[i]!, message: request.messages[i]! });
    entry.bytes += request.bytes ?? 0;
    if (entry.messages.length >= MAX_HELD_MESSAGES || entry.bytes >= MAX_HELD_BYTES) {
      const { messages, bytes } = entry;
      entry.messages = [];
      entry.bytes = 0;
      return this.writer.write({ conversation: entry.conversation, messages }, bytes).then(() => ({}));
    }
    return Promise.resolve({});
  }

  cancelPending(): void {
    this.writer.cancelQueued();
  }

  /** A bulk run reads the next session only once the commits it waits for are few enough. */
  readyForMore(): Promise<void> {
    return this.writer.backlogBelow(MAX_COMMIT_BACKLOG_BYTES);
  }

  pendingFlush(): undefined {
    return undefined;
  }
  claimPendingFlush(): undefined {
    return undefined;
  }
  releaseFlushClaim(): void {}

  deliveredKeys(conversationId: string): Set<string> {
    return this.store.keysOf(conversationId);
  }

  retract(conversation: ConversationMeta, keys: string[]): RetractOutcome {
    return { removed: this.store.removeMessages(conversation.conversationId, keys), irreversible: false };
  }

  finishSession(conversation: ConversationMeta, state: SessionStateWrite): Promise<void> {
    const entry = this.held.get(conversation.conversationId);
    this.held.delete(conversation.conversationId);
    return this.writer.write({ conversation, messages: entry?.messages ?? [], state }, entry?.bytes ?? 0);
  }

  abandonSession(conversationId: string): void {
    this.held.delete(conversationId);
  }

  close(): void {
    this.held.clear();
    this.writer.close();
  }
}
