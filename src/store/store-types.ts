import type { SinkName } from '../config/settings.js';
import type { WarningEntry } from '../core/warnings.js';
import type { SessionFingerprint } from './fingerprint-store.js';
import type { WarningOwner } from './warning-store.js';

/** What a sink needs to know about the conversation a request belongs to (nothing MiniMax-specific). */
export interface ConversationMeta {
  conversationId: string;
  sessionId: string;
  source: 'messages' | 'ledger';
  workspaceDir?: string;
  historyFile?: string;
  createdAtMs?: number;
}

/**
 * A message a sink took under one key that now goes by another: the same message, to be marked (and
 * kept) under its new key, never taken again.
 */
export interface Rekey {
  from: string;
  to: string;
}

/**
 * A session's own state, written for one sink when that sink took the session whole: the reader's
 * warnings (replacing what the last read recorded), the sink's own (`sinkWarnings`, a sink that has
 * none leaves it out) and the fingerprint that lets the next run skip the file for this sink. Data
 * rather than a callback, so a sink may commit it on another thread, on its own connection.
 */
export interface SessionStateWrite {
  sinkName: SinkName;
  sessionId: string;
  warningsOwner: WarningOwner;
  warnings: WarningEntry[];
  sinkWarnings?: WarningEntry[];
  fingerprint: SessionFingerprint;
}
