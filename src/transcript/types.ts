import type { WarningLocation } from '../core/warnings.js';

/** A session directory found under `<data>/v2/sessions/YYYY/MM/DD/`. */
export interface SessionRef {
  sessionId: string;
  /** Absolute path of the session directory. */
  dir: string;
  createdAtMs: number;
  updatedAtMs?: number;
}

export type HistorySource = 'messages' | 'ledger' | 'none';

/**
 * One message of the effective model history, still in MiniMax's own (Pi) shape.
 * `key` is stable across re-reads: the envelope's `message_id` for messages.jsonl, a hash chain over
 * the effective history for ledgers.
 */
export interface HistoryItem {
  key: string;
  /**
   * A ledger message's key as releases before kept turns carried their keys gave it, where that
   * differs from `key` (only after a compaction, and only when asked for, see `HistoryOptions`):
   * marks such a release wrote hold this key.
   */
  legacyKey?: string;
  /** The raw `message` object (validated only as "a JSON object"; the converter checks the rest). */
  message: Record<string, unknown>;
  location: WarningLocation;
}
