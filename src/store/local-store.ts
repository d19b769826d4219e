import type Database from 'better-sqlite3';
import { EvermeError } from '../core/errors.js';
import type { AgentMessage, AgentToolCall, KeyedMessage } from '../core/agent-message.js';
import type { ConversationMeta, Rekey } from './store-types.js';
import { storedToolCallsSchema } from './export-reader.js';
import { parseJsonColumn } from './json-column.js';
import { clampLimit } from './limits.js';
import { buildFtsQuery, excerpt, makeSnippet, type SnippetMarks } from './fts-text.js';
import { MessageRanker, type RankingParams } from './search-ranking.js';
import { TermIndexWriter, type TermIndexOptions } from './term-index.js';
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
import { dayOf, MessageDays } from './message-days.js';
import { listRecentConversations, type ConversationSummary } from './conversation-list.js';
import { searchScope } from './search-scope.js';

export type { ConversationSummary };

/** What the store keeps about a conversation: exactly what a sink is told about it. */
export type ConversationRecord = ConversationMeta;

export interface SearchHit {
  /** The message's row id in the store: what `mem_get` and `mem_timeline` open. */
  messageId: number;
  conversationId: string;
  sessionId: string;
  role: AgentMessage['role'];
  timestamp: number;
  snippet: string;
  /** Higher is better (negated BM25). */
  score: number;
  workspaceDir?: string;
  /** What MiniMax Code's session index calls the session. */
  title?: string;
}

export interface SearchOptions {
  /** Default 10, at most 50. */
  limit?: number;
  /** Only conversations whose workspace is this directory or lies under it. */
  project?: string;
  /** Only messages of this role. */
  role?: AgentMessage['role'];
  /** Only messages at or after this time (epoch ms). */
  since?: number;
  /** Only messages before this time (epoch ms). */
  until?: number;
  /** Ranking experiments (the recall bench): left out, the measured defaults apply. */
  ranking?: Partial<RankingParams>;
  /** How snippets mark matches; `**like this**` unless the viewer asks for sentinels. */
  marks?: SnippetMarks;
}

/** A stored message as `mem_get` and `everme get` show it: whole (up to the store's cap). */
export interface StoredMessage {
  messageId: number;
  conversationId: string;
  sessionId: string;
  role: AgentMessage['role'];
  timestamp: number;
  content: string;
  toolCalls?: AgentToolCall[];
  toolCallId?: string;
  workspaceDir?: string;
  /** What MiniMax Code's session index calls the session. */
  title?: string;
}

export interface RecentOptions {
  project?: string;
  /** Default 10, at most 100. */
  limit?: number;
}

const MAX_SEARCH_LIMIT = 50;
const MAX_RECENT_LIMIT = 100;
const PREVIEW_CHARS = 300;

interface HitRow {
  id: number;
  conversation_id: string;
  role: AgentMessage['role'];
  timestamp: number;
  content: string | null;
  tool_calls_json: string | null;
  session_id: string;
  workspace_dir: string | null;
  title: string | null;
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

/** Stored messages with what `mem_get` and `mem_timeline` show of their conversation (title from the session index). */
const STORED_ROWS = `SELECT m.id, m.conversation_id, m.role, m.timestamp, m.content, m.tool_calls_json, m.tool_call_id, c.session_id, c.workspace_dir,
    (SELECT title FROM session_meta WHERE session_id = c.session_id) AS title
  FROM messages m JOIN conversations c ON c.conversation_id = m.conversation_id`;

/** What a store writes: conversations, messages with their FTS rows, and a conversation's summary. */
function writeStatements(db: Database.Database) {
  return {
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
    // The same insert with the row id given: the first message stored after the top ids were freed (migration 19).
    insertMessageAt: db.prepare<[number, ...MessageParams]>(
      `INSERT INTO messages (id, conversation_id, msg_key, role, timestamp, content, tool_calls_json, tool_call_id, turn_complete)
       VALUES (?, ?, ?, ?, ?, CAST(? AS TEXT), CAST(? AS TEXT), ?, ?)
       ON CONFLICT (conversation_id, msg_key) DO NOTHING`,
    ),
    // The highest id ever deleted, when no stored message is above it: SQLite would give it again.
    freedIdAbove: db
      .prepare<[], number>('SELECT id FROM message_id_floor WHERE id > coalesce((SELECT max(id) FROM messages), 0)')
      .pluck(),
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
    deleteMessage: db.prepare<[string, string], { id: number; timestamp: number }>(
      'DELETE FROM messages WHERE conversation_id = ? AND msg_key = ? RETURNING id, timestamp',
    ),
    deleteFts: db.prepare<[number]>('DELETE FROM messages_fts WHERE rowid = ?'),
    // In place: the row keeps its id (the `m…` id recall hands out) and its index entries. A row
    // already under the new key leaves the old one to be removed as gone.
    rekeyMessage: db.prepare<[string, string, string]>('UPDATE OR IGNORE messages SET msg_key = ? WHERE conversation_id = ? AND msg_key = ?'),
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
  };
}

/** What a store reads back: hits, messages by id and around one, and its counts. */
function readStatements(db: Database.Database) {
  return {
    hit: db.prepare<[number], HitRow>(
      `SELECT m.id, m.conversation_id, m.role, m.timestamp, m.content, m.tool_calls_json, c.session_id, c.workspace_dir,
         (SELECT title FROM session_meta WHERE session_id = c.session_id) AS title
       FROM messages m JOIN conversations c ON c.conversation_id = m.conversation_id
       WHERE m.id = ?`,
    ),
    byId: db.prepare<[string], StoredRow>(
      `${STORED_ROWS} WHERE m.id IN (SELECT value FROM json_each(?))`,
    ),
    // A conversation's messages are read through its (conversation_id, msg_key) index, whose
    // entries carry the row id: no scan of other conversations, no extra index to write at import.
    before: db.prepare<{ id: number; n: number }, StoredRow>(
      `${STORED_ROWS} WHERE m.conversation_id = (SELECT conversation_id FROM messages WHERE id = @id) AND m.id < @id
       ORDER BY m.id DESC LIMIT @n`,
    ),
    after: db.prepare<{ id: number; n: number }, StoredRow>(
      `${STORED_ROWS} WHERE m.conversation_id = (SELECT conversation_id FROM messages WHERE id = @id) AND m.id > @id
       ORDER BY m.id LIMIT @n`,
    ),
    // EXISTS stops at the first row; count(*) walks every message (seconds on a large store).
    anyMessage: db.prepare<[], number>('SELECT EXISTS (SELECT 1 FROM messages)').pluck(),
    counts: db.prepare<[], { conversations: number; messages: number }>(
      `SELECT (SELECT count(*) FROM conversations) AS conversations, (SELECT count(*) FROM messages) AS messages`,
    ),
  };
}

/**
 * The embedded memory store. Every write is a plain synchronous call so the caller can put it and
 * the high-water mark in one `db.transaction`; on their own, writes are atomic per call.
 */
export class LocalStore {
  private readonly stmts;
  private readonly days: MessageDays;
  private readonly ranker: MessageRanker;
  /** Made on the first write: readers never need it. */
  private termWriter: TermIndexWriter | undefined;
  // Built once: better-sqlite3 nests them as savepoints inside a caller's transaction.
  private readonly appendInTransaction: (conversationId: string, rows: MessageRows) => number;
  private readonly removeInTransaction: (conversationId: string, keys: string[]) => number;
  private readonly rekeyInTransaction: (conversationId: string, moves: readonly Rekey[]) => void;

  /** `termIndex`: how its writes keep the term index (a bulk loader's, see `TermIndexOptions`). */
  constructor(
    private readonly db: Database.Database,
    private readonly termIndex: TermIndexOptions = {},
  ) {
    this.ranker = new MessageRanker(db);
    this.stmts = { ...writeStatements(db), ...readStatements(db) };
    this.days = new MessageDays(db);
    this.appendInTransaction = db.transaction((id: string, rows: MessageRows) => this.appendAll(id, rows));
    this.removeInTransaction = db.transaction((id: string, keys: string[]) => this.removeAll(id, keys));
    this.rekeyInTransaction = db.transaction((id: string, moves: readonly Rekey[]) => {
      for (const { from, to } of moves) this.stmts.rekeyMessage.run(to, id, from);
    });
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
    // The term index follows FTS5 in the same transaction (search-ranking reads both).
    this.terms().add(rows);
  }

  /** Ends a bulk loader's run: the words its deferred writes made common (see `TermIndexOptions.bulk`), in one transaction. */
  finishTermIndex(): void {
    if (this.termWriter) this.db.transaction(() => this.termWriter!.finish()).immediate();
  }

  private terms(): TermIndexWriter {
    this.termWriter ??= new TermIndexWriter(this.db, this.termIndex);
    return this.termWriter;
  }

  private appendAll(conversationId: string, rows: MessageRows, deferIndex?: FtsRow[]): number {
    if (this.stmts.conversationExists.get(conversationId) === undefined) {
      throw new EvermeError('internal', `Conversation ${conversationId} must be stored before its messages`);
    }
    const summary: AppendSummary = { conversationId, count: 0, minTs: null, maxTs: null, firstUser: null, lastAssistant: null };
    const index: FtsRow[] = deferIndex ?? [];
    const days = new Map<number, number>();
    let lastAssistant = -1;
    // Set only after a forget or rewind freed the top ids: the first new row is placed above them.
    const freed = this.stmts.freedIdAbove.get();
    let placeAt = freed === undefined ? undefined : freed + 1;
    for (let i = 0; i < rows.count; i++) {
      const role = rowRole(rows, i);
      const timestamp = rowTimestamp(rows, i);
      const params: MessageParams = [
        conversationId,
        rows.keys[i]!,
        role,
        timestamp,
        rowContent(rows, i),
        rowToolCalls(rows, i),
        rows.toolCallIds[i] ?? null,
        rowTurnComplete(rows, i),
      ];
      const result = placeAt === undefined ? this.stmts.insertMessage.run(...params) : this.stmts.insertMessageAt.run(placeAt, ...params);
      if (result.changes === 0) continue;
      // SQLite goes on from the row placed above the freed ids.
      placeAt = undefined;
      const indexed = rowIndexedText(rows, i);
      if (indexed !== null) index.push([result.lastInsertRowid, indexed]);
      summary.count++;
      const day = dayOf(timestamp);
      days.set(day, (days.get(day) ?? 0) + 1);
      summary.minTs = summary.minTs === null ? timestamp : Math.min(summary.minTs, timestamp);
      summary.maxTs = summary.maxTs === null ? timestamp : Math.max(summary.maxTs, timestamp);
      if (role === 'user' && summary.firstUser === null && rowHasText(rows, i)) {
        summary.firstUser = excerpt(rowContentText(rows, i) ?? '', PREVIEW_CHARS);
      } else if (role === 'assistant' && rowHasText(rows, i)) {
        lastAssistant = i;
      }
    }
    if (!deferIndex) this.indexRows(index);
    if (summary.count === 0) return 0;
    this.days.add(days);
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

  /** Stored messages go by new keys (see `Rekey`), each where it is: one no longer under its old key is left alone. */
  rekeyMessages(conversationId: string, moves: readonly Rekey[]): void {
    if (moves.length > 0) this.rekeyInTransaction(conversationId, moves);
  }

  private removeAll(conversationId: string, keys: string[]): number {
    const removed: number[] = [];
    const days = new Map<number, number>();
    for (const key of keys) {
      const row = this.stmts.deleteMessage.get(conversationId, key);
      if (row === undefined) continue;
      this.stmts.deleteFts.run(row.id);
      const day = dayOf(row.timestamp);
      days.set(day, (days.get(day) ?? 0) - 1);
      removed.push(row.id);
    }
    this.terms().remove(removed);
    this.days.add(days);
    if (removed.length > 0) {
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
    return removed.length;
  }

  /**
   * Full-text search, best first: BM25 over every matching message, then the signals of
   * `search-ranking.ts`. English words match by their stem, stopwords are left out of the query.
   */
  search(query: string, opts: SearchOptions = {}): SearchHit[] {
    const fts = buildFtsQuery(query);
    if (!fts) return [];
    const limit = clampLimit(opts.limit, MAX_SEARCH_LIMIT);
    const scored = this.ranker.rank(fts, limit, searchScope(opts), opts.ranking);

    const hits: SearchHit[] = [];
    for (const { id, score } of scored) {
      const row = this.stmts.hit.get(id);
      if (!row) continue;
      hits.push({
        messageId: row.id,
        conversationId: row.conversation_id,
        sessionId: row.session_id,
        role: row.role,
        timestamp: row.timestamp,
        snippet: makeSnippet(storedSearchableText(row), fts.terms, opts.marks),
        score,
        ...(row.workspace_dir === null ? {} : { workspaceDir: row.workspace_dir }),
        ...(row.title === null ? {} : { title: row.title }),
      });
    }
    return hits;
  }

  /** The messages with these ids, in the order asked; ids the store does not hold are left out. */
  messagesByIds(ids: readonly number[]): StoredMessage[] {
    if (ids.length === 0) return [];
    const found = new Map(this.stmts.byId.all(JSON.stringify(ids)).map((row) => [row.id, toStoredMessage(row)]));
    return ids.flatMap((id) => found.get(id) ?? []);
  }

  /**
   * The message `id` with up to `before` messages before it and `after` after it in its
   * conversation, in order; empty when the store does not hold it.
   */
  around(id: number, before: number, after: number): StoredMessage[] {
    const [self] = this.messagesByIds([id]);
    if (!self) return [];
    const earlier = before > 0 ? this.stmts.before.all({ id, n: before }).reverse() : [];
    const later = after > 0 ? this.stmts.after.all({ id, n: after }) : [];
    return [...earlier.map(toStoredMessage), self, ...later.map(toStoredMessage)];
  }

  /** Conversations with messages, most recently active first. */
  recentConversations(opts: RecentOptions = {}): ConversationSummary[] {
    return listRecentConversations(this.db, { ...(opts.project === undefined ? {} : { project: opts.project }), limit: clampLimit(opts.limit, MAX_RECENT_LIMIT) });
  }

  /** The keys stored for a conversation: for the embedded store, its high-water marks. */
  keysOf(conversationId: string): Set<string> {
    return new Set(this.stmts.keysOf.all(conversationId));
  }

  /** Whether the store holds any message at all (a zero-hit search asks, to say "empty" rather than "no match"). */
  hasMessages(): boolean {
    return this.stmts.anyMessage.get() === 1;
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

/** A hit's row and the call a tool result answers (`mem_get`, `mem_timeline`). */
interface StoredRow extends HitRow {
  tool_call_id: string | null;
}

function toStoredMessage(row: StoredRow): StoredMessage {
  const message: StoredMessage = {
    messageId: row.id,
    conversationId: row.conversation_id,
    sessionId: row.session_id,
    role: row.role,
    timestamp: row.timestamp,
    content: row.content ?? '',
  };
  const toolCalls = parseToolCalls(row.tool_calls_json);
  if (toolCalls && toolCalls.length > 0) message.toolCalls = toolCalls;
  if (row.tool_call_id !== null) message.toolCallId = row.tool_call_id;
  if (row.workspace_dir !== null) message.workspaceDir = row.workspace_dir;
  if (row.title !== null) message.title = row.title;
  return message;
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
  return parseJsonColumn(json, storedToolCallsSchema);
}
