import type { SinkName } from '../config/settings.js';
import type { WarningEntry } from '../core/warnings.js';
import type { EncodedRequest } from '../memory/encoded-request.js';
import type { PlannedRequest } from '../memory/task-batcher.js';
import type { MessageRows } from '../store/message-rows.js';
import type { ConversationMeta, Rekey, SessionStateWrite } from '../store/store-types.js';

export type { ConversationMeta, EncodedRequest, PlannedRequest, Rekey, SessionStateWrite };

/** import flushes every conversation's last request, sync only at a finished turn, the hook only at a conversation boundary. */
export type DeliveryMode = 'import' | 'sync' | 'hook';

/**
 * A slice of one session's delivery plan, in order: the plan phase's batched requests, and the same
 * messages encoded for the embedded store. A part carries what its sinks take (the requests encoded
 * for a sink that sends them, the rows for the store, the requests as objects for a preview); the
 * counts are always there.
 */
export interface PlanPart {
  conversation: ConversationMeta;
  /** The requests as objects: what `show` previews. */
  requests?: PlannedRequest[];
  /** The same requests, their messages' JSON encoded: what the gateway sink sends. */
  encoded?: EncodedRequest[];
  rows?: MessageRows;
  requestCount: number;
  messageCount: number;
  /** About how many bytes the part's messages hold (their JSON). */
  bytes: number;
}

/** What a sink is told about the session it is about to be given. */
export interface SessionContext {
  conversationId: string;
  sessionId: string;
  createdAtMs?: number;
  mode: DeliveryMode;
  /** A conversation boundary (the host's PreCompact or SessionEnd): whatever the mode, the conversation ends here. */
  boundary: boolean;
  /** The run's Ctrl-C: ends waits, gives up what is not yet being committed. */
  signal?: AbortSignal;
  /** Whether the session's workspace is excluded; decided when first asked (reads the session's head). */
  excluded(): Promise<boolean>;
}

/** How a session ended, for the sink to commit with what it holds. */
export interface SessionEnd {
  conversation: ConversationMeta;
  /**
   * The reader's warnings and this sink's fingerprint of the file it was given whole; absent when
   * nothing was read for this sink (the file is as it last took it).
   */
  state?: SessionStateWrite;
}

/** What one sink did with one session. */
export interface SessionTally {
  requests: number;
  messages: number;
  removed: number;
  /** Requests acknowledged with a body that could not be read: counted as delivered, never resent. */
  invalidResponses: Array<{ requestId: string; reason: string }>;
  /** What the sink itself noticed (never the reader's warnings). */
  warnings: WarningEntry[];
}

/** `durable` resolves once what the sink was handed is committed; rejects (an EvermeError) with none of it committed. */
export interface Handoff {
  durable: Promise<void>;
}

/** One session's delivery to one sink: its parts in order, then its end. */
export interface SinkSession {
  readonly tally: SessionTally;
  /** Takes one part of the plan; resolves once the sink may be given the next. */
  deliver(part: PlanPart): Promise<void>;
  /** Messages this sink took earlier that have since left the effective history. */
  retract(conversation: ConversationMeta, keys: string[]): void;
  /** Messages this sink took earlier under another key: its marks (and what it keeps) move to the new key. */
  rekey(conversation: ConversationMeta, moves: readonly Rekey[]): void;
  /** The plan was given whole (or there was nothing to read). Resolves once the sink holds the session's end; see `Handoff`. */
  finish(end: SessionEnd): Promise<Handoff>;
  /** The session failed or was interrupted: drop what is held for it (its marks never moved). */
  abandon(): void;
}

/**
 * Where sessions are delivered: the hosted gateway or the embedded store. Each sink keeps its own
 * marks; what is specific to one sink (the gateway's flushes, the store's commit backlog) stays
 * inside it.
 */
export interface Sink {
  readonly name: SinkName;
  /** What the sink takes from a plan part: the requests, encoded (to send them), or the encoded rows (to store them). */
  readonly takes: 'requests' | 'rows';
  /**
   * Whether a session with nothing new for this sink is still begun and ended at it: the gateway
   * may owe the conversation a flush, the store owes it nothing. A sync passes thousands of
   * unchanged sessions, and for a sink that says no each ends at its checks.
   */
  readonly endsUnchanged: boolean;
  /**
   * The disk this sink commits to is nearly full: what it commits may take the space another sink's
   * marks need, so it is handed a session's end only once their marks are committed (see handOff).
   */
  nearlyFull?(): boolean;
  /** Keys of the conversation's messages this sink has acknowledged (its high-water marks). */
  deliveredKeys(conversationId: string): Set<string>;
  /** Opens one session's delivery; resolves once the sink can take another session without its backlog growing past its bound. */
  begin(context: SessionContext): Promise<SinkSession>;
  close(): void;
}
