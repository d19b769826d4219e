import type { SinkName } from '../config/settings.js';
import { EvermeError } from '../core/errors.js';
import type { WarningEntry } from '../core/warnings.js';
import type { SessionRef } from '../transcript/types.js';
import { conversationIdFor } from '../core/conversation-id.js';

/** `excluded`: its workspace is excluded; `forgotten`: the user forgot it (a tombstone). Neither is read. */
export type SessionStatus = 'delivered' | 'unchanged' | 'empty' | 'excluded' | 'forgotten' | 'failed';

/** How one sink came out of one session. */
export type SinkStatus = 'delivered' | 'unchanged' | 'empty' | 'failed';

export interface SinkOutcome {
  sink: SinkName;
  status: SinkStatus;
  messages: number;
  requests: number;
  removed: number;
  /** Requests the gateway acknowledged (2xx) with a body that could not be read: never resent. */
  invalidResponses: Array<{ requestId: string; reason: string }>;
  /** What the sink itself noticed (`gateway_response_invalid`, `history_rewritten` at the gateway). */
  warnings: WarningEntry[];
  /** Absent on a failure that is not this session's own (the sink stopped earlier in the run). */
  error?: EvermeError;
}

export interface SessionOutcome {
  sessionId: string;
  conversationId: string;
  status: SessionStatus;
  source: 'messages' | 'ledger' | 'none';
  bytes: number;
  /** The reader's warnings (each sink's own are in `sinks`). */
  warnings: WarningEntry[];
  /** One per sink of the run, in the run's order (the first is the one the summary names). */
  sinks: SinkOutcome[];
  /** Read, but nobody knows its workspace, so no exclusion could be checked (never guessed). */
  workspaceUnknown?: boolean;
  /** Why it failed: the session's own failure (reading it), else the first sink's. */
  error?: EvermeError;
}

export function blankSinkOutcome(sink: SinkName, status: SinkStatus = 'unchanged'): SinkOutcome {
  return { sink, status, messages: 0, requests: 0, removed: 0, invalidResponses: [], warnings: [] };
}

/** A session before anything happened to it: nothing read, nothing sent. */
export function blankOutcome(session: SessionRef, status: SessionStatus, sinks: readonly SinkName[]): SessionOutcome {
  return {
    sessionId: session.sessionId,
    conversationId: conversationIdFor(session.sessionId),
    status,
    source: 'none',
    bytes: 0,
    warnings: [],
    sinks: sinks.map((sink) => blankSinkOutcome(sink)),
  };
}

/** The session failed as a whole (before or while it was read): every sink with it. */
export function failSession(outcome: SessionOutcome, error: EvermeError): SessionOutcome {
  outcome.status = 'failed';
  outcome.error = error;
  for (const sink of outcome.sinks) {
    if (sink.status === 'failed') continue;
    sink.status = 'failed';
    sink.error = error;
  }
  return outcome;
}

/**
 * The session's status from its sinks': failed when any failed (a re-run completes it there),
 * delivered when any took something, empty when it was new to every sink and had nothing to give.
 */
export function sessionStatusOf(sinks: readonly SinkOutcome[]): SessionStatus {
  if (sinks.some((s) => s.status === 'failed')) return 'failed';
  if (sinks.some((s) => s.status === 'delivered')) return 'delivered';
  if (sinks.length > 0 && sinks.every((s) => s.status === 'empty')) return 'empty';
  return 'unchanged';
}

export function firstSinkError(sinks: readonly SinkOutcome[]): EvermeError | undefined {
  return sinks.find((s) => s.error !== undefined)?.error;
}

export function cancelled(): EvermeError {
  return new EvermeError('cancelled', 'Interrupted');
}
