import type Database from 'better-sqlite3';
import type { KeyedMessage } from '../memory/agent-message.js';
import { LocalStore } from './local-store.js';
import type { ConversationMeta, DeliveryRequest, RetractOutcome, Sink } from './sink.js';

/** Past this many held messages a session's requests are committed early, to bound memory. */
const MAX_HELD_MESSAGES = 5000;

/**
 * The embedded store: a stored message IS its high-water mark (its key is unique per
 * conversation), so messages and marks can never disagree and nothing is written twice.
 * Requests are held per conversation and committed together with the session's warnings and
 * fingerprint at its end (or early, when many are held): a commit per request cost more than the
 * indexing itself on a cold import, and grouping changes nothing about what commits together.
 */
export class LocalSink implements Sink {
  readonly name = 'local' as const;
  private readonly store: LocalStore;
  private readonly held = new Map<string, { conversation: ConversationMeta; messages: KeyedMessage[] }>();
  private readonly write: (conversationId: string) => void;

  constructor(private readonly db: Database.Database) {
    this.store = new LocalStore(db);
    this.write = db.transaction((conversationId: string) => this.writeHeld(conversationId));
  }

  async deliver(request: DeliveryRequest): Promise<void> {
    const id = request.conversation.conversationId;
    let entry = this.held.get(id);
    if (!entry) {
      entry = { conversation: request.conversation, messages: [] };
      this.held.set(id, entry);
    }
    entry.conversation = request.conversation;
    for (let i = 0; i < request.messages.length; i++) entry.messages.push({ key: request.keys[i]!, message: request.messages[i]! });
    if (entry.messages.length >= MAX_HELD_MESSAGES) this.write(id);
  }

  private writeHeld(conversationId: string): void {
    const entry = this.held.get(conversationId);
    if (!entry || entry.messages.length === 0) return;
    const { conversation, messages } = entry;
    this.store.upsertConversation({
      conversationId,
      sessionId: conversation.sessionId,
      source: conversation.source,
      workspaceDir: conversation.workspaceDir,
      historyFile: conversation.historyFile,
      createdAtMs: conversation.createdAtMs,
    });
    this.store.appendMessages(conversationId, messages);
    entry.messages = [];
  }

  pendingFlush(): undefined {
    return undefined;
  }

  deliveredKeys(conversationId: string): Set<string> {
    return this.store.keysOf(conversationId);
  }

  retract(conversation: ConversationMeta, keys: string[]): RetractOutcome {
    return { removed: this.store.removeMessages(conversation.conversationId, keys), irreversible: false };
  }

  finishSession(conversation: ConversationMeta, commitState: () => void): void {
    this.db.transaction(() => {
      this.writeHeld(conversation.conversationId);
      commitState();
    })();
    this.held.delete(conversation.conversationId);
  }

  abandonSession(conversationId: string): void {
    this.held.delete(conversationId);
  }

  close(): void {
    this.held.clear();
  }
}
