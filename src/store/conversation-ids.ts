import type Database from 'better-sqlite3';
import { conversationIdCandidates } from '../core/conversation-id.js';

/** Every table that can name a conversation a user was shown: stored, sent, forgotten, or warned about. */
const KNOWN = `SELECT EXISTS (SELECT 1 FROM conversations WHERE conversation_id = @id)
  OR EXISTS (SELECT 1 FROM delivered WHERE sink IN ('everme', 'local') AND conversation_id = @id)
  OR EXISTS (SELECT 1 FROM tombstones WHERE conversation_id = @id)
  OR EXISTS (SELECT 1 FROM warning_sets WHERE conversation_id = @id)`;

/**
 * The conversation a user's `--conversation ID` names: the id exactly as a listing showed it when
 * the store knows it (a conversation re-imported from an export keeps its own id, prefix or not),
 * else the conversation of the session id it was given (`mvs_…` → `minimaxcode-mvs_…`).
 */
export function resolveConversationId(db: Database.Database, input: string): string {
  const candidates = conversationIdCandidates(input);
  const known = db.prepare<{ id: string }, number>(KNOWN).pluck();
  for (const id of candidates) if (known.get({ id }) === 1) return id;
  return candidates.at(-1)!;
}
