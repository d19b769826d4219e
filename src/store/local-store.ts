import type Database from 'better-sqlite3';
import { z } from 'zod';
import { EvermeError } from '../core/errors.js';
import type { AgentMessage, AgentToolCall, KeyedMessage } from '../core/agent-message.js';
import type { ConversationMeta } from './store-types.js';
import { parseJsonColumn } from './json-column.js';
import { clampLimit } from './limits.js';
import { buildFtsQuery, excerpt, makeSnippet } from './fts-text.js';
import {
  encodeMessageRows,
  rowContent,
  rowContentText,
  rowHasText,
  rowIndexedText,
  rowRole,
  rowTimestamp,
  rowToolCalls,
  rowTurnComplete,
  type MessageRows,
} from './message-rows.js';
import { assistantText, searchableText } from './searchable-text.js';
import {
  PROJECT_FILTER,
  projectParams,
  listRecentConversations,
  type ConversationSummary,
  type ProjectParams,
} from './conversation-list.js';

export type { ConversationSummary };

/** What the store keeps about a conversation: exactly what a sink is told about it. */
export type ConversationRecord = ConversationMeta;

export interface SearchHit {
  conversationId: string;
  sessionId: string;
  role: AgentMessage['role'];
  timestamp: number;
  snippet: string;
  /** Higher is better (negated BM25). */
  score: number;
  workspaceDir?: string;
}

export interface SearchOptions {
  /** Default 10, at most 50. */
  limit?: number;
  /** Only conversations whose workspace is this directory or lies under it. */
  project?: string;
}

export interface RecentOptions {
  project?: string;
  /** Default 10, at most 100. */
  limit?: number;
}

const MAX_SEARCH_LIMIT = 50;
const MAX_RECENT_LIMIT = 100;
const PREVIEW_CHARS = 300;
/**
 * The most matches a search scores (the newest ones): bounds a query of common words whatever the
 * size of the history. Measured on the bench tree: the queries there match at most ~10k messages
 * at 1× (so their results are unchanged), and scoring 10k costs ~10–20 ms.
 */
export const MAX_RANKED_CANDIDATES = 10_000;

const toolCallsSchema = z.array(
  z.object({ id: z.string(), type: z.literal('function'), name: z.string(), arguments: z.string() }),
);

interface HitRow {
  id: number;
  conversation_id: string;
  role: AgentMessage['role'];
  timestamp: number;
  content: string | null;
  tool_calls_json: string | null;
  session_id: string;
  workspace_dir: string | null;
}

interface RankedRow {
  id: number;
  rank_bm25: number;
}

/** Positional (the hot insert): conversation, key, role, timestamp, content, tool calls, tool call id, turn complete. */
type MessageParams = [string, string, string, number, Uint8Array | null, Uint8Array | null, string | null, number | null];

/**
 * Index rows a caller inserts later (`LocalStore.indexRows`): FTS5 writes its pending terms to a new
 * segment at every savepoint, so rows indexed inside per-session savepoints cost a segment (and its
 * later merges) per session; indexed together after them they cost one per transaction.
 */
export type FtsRow = readonly [rowid: number | bigint, text: Uint8Array];

interface AppendSummary {
  conversationId: string;
  count: number;
  minTs: number | null;
  maxTs: number | null;
  firstUser: string | null;
  lastAssistant: string | null;
}

/**
 * The embedded memory store. Every write is a plain synchronous call so the caller can put it and
 * the high-water mark in one `db.transaction`; on their own, writes are atomic per call.
 */
export class LocalStore {
  private readonly stmts;
  // Built once: better-sqlite3 nests them as savepoints inside a caller's transaction.
  private readonly appendInTransaction: (conversationId: string, rows: MessageRows) => number;
  private readonly removeInTransaction: (conversationId: string, keys: string[]) => number;

  constructor(private readonly db: Database.Database) {
    this.stmts = {
      upsertConversation: db.prepare<ConversationRecordParams>(
        `INSERT INTO conversations (conversation_id, session_id, source, workspace_dir, history_file, created_at_ms, updated_at_ms)
         VALUES (@conversationId, @sessionId, @source, @workspaceDir, @historyFile, @createdAtMs, @createdAtMs)
         ON CONFLICT (conversation_id) DO UPDATE SET
           session_id = excluded.session_id,
           source = excluded.source,
           workspace_dir = coalesce(excluded.workspace_dir, workspace_dir),
           history_file = coalesce(excluded.history_file, history_file),
           created_at_ms = coalesce(excluded.created_at_ms, created_at_ms),
           updated_at_ms = coalesce(updated_at_ms, excluded.created_at_ms)`,
      ),
      keysOf: db.prepare<[string], string>('SELECT msg_key FROM messages WHERE conversation_id = ?').pluck(),
      conversationExists: db.prepare<[string], number>('SELECT 1 FROM conversations WHERE conversation_id = ?').pluck(),
      // Texts arrive as UTF-8 bytes (see MessageRows): CAST stores them as TEXT, byte for byte.
      insertMessage: db.prepare<MessageParams>(
        `INSERT INTO messages (conversation_id, msg_key, role, timestamp, content, tool_calls_json, tool_call_id, turn_complete)
         VALUES (?, ?, ?, ?, CAST(? AS TEXT), CAST(? AS TEXT), ?, ?)
         ON CONFLICT (conversation_id, msg_key) DO NOTHING`,
      ),
      insertFts: db.prepare<[number | bigint, Uint8Array]>('INSERT INTO messages_fts (rowid, text) VALUES (?, CAST(? AS TEXT))'),
      afterAppend: db.prepare<AppendSummary>(
        `UPDATE conversations SET
           message_count = message_count + @count,
           created_at_ms = coalesce(created_at_ms, @minTs),
           updated_at_ms = max(coalesce(updated_at_ms, @maxTs), @maxTs),
           first_user_text = coalesce(first_user_text, @firstUser),
           last_assistant_text = coalesce(@lastAssistant, last_assistant_text)
         WHERE conversation_id = @conversationId`,
      ),
      deleteMessage: db
        .prepare<[string, string], number>('DELETE FROM messages WHERE conversation_id = ? AND msg_key = ? RETURNING id')
        .pluck(),
      deleteFts: db.prepare<[number]>('DELETE FROM messages_fts WHERE rowid = ?'),
      recount: db.prepare<[string], { count: number; maxTs: number | null }>(
        'SELECT count(*) AS count, max(timestamp) AS maxTs FROM messages WHERE conversation_id = ?',
      ),
      firstUser: db
        .prepare<[string], string>(
          `SELECT content FROM messages WHERE conversation_id = ? AND role = 'user' AND trim(content) <> ''
           ORDER BY id LIMIT 1`,
        )
        .pluck(),
      lastAssistant: db
        .prepare<[string], string>(
          `SELECT content FROM messages WHERE conversation_id = ? AND role = 'assistant' AND trim(content) <> ''
           ORDER BY id DESC LIMIT 1`,
        )
        .pluck(),
      resetSummary: db.prepare<{ conversationId: string; count: number; maxTs: number | null; firstUser: string | null; lastAssistant: string | null }>(
        `UPDATE conversations SET message_count = @count, updated_at_ms = coalesce(@maxTs, updated_at_ms),
           first_user_text = @firstUser, last_assistant_text = @lastAssistant
         WHERE conversation_id = @conversationId`,
      ),
      // Ranking selects ids and scores only: carrying content through the sort would read every
      // matching message's text, not just the few returned. BM25 is scored for the newest
      // MAX_RANKED_CANDIDATES matches at most (FTS5 walks the matches newest first and stops there):
      // scoring every match made a query of common words cost ~0.5 s over 800k messages, and
      // grew with the history. Below the cap the result is exactly the full ranking.
      rank: db.prepare<{ match: string; limit: number; candidates: number }, RankedRow>(
        `SELECT id, rank_bm25 FROM (
           SELECT rowid AS id, bm25(messages_fts) AS rank_bm25 FROM messages_fts
           WHERE messages_fts MATCH @match
           ORDER BY rowid DESC
           LIMIT @candidates)
         ORDER BY rank_bm25, id
         LIMIT @limit`,
      ),
      rankInProject: db.prepare<ProjectParams & { match: string; limit: number; candidates: number }, RankedRow>(
        `SELECT id, rank_bm25 FROM (
           SELECT messages_fts.rowid AS id, bm25(messages_fts) AS rank_bm25
           FROM messages_fts
           JOIN messages m ON m.id = messages_fts.rowid
           JOIN conversations c ON c.conversation_id = m.conversation_id
           WHERE messages_fts MATCH @match AND ${PROJECT_FILTER}
           ORDER BY messages_fts.rowid DESC
           LIMIT @candidates)
         ORDER BY rank_bm25, id
         LIMIT @limit`,
      ),
      hit: db.prepare<[number], HitRow>(
        `SELECT m.id, m.conversation_id, m.role, m.timestamp, m.content, m.tool_calls_json, c.session_id, c.workspace_dir
         FROM messages m JOIN conversations c ON c.conversation_id = m.conversation_id
         WHERE m.id = ?`,
      ),
      counts: db.prepare<[], { conversations: number; messages: number }>(
        `SELECT (SELECT count(*) FROM conversations) AS conversations, (SELECT count(*) FROM messages) AS messages`,
      ),
    };
    this.appendInTransaction = db.transaction((id: string, rows: MessageRows) => this.appendAll(id, rows));
    this.removeInTransaction = db.transaction((id: string, keys: string[]) => this.removeAll(id, keys));
  }

  upsertConversation(c: ConversationRecord): void {
    this.stmts.upsertConversation.run({
      conversationId: c.conversationId,
      sessionId: c.sessionId,
      source: c.source,
      workspaceDir: c.workspaceDir ?? null,
      historyFile: c.historyFile ?? null,
      createdAtMs: c.createdAtMs ?? null,
    });
  }

  /** Inserts in the given (conversation) order, skipping keys already stored; returns how many were new. */
  appendMessages(conversationId: string, messages: readonly KeyedMessage[]): number {
    if (messages.length === 0) return 0;
    return this.appendInTransaction(conversationId, encodeMessageRows(messages));
  }

  /**
   * `appendMessages` for rows already encoded, without a savepoint of its own, for a caller whose
   * transaction (or savepoint) already makes the write whole: a throw may leave some of the messages
   * inserted, for that transaction to roll back. Each savepoint costs the pages it touches a copy in
   * SQLite's statement journal; nested ones cost it twice. With `deferIndex`, the new messages'
   * index rows are pushed there for the caller to insert with `indexRows` in the same transaction,
   * instead of being indexed here.
   */
  appendRowsWithinTransaction(conversationId: string, rows: MessageRows, deferIndex?: FtsRow[]): number {
    if (!this.db.inTransaction) throw new EvermeError('internal', 'appendRowsWithinTransaction needs an open transaction');
    if (rows.count === 0) return 0;
    return this.appendAll(conversationId, rows, deferIndex);
  }

  /** Indexes rows `appendRowsWithinTransaction` deferred; the caller's transaction must hold their messages. */
  indexRows(rows: readonly FtsRow[]): void {
    for (const [rowid, text] of rows) this.stmts.insertFts.run(rowid, text);
  }

  private appendAll(conversationId: string, rows: MessageRows, deferIndex?: FtsRow[]): number {
    if (this.stmts.conversationExists.get(conversationId) === undefined) {
      throw new EvermeError('internal', `Conversation ${conversationId} must be stored before its messages`);
    }
    const summary: AppendSummary = { conversationId, count: 0, minTs: null, maxTs: null, firstUser: null, lastAssistant: null };
    let lastAssistant = -1;
    for (let i = 0; i < rows.count; i++) {
      const role = rowRole(rows, i);
      const timestamp = rowTimestamp(rows, i);
      const result = this.stmts.insertMessage.run(
        conversationId,
        rows.keys[i]!,
        role,
        timestamp,
        rowContent(rows, i),
        rowToolCalls(rows, i),
        rows.toolCallIds[i] ?? null,
        rowTurnComplete(rows, i),
      );
      if (result.changes === 0) continue;
      const indexed = rowIndexedText(rows, i);
      if (indexed !== null) {
        if (deferIndex) deferIndex.push([result.lastInsertRowid, indexed]);
        else this.stmts.insertFts.run(result.lastInsertRowid, indexed);
      }
      summary.count++;
      summary.minTs = summary.minTs === null ? timestamp : Math.min(summary.minTs, timestamp);
      summary.maxTs = summary.maxTs === null ? timestamp : Math.max(summary.maxTs, timestamp);
      if (role === 'user' && summary.firstUser === null && rowHasText(rows, i)) {
        summary.firstUser = excerpt(rowContentText(rows, i) ?? '', PREVIEW_CHARS);
      } else if (role === 'assistant' && rowHasText(rows, i)) {
        lastAssistant = i;
      }
    }
    if (summary.count === 0) return 0;
    // Decoded once, for the one message the preview quotes.
    if (lastAssistant >= 0) summary.lastAssistant = excerpt(rowContentText(rows, lastAssistant) ?? '', PREVIEW_CHARS);
    this.stmts.afterAppend.run(summary);
    return summary.count;
  }

  /** Removes messages (and their index entries) that left the conversation; returns how many existed. */
  removeMessages(conversationId: string, keys: string[]): number {
    if (keys.length === 0) return 0;
    return this.removeInTransaction(conversationId, keys);
  }

  private removeAll(conversationId: string, keys: string[]): number {
    let removed = 0;
    for (const key of keys) {
      const id = this.stmts.deleteMessage.get(conversationId, key);
      if (id === undefined) continue;
      this.stmts.deleteFts.run(id);
      removed++;
    }
    if (removed > 0) {
      const { count, maxTs } = this.stmts.recount.get(conversationId) ?? { count: 0, maxTs: null };
      const firstUser = this.stmts.firstUser.get(conversationId);
      const lastAssistant = this.stmts.lastAssistant.get(conversationId);
      this.stmts.resetSummary.run({
        conversationId,
        count,
        maxTs,
        firstUser: firstUser === undefined ? null : excerpt(firstUser, PREVIEW_CHARS),
        lastAssistant: lastAssistant === undefined ? null : excerpt(lastAssistant, PREVIEW_CHARS),
      });
    }
    return removed;
  }

  /**
   * Full-text search, best first. Messages holding every term come first; if they are fewer than
   * the limit, messages holding some of the terms fill the rest.
   */
  search(query: string, opts: SearchOptions = {}): SearchHit[] {
    const fts = buildFtsQuery(query);
    if (!fts) return [];
    const limit = clampLimit(opts.limit, MAX_SEARCH_LIMIT);
    const project = projectParams(opts.project);

    const candidates = MAX_RANKED_CANDIDATES;
    const rank = (match: string): RankedRow[] =>
      project.project === null
        ? this.stmts.rank.all({ match, limit, candidates })
        : this.stmts.rankInProject.all({ ...project, match, limit, candidates });

    const scored = rank(fts.strict).map((r) => ({ id: r.id, score: -r.rank_bm25 }));
    if (fts.loose && scored.length < limit) {
      const seen = new Set(scored.map((s) => s.id));
      const fill = rank(fts.loose)
        .filter((r) => !seen.has(r.id))
        .slice(0, limit - scored.length);
      // BM25 of a partial match can beat a full one; scale the fill below the last full match so
      // the list stays sorted by score, keeping the fill's own order.
      const floor = scored.at(-1)?.score;
      const top = fill.length > 0 ? -fill[0]!.rank_bm25 : undefined;
      const scale = floor !== undefined && top !== undefined && top >= floor ? (floor / top) * 0.5 : 1;
      for (const r of fill) scored.push({ id: r.id, score: -r.rank_bm25 * scale });
    }

    const hits: SearchHit[] = [];
    for (const { id, score } of scored) {
      const row = this.stmts.hit.get(id);
      if (!row) continue;
      hits.push({
        conversationId: row.conversation_id,
        sessionId: row.session_id,
        role: row.role,
        timestamp: row.timestamp,
        snippet: makeSnippet(storedSearchableText(row), fts.terms),
        score,
        ...(row.workspace_dir === null ? {} : { workspaceDir: row.workspace_dir }),
      });
    }
    return hits;
  }

  /** Conversations with messages, most recently active first. */
  recentConversations(opts: RecentOptions = {}): ConversationSummary[] {
    return listRecentConversations(this.db, { ...(opts.project === undefined ? {} : { project: opts.project }), limit: clampLimit(opts.limit, MAX_RECENT_LIMIT) });
  }

  /** The keys stored for a conversation: for the embedded store, its high-water marks. */
  keysOf(conversationId: string): Set<string> {
    return new Set(this.stmts.keysOf.all(conversationId));
  }

  counts(): { conversations: number; messages: number } {
    return this.stmts.counts.get() ?? { conversations: 0, messages: 0 };
  }
}

interface ConversationRecordParams {
  conversationId: string;
  sessionId: string;
  source: string;
  workspaceDir: string | null;
  historyFile: string | null;
  createdAtMs: number | null;
}

/** Rebuilds the text a stored message was indexed from, so the snippet quotes the original. */
function storedSearchableText(row: HitRow): string {
  const content = row.content ?? '';
  switch (row.role) {
    case 'user':
      return searchableText({ role: 'user', timestamp: row.timestamp, content });
    case 'tool':
      return searchableText({ role: 'tool', timestamp: row.timestamp, toolCallId: '', content });
    case 'assistant':
      return assistantText(row.content ?? undefined, parseToolCalls(row.tool_calls_json));
  }
}

function parseToolCalls(json: string | null): AgentToolCall[] | undefined {
  return parseJsonColumn(json, toolCallsSchema);
}
