import type Database from 'better-sqlite3';
import type { StateStore } from '../engine/state-store.js';
import { LocalStore } from './local-store.js';
import type { ConversationMeta, DeliveryRequest, RetractOutcome, Sink } from './sink.js';

/** The embedded store: messages and their high-water marks commit in one SQLite transaction. */
export class LocalSink implements Sink {
  readonly name = 'local' as const;
  private readonly store: LocalStore;

  constructor(
    private readonly db: Database.Database,
    private readonly state: StateStore,
  ) {
    this.store = new LocalStore(db);
  }

  async deliver(request: DeliveryRequest): Promise<void> {
    const { conversation, messages, keys } = request;
    this.db.transaction(() => {
      this.store.upsertConversation({
        conversationId: conversation.conversationId,
        sessionId: conversation.sessionId,
        source: conversation.source,
        workspaceDir: conversation.workspaceDir,
        historyFile: conversation.historyFile,
        createdAtMs: conversation.createdAtMs,
      });
      this.store.appendMessages(
        conversation.conversationId,
        messages.map((message, i) => ({ key: keys[i]!, message })),
      );
      this.state.recordDelivered(this.name, conversation.conversationId, keys);
    })();
  }

  retract(conversation: ConversationMeta, keys: string[]): RetractOutcome {
    let removed = 0;
    this.db.transaction(() => {
      removed = this.store.removeMessages(conversation.conversationId, keys);
      this.state.forgetDelivered(this.name, conversation.conversationId, keys);
    })();
    return { removed, irreversible: false };
  }

  close(): void {}
}
