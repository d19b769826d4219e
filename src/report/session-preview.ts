import type { AgentMessage } from '../core/agent-message.js';
import { openMemoryDatabase } from '../store/database.js';
import type { DeliveryReceipt, DeliveryRequest, RetractOutcome, Sink } from '../sinks/sink.js';
import type { SessionRef } from '../transcript/types.js';
import { conversationIdFor } from '../core/conversation-id.js';
import { deliverSession } from '../engine/session-delivery.js';
import { StateStore } from '../store/state-store.js';
import type { WarningEntry } from '../core/warnings.js';

/** A sink that keeps what it is given: `everme show` runs the real pipeline into it. */
class CollectingSink implements Sink {
  readonly name = 'local' as const;
  readonly requests: DeliveryRequest[] = [];
  pendingFlush(): undefined {
    return undefined;
  }
  claimPendingFlush(): undefined {
    return undefined;
  }
  releaseFlushClaim(): void {}
  deliveredKeys(): Set<string> {
    return new Set();
  }
  async deliver(request: DeliveryRequest): Promise<DeliveryReceipt> {
    this.requests.push(request);
    return {};
  }
  retract(): RetractOutcome {
    return { removed: 0, irreversible: false };
  }
  /** A preview records nothing: its state would only describe a throwaway database. */
  async finishSession(): Promise<void> {}
  abandonSession(): void {}
  close(): void {}
}

export interface SessionPreview {
  conversationId: string;
  sessionId: string;
  source: 'messages' | 'ledger' | 'none';
  historyFile?: string;
  workspaceDir?: string;
  requests: Array<{ messages: number; flush: boolean }>;
  messages: AgentMessage[];
  warnings: WarningEntry[];
}

/**
 * Exactly what an import would upload for one session: the same reader, converter, redaction and
 * batcher, against empty state, so nothing counts as already delivered.
 */
export async function previewSession(session: SessionRef): Promise<SessionPreview> {
  const db = openMemoryDatabase();
  try {
    const sink = new CollectingSink();
    const outcome = await deliverSession(session, { mode: 'import', sink, state: new StateStore(db), dryRun: false });
    if (outcome.error) throw outcome.error;
    const first = sink.requests[0]?.conversation;
    return {
      conversationId: conversationIdFor(session.sessionId),
      sessionId: session.sessionId,
      source: outcome.source,
      historyFile: first?.historyFile,
      workspaceDir: first?.workspaceDir,
      requests: sink.requests.map((r) => ({ messages: r.messages.length, flush: r.flush })),
      messages: sink.requests.flatMap((r) => r.messages),
      warnings: outcome.warnings,
    };
  } finally {
    db.close();
  }
}
