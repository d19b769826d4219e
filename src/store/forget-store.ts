import type Database from 'better-sqlite3';
import { CONVERSATION_ID_PREFIX, sessionIdOf } from '../core/conversation-id.js';
import { inProject } from './conversation-list.js';
import { MessageDays } from './message-days.js';
import { TermIndexWriter } from './term-index.js';

/** Which conversations a forget (or an export) is about. */
export type ConversationSelector =
  | { kind: 'conversation'; conversationId: string }
  | { kind: 'project'; dir: string }
  /** Conversations whose last message is before this instant: nothing of them is newer. */
  | { kind: 'before'; ms: number };

export interface ForgetCandidate {
  conversationId: string;
  sessionId: string;
  workspaceDir?: string;
  createdAtMs?: number;
  updatedAtMs?: number;
  /** Messages held by the embedded store. */
  storedMessages: number;
  /** Whether any of it was acknowledged by the hosted gateway (it stays there). */
  sentToGateway: boolean;
  /** Only when neither sink ever held it (a session not imported yet, or a mistyped id): forgetting it only tombstones it. */
  unknown?: true;
}

interface CandidateRow {
  conversation_id: string;
  session_id: string;
  workspace_dir: string | null;
  created_at_ms: number | null;
  updated_at_ms: number | null;
  stored_messages: number;
  sent: number;
}

/**
 * Every conversation either sink holds: the embedded store's, and those only the gateway received
 * (known by their marks; their workspace only when a hook recorded it, their dates not at all).
 */
const CANDIDATES = `
  WITH known AS (
    SELECT conversation_id FROM conversations
    UNION SELECT DISTINCT conversation_id FROM delivered WHERE sink = 'everme'
  )
  SELECT k.conversation_id,
         coalesce(c.session_id, substr(k.conversation_id, ${CONVERSATION_ID_PREFIX.length + 1})) AS session_id,
         coalesce(c.workspace_dir, s.workspace_dir, t.workspace_dir) AS workspace_dir,
         c.created_at_ms, c.updated_at_ms,
         coalesce(c.message_count, 0) AS stored_messages,
         EXISTS (SELECT 1 FROM delivered d WHERE d.sink = 'everme' AND d.conversation_id = k.conversation_id) AS sent
  FROM known k
  LEFT JOIN conversations c ON c.conversation_id = k.conversation_id
  LEFT JOIN sessions s ON s.session_id = coalesce(c.session_id, substr(k.conversation_id, ${CONVERSATION_ID_PREFIX.length + 1}))
  -- A forgotten session's own rows are gone: its tombstone remembers where it was.
  LEFT JOIN tombstones t ON t.conversation_id = k.conversation_id`;

function toCandidate(row: CandidateRow): ForgetCandidate {
  return {
    conversationId: row.conversation_id,
    sessionId: row.session_id,
    storedMessages: row.stored_messages,
    sentToGateway: row.sent === 1,
    ...(row.workspace_dir === null ? {} : { workspaceDir: row.workspace_dir }),
    ...(row.created_at_ms === null ? {} : { createdAtMs: row.created_at_ms }),
    ...(row.updated_at_ms === null ? {} : { updatedAtMs: row.updated_at_ms }),
  };
}

/** A named conversation neither sink holds: listed as such, so forgetting it only tombstones it. */
export function unknownCandidate(conversationId: string): ForgetCandidate {
  return { conversationId, sessionId: sessionIdOf(conversationId) ?? conversationId, storedMessages: 0, sentToGateway: false, unknown: true };
}

/**
 * Removing a conversation from the embedded store for good: its messages, their full-text index
 * entries, its recall summary (first/last text on the conversation row), its warnings, its owed
 * flush, its fingerprints (so `forget --undo` is followed by a full re-read) and what the store
 * knows of its session (title, workspace claims, scope record). The gateway's
 * marks stay: the gateway still holds those messages.
 *
 * Deleted rows are not enough for "the file no longer contains the text": SQLite leaves freed pages
 * as they were and FTS5 keeps a deleted row's terms in old segments until they are merged. So the
 * connection turns on `secure_delete` (freed content is overwritten with zeros), `cleanup()`
 * merges the index (`optimize` rewrites it without the deleted entries), zeroes every free page
 * (`scrubFreePages`) and checkpoints the WAL back into the file, truncating it.
 */
export class ForgetStore {
  private readonly stmts;
  private readonly removeOne: (conversationId: string, sessionId: string) => number;
  private readonly terms: TermIndexWriter;

  constructor(private readonly db: Database.Database) {
    db.pragma('secure_delete = ON');
    this.terms = new TermIndexWriter(db);
    this.stmts = {
      all: db.prepare<[], CandidateRow>(`${CANDIDATES} ORDER BY c.created_at_ms IS NULL, c.created_at_ms, k.conversation_id`),
      one: db.prepare<[string], CandidateRow>(`${CANDIDATES} WHERE k.conversation_id = ?`),
      messageIds: db.prepare<[string], number>('SELECT id FROM messages WHERE conversation_id = ?').pluck(),
      deleteFts: db.prepare<[number]>('DELETE FROM messages_fts WHERE rowid = ?'),
      deleteMessages: db.prepare<[string]>('DELETE FROM messages WHERE conversation_id = ?'),
      deleteConversation: db.prepare<[string]>('DELETE FROM conversations WHERE conversation_id = ?'),
      deleteWarningEntries: db.prepare<[string]>(
        'DELETE FROM warning_entries WHERE set_id IN (SELECT id FROM warning_sets WHERE conversation_id = ?)',
      ),
      deleteWarningSets: db.prepare<[string]>('DELETE FROM warning_sets WHERE conversation_id = ?'),
      deleteFlush: db.prepare<[string]>('DELETE FROM flush_state WHERE conversation_id = ?'),
      deleteFingerprints: db.prepare<[string]>('DELETE FROM fingerprints WHERE session_id = ?'),
      // What is known of the session beyond its messages: its title (often its first prompt), its
      // workspace claims and decision, and its exclusion or unknown-workspace record, which the
      // report lists with that title. The tombstone keeps what keeping it out needs (its ids and
      // workspace). Kept while another stored conversation still names the session.
      deleteSessionRows: (['session_meta', 'session_scope', 'sessions'] as const).map((table) =>
        db.prepare<{ session: string }>(
          `DELETE FROM ${table} WHERE session_id = @session AND NOT EXISTS (SELECT 1 FROM conversations WHERE session_id = @session)`,
        ),
      ),
    };
    const days = new MessageDays(db);
    // IMMEDIATE (it reads before it writes): it waits for another writer instead of failing.
    const removeOne = db.transaction((conversationId: string, sessionId: string): number => {
      const ids = this.stmts.messageIds.all(conversationId);
      for (const id of ids) this.stmts.deleteFts.run(id);
      // Its words' postings and lengths too: nothing of the conversation stays in the term index.
      this.terms.remove(ids);
      days.removeConversation(conversationId);
      this.stmts.deleteMessages.run(conversationId);
      this.stmts.deleteConversation.run(conversationId);
      this.stmts.deleteWarningEntries.run(conversationId);
      this.stmts.deleteWarningSets.run(conversationId);
      this.stmts.deleteFlush.run(conversationId);
      this.stmts.deleteFingerprints.run(sessionId);
      for (const stmt of this.stmts.deleteSessionRows) stmt.run({ session: sessionId });
      return ids.length;
    });
    this.removeOne = (conversationId, sessionId) => removeOne.immediate(conversationId, sessionId);
  }

  /** The conversations a selector names, oldest first. A named conversation nobody holds is still listed. */
  select(selector: ConversationSelector): ForgetCandidate[] {
    switch (selector.kind) {
      case 'conversation': {
        const row = this.stmts.one.get(selector.conversationId);
        return [row ? toCandidate(row) : unknownCandidate(selector.conversationId)];
      }
      case 'project':
        return this.stmts.all.all().map(toCandidate).filter((c) => inProject(c.workspaceDir, selector.dir));
      case 'before':
        return this.stmts.all
          .all()
          .map(toCandidate)
          .filter((c) => c.updatedAtMs !== undefined && c.updatedAtMs < selector.ms);
    }
  }

  /** Removes one conversation from the embedded store; returns how many messages it held. */
  remove(conversationId: string, sessionId: string): number {
    return this.removeOne(conversationId, sessionId);
  }

  /**
   * Makes the removal reach the file's bytes. Returns whether the WAL was fully checkpointed (a
   * reader holding an old snapshot, an MCP server say, can keep part of it until it lets go).
   */
  cleanup(): { checkpointed: boolean } {
    this.db.prepare("INSERT INTO messages_fts (messages_fts) VALUES ('optimize')").run();
    this.scrubFreePages();
    const [result] = this.db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number; log: number; checkpointed: number }>;
    return { checkpointed: result === undefined || result.busy === 0 };
  }

  /**
   * Overwrites every free page with zeros. Pages other writes freed earlier (a rebalanced b-tree,
   * an index merge: writers zero only the space they free inside a page) can hold old copies of the
   * forgotten rows, and this connection's `secure_delete` reaches only what it frees itself. A blob
   * of zeros as large as the free list takes those pages, and dropping it frees them zeroed again.
   */
  private scrubFreePages(): void {
    const pageSize = Number(this.db.pragma('page_size', { simple: true }));
    const free = Number(this.db.pragma('freelist_count', { simple: true }));
    if (free === 0) return;
    this.db.transaction(() => {
      this.db.exec('CREATE TABLE everme_scrub (b BLOB)');
      const insert = this.db.prepare<[number]>('INSERT INTO everme_scrub (b) VALUES (zeroblob(?))');
      // In blobs well under SQLite's 1e9-byte limit; a page's own header leaves the last one a little short.
      const pagesPerBlob = Math.floor(SCRUB_BLOB_BYTES / pageSize);
      for (let left = free; left > 0; left -= pagesPerBlob) insert.run(Math.min(left, pagesPerBlob) * pageSize);
      this.db.exec('DROP TABLE everme_scrub');
    })();
  }
}

const SCRUB_BLOB_BYTES = 256 * 1024 * 1024;
