import type Database from 'better-sqlite3';
import { z } from 'zod';
import { EvermeError } from '../core/errors.js';
import type { AgentMessage, AgentToolCall, KeyedMessage } from '../core/agent-message.js';
import type { ConversationMeta } from './store-types.js';
import { parseJsonColumn } from './json-column.js';
import { clampLimit } from './limits.js';
import { buildFtsQuery, capText, excerpt, headAndTail, makeSnippet, toFtsText } from './fts-text.js';
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

/*
 * What gets indexed, per message. Indexing cost grows with every token and the import has a time
 * budget, while recall lives mostly in what the user and the assistant wrote: their text is indexed
 * up to 32 Ki characters; tool output (file dumps, logs: most of a session's bytes) only by its
 * opening and its end, where commands echo and errors land; tool-call arguments by their opening.
 * The stored content itself is never cut.
 */
export const MAX_INDEXED_TEXT_CHARS = 32 * 1024;
export const INDEXED_TOOL_RESULT_HEAD_CHARS = 2 * 1024;
export const INDEXED_TOOL_RESULT_TAIL_CHARS = 1024;
export const INDEXED_TOOL_ARGUMENT_CHARS = 2 * 1024;

const JSON_ESCAPE = /\\(?:u([0-9a-fA-F]{4})|(.))/g;
const JSON_ESCAPE_CHARS: Record<string, string> = { n: '\n', r: '\r', t: '\t', b: ' ', f: ' ' };

/** Tool arguments are JSON text: `\n` would glue into the next word (`nfoo`), so decode escapes. */
function unescapeJsonText(text: string): string {
  if (!text.includes('\\')) return text;
  return text.replace(JSON_ESCAPE, (_, hex: string | undefined, ch: string) =>
    hex ? String.fromCharCode(parseInt(hex, 16)) : (JSON_ESCAPE_CHARS[ch] ?? ch),
  );
}

function assistantText(content: string | undefined, toolCalls: readonly AgentToolCall[] | undefined): string {
  const text = capText(content ?? '', MAX_INDEXED_TEXT_CHARS);
  if (!toolCalls || toolCalls.length === 0) return text;
  const calls = toolCalls.map((c) => `${c.name} ${unescapeJsonText(capText(c.arguments, INDEXED_TOOL_ARGUMENT_CHARS))}`);
  return text ? `${text}\n${calls.join('\n')}` : calls.join('\n');
}

/**
 * The text a message is found by, cut from its original content. Snippets are cut from the same
 * text, so what they show is always something the index saw.
 */
export function searchableText(message: AgentMessage): string {
  switch (message.role) {
    case 'user':
      return capText(message.content, MAX_INDEXED_TEXT_CHARS);
    case 'tool':
      return headAndTail(message.content, INDEXED_TOOL_RESULT_HEAD_CHARS, INDEXED_TOOL_RESULT_TAIL_CHARS);
    case 'assistant':
      return assistantText(message.content, message.toolCalls);
  }
}

function hasText(text: string | undefined): text is string {
  return text !== undefined && /\S/u.test(text);
}

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
type MessageParams = [string, string, string, number, string | null, string | null, string | null, number | null];

/**
 * Index rows a caller inserts later (`LocalStore.indexRows`): FTS5 writes its pending terms to a new
 * segment at every savepoint, so rows indexed inside per-session savepoints cost a segment (and its
 * later merges) per session; indexed together after them they cost one per transaction.
 */
export type FtsRow = readonly [rowid: number | bigint, text: string];

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
  private readonly appendInTransaction: (conversationId: string, messages: KeyedMessage[], deferIndex?: FtsRow[]) => number;
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
      insertMessage: db.prepare<MessageParams>(
        `INSERT INTO messages (conversation_id, msg_key, role, timestamp, content, tool_calls_json, tool_call_id, turn_complete)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (conversation_id, msg_key) DO NOTHING`,
      ),
      insertFts: db.prepare<[number | bigint, string]>('INSERT INTO messages_fts (rowid, text) VALUES (?, ?)'),
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
    this.appendInTransaction = db.transaction((id: string, messages: KeyedMessage[], deferIndex?: FtsRow[]) =>
      this.appendAll(id, messages, deferIndex),
    );
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

  /**
   * Inserts in the given (conversation) order, skipping keys already stored; returns how many were
   * new. With `deferIndex`, the new messages' index rows are pushed there for the caller to insert
   * with `indexRows` in the same transaction, instead of being indexed here.
   */
  appendMessages(conversationId: string, messages: KeyedMessage[], deferIndex?: FtsRow[]): number {
    if (messages.length === 0) return 0;
    return this.appendInTransaction(conversationId, messages, deferIndex);
  }

  /**
   * `appendMessages` without a savepoint of its own, for a caller whose transaction (or savepoint)
   * already makes the write whole: a throw may leave some of the messages inserted, for that
   * transaction to roll back. Each savepoint costs the pages it touches a copy in SQLite's
   * statement journal; nested ones cost it twice.
   */
  appendWithinTransaction(conversationId: string, messages: KeyedMessage[], deferIndex?: FtsRow[]): number {
    if (!this.db.inTransaction) throw new EvermeError('internal', 'appendWithinTransaction needs an open transaction');
    if (messages.length === 0) return 0;
    return this.appendAll(conversationId, messages, deferIndex);
  }

  /** Indexes rows `appendMessages` deferred; the caller's transaction must hold their messages. */
  indexRows(rows: readonly FtsRow[]): void {
    for (const [rowid, text] of rows) this.stmts.insertFts.run(rowid, text);
  }

  private appendAll(conversationId: string, messages: KeyedMessage[], deferIndex?: FtsRow[]): number {
    if (this.stmts.conversationExists.get(conversationId) === undefined) {
      throw new EvermeError('internal', `Conversation ${conversationId} must be stored before its messages`);
    }
    const summary: AppendSummary = { conversationId, count: 0, minTs: null, maxTs: null, firstUser: null, lastAssistant: null };
    for (const { key, message } of messages) {
      const result = this.stmts.insertMessage.run(...messageParams(conversationId, key, message));
      if (result.changes === 0) continue;
      const text = searchableText(message);
      if (text.length > 0) {
        const row: FtsRow = [result.lastInsertRowid, toFtsText(text)];
        if (deferIndex) deferIndex.push(row);
        else this.stmts.insertFts.run(row[0], row[1]);
      }
      summary.count++;
      summary.minTs = summary.minTs === null ? message.timestamp : Math.min(summary.minTs, message.timestamp);
      summary.maxTs = summary.maxTs === null ? message.timestamp : Math.max(summary.maxTs, message.timestamp);
      if (message.role === 'user' && summary.firstUser === null && hasText(message.content)) {
        summary.firstUser = excerpt(message.content, PREVIEW_CHARS);
      } else if (message.role === 'assistant' && hasText(message.content)) {
        summary.lastAssistant = message.content;
      }
    }
    if (summary.count === 0) return 0;
    if (summary.lastAssistant !== null) summary.lastAssistant = excerpt(summary.lastAssistant, PREVIEW_CHARS);
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

function messageParams(conversationId: string, key: string, message: AgentMessage): MessageParams {
  switch (message.role) {
    case 'user':
      return [conversationId, key, 'user', message.timestamp, message.content, null, null, null];
    case 'tool':
      return [conversationId, key, 'tool', message.timestamp, message.content, null, message.toolCallId, null];
    case 'assistant': {
      const calls = message.toolCalls && message.toolCalls.length > 0 ? JSON.stringify(message.toolCalls) : null;
      return [conversationId, key, 'assistant', message.timestamp, message.content ?? null, calls, null, message.turnComplete ? 1 : 0];
    }
  }
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
