import type Database from 'better-sqlite3';
import * as z from 'zod';
import type { AgentMessage, AgentToolCall, KeyedMessage } from '../core/agent-message.js';
import { conversationWithMeta, inProject } from './conversation-list.js';

/** A conversation as an export describes it (what re-importing needs to rebuild it exactly). */
export interface ExportConversation {
  conversationId: string;
  sessionId: string;
  source: 'messages' | 'ledger';
  workspaceDir?: string;
  historyFile?: string;
  createdAtMs?: number;
  updatedAtMs?: number;
  messageCount: number;
  /** What MiniMax Code's session index says of the session (see store/session-meta.ts). */
  title?: string;
  kind?: string;
  parentSessionId?: string;
}

export interface ExportFilter {
  conversationId?: string;
  /** Conversations whose workspace is this directory or lies under it. */
  project?: string;
  /** Conversations with a message at or after this instant. */
  sinceMs?: number;
}

interface ConversationRow {
  conversation_id: string;
  session_id: string;
  source: string;
  workspace_dir: string | null;
  history_file: string | null;
  created_at_ms: number | null;
  updated_at_ms: number | null;
  message_count: number;
  title: string | null;
  kind: string | null;
  parent_session_id: string | null;
  /** The paging key: creation time, unknown first. */
  sort_ms: number;
}

/** The columns `storedMessage` reads, and their row: every reader of stored messages selects these. */
export const STORED_MESSAGE_COLUMNS = 'id, msg_key, role, timestamp, content, tool_calls_json, tool_call_id, turn_complete';

export interface StoredMessageRow {
  id: number;
  msg_key: string;
  role: string;
  timestamp: number;
  content: string | null;
  tool_calls_json: string | null;
  tool_call_id: string | null;
  turn_complete: number | null;
}

/** What the `tool_calls_json` column holds (an assistant's calls as written): every reader parses it with this. */
export const storedToolCallsSchema = z.array(z.object({ id: z.string(), type: z.literal('function'), name: z.string(), arguments: z.string() }));

/** A conversation row with its session's title, kind and parent (a primary-key lookup per row). */
const WITH_META = conversationWithMeta('coalesce(c.created_at_ms, -1) AS sort_ms');

/** Pages, not iterators: a page is read, written out (awaiting a slow consumer), then the next. */
const CONVERSATION_PAGE = 200;
const MESSAGE_PAGE = 500;

/**
 * The stored message in exactly the shape the converter gave the sinks (and the gateway received):
 * same fields, same key order, so an export's bytes are the gateway's.
 */
export function storedMessage(row: StoredMessageRow): AgentMessage | undefined {
  switch (row.role) {
    case 'user':
      return { role: 'user', timestamp: row.timestamp, content: row.content ?? '' };
    case 'tool':
      return { role: 'tool', timestamp: row.timestamp, toolCallId: row.tool_call_id ?? '', content: row.content ?? '' };
    case 'assistant': {
      const message: AgentMessage = { role: 'assistant', timestamp: row.timestamp, turnComplete: row.turn_complete === 1 };
      if (row.content !== null) message.content = row.content;
      const calls = parseToolCalls(row.tool_calls_json);
      if (calls) message.toolCalls = calls;
      return message;
    }
    default:
      return undefined;
  }
}

function parseToolCalls(json: string | null): AgentToolCall[] | undefined {
  if (json === null) return undefined;
  try {
    const parsed = storedToolCallsSchema.safeParse(JSON.parse(json));
    return parsed.success && parsed.data.length > 0 ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function toConversation(row: ConversationRow): ExportConversation {
  return {
    conversationId: row.conversation_id,
    sessionId: row.session_id,
    source: row.source === 'ledger' ? 'ledger' : 'messages',
    messageCount: row.message_count,
    ...(row.workspace_dir === null ? {} : { workspaceDir: row.workspace_dir }),
    ...(row.history_file === null ? {} : { historyFile: row.history_file }),
    ...(row.created_at_ms === null ? {} : { createdAtMs: row.created_at_ms }),
    ...(row.updated_at_ms === null ? {} : { updatedAtMs: row.updated_at_ms }),
    ...(row.title === null ? {} : { title: row.title }),
    ...(row.kind === null ? {} : { kind: row.kind }),
    ...(row.parent_session_id === null ? {} : { parentSessionId: row.parent_session_id }),
  };
}

/**
 * Reads the embedded store for export: conversations oldest first (then by id), each one's messages
 * in stored order. Deterministic for a given store; memory is bounded by one page.
 */
export class ExportReader {
  private readonly stmts;

  constructor(db: Database.Database) {
    this.stmts = {
      count: db
        .prepare<{ sinceMs: number | null }, number>(
          'SELECT count(*) FROM conversations WHERE message_count > 0 AND (@sinceMs IS NULL OR updated_at_ms >= @sinceMs)',
        )
        .pluck(),
      page: db.prepare<{ afterMs: number; afterId: string; limit: number; sinceMs: number | null }, ConversationRow>(
        `${WITH_META} WHERE c.message_count > 0
           AND (coalesce(c.created_at_ms, -1) > @afterMs OR (coalesce(c.created_at_ms, -1) = @afterMs AND c.conversation_id > @afterId))
           AND (@sinceMs IS NULL OR c.updated_at_ms >= @sinceMs)
         ORDER BY sort_ms, c.conversation_id
         LIMIT @limit`,
      ),
      one: db.prepare<[string], ConversationRow>(
        `${WITH_META} WHERE c.conversation_id = ? AND c.message_count > 0`,
      ),
      messages: db.prepare<[string, number, number], StoredMessageRow>(
        `SELECT ${STORED_MESSAGE_COLUMNS} FROM messages
         WHERE conversation_id = ? AND id > ? ORDER BY id LIMIT ?`,
      ),
    };
  }

  /** How many conversations the export will visit (for the progress bar). */
  count(filter: ExportFilter): number {
    if (filter.conversationId === undefined && filter.project === undefined) return this.stmts.count.get({ sinceMs: filter.sinceMs ?? null }) ?? 0;
    // A workspace filter is decided row by row: walk the (small) conversation rows once.
    let n = 0;
    for (const c of this.conversations(filter)) if (c.messageCount > 0) n++;
    return n;
  }

  *conversations(filter: ExportFilter): Generator<ExportConversation> {
    if (filter.conversationId !== undefined) {
      const row = this.stmts.one.get(filter.conversationId);
      if (row && this.keep(row, filter)) yield toConversation(row);
      return;
    }
    // Below every sort key (unknown creation sorts as -1).
    let afterMs = -2;
    let afterId = '';
    for (;;) {
      const rows = this.stmts.page.all({ afterMs, afterId, limit: CONVERSATION_PAGE, sinceMs: filter.sinceMs ?? null });
      for (const row of rows) if (this.keep(row, filter)) yield toConversation(row);
      const last = rows.at(-1);
      if (!last || rows.length < CONVERSATION_PAGE) return;
      afterMs = last.sort_ms;
      afterId = last.conversation_id;
    }
  }

  /** One page of messages at a time; `afterId` 0 starts at the beginning. */
  *messages(conversationId: string): Generator<KeyedMessage[]> {
    let afterId = 0;
    for (;;) {
      const rows = this.stmts.messages.all(conversationId, afterId, MESSAGE_PAGE);
      const page: KeyedMessage[] = [];
      for (const row of rows) {
        const message = storedMessage(row);
        if (message) page.push({ key: row.msg_key, message });
      }
      if (page.length > 0) yield page;
      const last = rows.at(-1);
      if (!last || rows.length < MESSAGE_PAGE) return;
      afterId = last.id;
    }
  }

  private keep(row: ConversationRow, filter: ExportFilter): boolean {
    if (filter.sinceMs !== undefined && (row.updated_at_ms === null || row.updated_at_ms < filter.sinceMs)) return false;
    if (filter.project !== undefined && !inProject(row.workspace_dir ?? undefined, filter.project)) return false;
    return true;
  }
}
