import type { SinkName } from '../config/settings.js';
import type { WarningEntry } from '../core/warnings.js';
import type { SessionFingerprint, WarningOwner } from './state-store.js';

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
 * A session's own state, written when it was read to its end: its warnings (replacing what the last
 * read recorded) and the fingerprint that lets the next run skip it. Data rather than a callback,
 * so a sink may commit it on another thread, on its own connection.
 */
export interface SessionStateWrite {
  sinkName: SinkName;
  sessionId: string;
  warningsOwner: WarningOwner;
  warnings: WarningEntry[];
  fingerprint: SessionFingerprint;
}

