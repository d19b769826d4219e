import type { SinkName } from '../config/settings.js';
import type { ConversationMeta, SessionStateWrite } from '../store/store-types.js';
import type { AgentMessage } from '../core/agent-message.js';

export type { ConversationMeta, SessionStateWrite };

export interface DeliveryRequest {
  conversation: ConversationMeta;
  messages: AgentMessage[];
  /** Parallel to `messages`: the high-water keys recorded once the sink acknowledges. */
  keys: string[];
  flush: boolean;
  /**
   * The upload this request belongs to ends in a flush: the gateway must add it synchronously so
   * the flush sees it. Ignored by sinks without flushes.
   */
  sync: boolean;
  /** Ends a sink's back-off waits (Ctrl-C); never aborts a request already in flight. */
  waitSignal?: AbortSignal;
  /** About how many bytes the request's messages hold (their JSON), for a sink that buffers them. */
  bytes?: number;
}

/** What the sink noticed about an acknowledged request. */
export interface DeliveryReceipt {
  /** The gateway answered 2xx with a body it could not read: counted as delivered, never resent. */
  responseInvalid?: { requestId: string; reason: string };
}

export interface RetractOutcome {
  /** Messages removed from the sink's own storage. */
  removed: number;
  /** True when the sink cannot take delivered messages back (the gateway): the caller warns. */
  irreversible: boolean;
}

export interface Sink {
  readonly name: SinkName;
  /**
   * A conversation delivered without a flush (by the hook) that still owes one; the store of a
   * sink without flushes (the embedded one) never does.
   */
  pendingFlush(conversationId: string): { endsTurn: boolean } | undefined;
  /**
   * Takes the owed flush (see `pendingFlush`) for this run, atomically across processes, so that it
   * is sent once; `requireEndsTurn` takes it only when the conversation ends on a finished turn.
   * Returns a claim to give back with `releaseFlushClaim` when the send fails.
   */
  claimPendingFlush(conversationId: string, requireEndsTurn: boolean): string | undefined;
  releaseFlushClaim(conversationId: string, claim: string): void;
  /** Keys of the conversation's messages this sink has acknowledged (its high-water marks). */
  deliveredKeys(conversationId: string): Set<string>;
  /** Delivers one request; its keys count as delivered only after the sink acknowledged it. */
  deliver(request: DeliveryRequest): Promise<DeliveryReceipt>;
  /** Messages that were delivered and have since left the effective history. */
  retract(conversation: ConversationMeta, keys: string[]): RetractOutcome;
  /**
   * The session was read to its end: commit whatever the sink still holds for it together with the
   * session's own state, in one commit. Resolves once that commit is durable; rejects (an
   * EvermeError) with nothing of it committed.
   */
  finishSession(conversation: ConversationMeta, state: SessionStateWrite): Promise<void>;
  /**
   * Resolves when the sink can take another session without its backlog growing past its bound; a
   * sink that does not buffer has none.
   */
  readyForMore?(): Promise<void>;
  /** The run was interrupted: sessions whose commit has not begun are given up (`cancelled`). */
  cancelPending?(): void;
  /** The session failed or was interrupted: drop what is held for it (its marks never moved). */
  abandonSession(conversationId: string): void;
  close(): void;
}
