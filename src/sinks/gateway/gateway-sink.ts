import type { StateStore } from '../../store/state-store.js';
import { contentRequestId, type GatewayClient } from './gateway-client.js';
import { writeSessionState } from '../../store/session-state.js';
import type { ConversationMeta, DeliveryReceipt, DeliveryRequest, RetractOutcome, SessionStateWrite, Sink } from '../sink.js';

/**
 * The hosted EverMe gateway. Marks move only after the gateway acknowledged a request; a request
 * whose fate is unknown is not retried here but resent by the next run from the last mark.
 */
export class GatewaySink implements Sink {
  readonly name = 'everme' as const;

  constructor(
    private readonly client: GatewayClient,
    private readonly state: StateStore,
  ) {}

  deliveredKeys(conversationId: string): Set<string> {
    return this.state.deliveredKeys(this.name, conversationId);
  }

  async deliver(request: DeliveryRequest): Promise<DeliveryReceipt> {
    const conversationId = request.conversation.conversationId;
    const requestId = contentRequestId(conversationId, request.keys, request.flush);
    const ack = await this.client.postAgentMemory(
      { conversationId, flush: request.flush, sync: request.sync, messages: request.messages },
      undefined,
      { requestId, ...(request.waitSignal ? { waitSignal: request.waitSignal } : {}) },
    );
    this.state.transaction(() => {
      this.state.recordDelivered(this.name, conversationId, request.keys);
      const last = request.messages.at(-1);
      const endsTurn = last?.role === 'assistant' && last.turnComplete;
      if (request.flush) this.state.recordFlushState(this.name, conversationId, false, endsTurn);
      else if (last) this.state.recordFlushState(this.name, conversationId, true, endsTurn);
    });
    return ack.responseInvalid ? { responseInvalid: { requestId: ack.requestId, reason: ack.responseInvalid } } : {};
  }

  pendingFlush(conversationId: string): { endsTurn: boolean } | undefined {
    return this.state.pendingFlush(this.name, conversationId);
  }

  claimPendingFlush(conversationId: string, requireEndsTurn: boolean): string | undefined {
    return this.state.claimPendingFlush(this.name, conversationId, requireEndsTurn);
  }

  releaseFlushClaim(conversationId: string, claim: string): void {
    this.state.releaseFlushClaim(this.name, conversationId, claim);
  }

  /**
   * The gateway cannot take messages back, so their marks stay: the server still holds them (a
   * message that comes back is not sent twice), and every later read of the session finds them
   * gone again, so its `history_rewritten` warning survives the next append instead of vanishing.
   */
  retract(_conversation: ConversationMeta, _keys: string[]): RetractOutcome {
    return { removed: 0, irreversible: true };
  }

  /** Every request was committed when the gateway acknowledged it; only the session state is left. */
  async finishSession(_conversation: ConversationMeta, state: SessionStateWrite): Promise<void> {
    this.state.transaction(() => writeSessionState(this.state, state));
  }

  abandonSession(): void {}

  close(): void {}
}
