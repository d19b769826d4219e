import type Database from 'better-sqlite3';
import type { AgentMessage } from '../core/agent-message.js';
import { CONVERSATION_WITH_META, listRecentConversations, toConversationSummary, type ConversationRow, type ConversationSummary } from './conversation-list.js';
import { STORED_MESSAGE_COLUMNS, storedMessage, type StoredMessageRow } from './export-reader.js';
import { DAY_MS, dayOf, MessageDays } from './message-days.js';

/**
 * What `everme ui` reads from the embedded store that no command computes already: workspaces with
 * their counts, messages per day, one conversation's messages with their row ids (the ids search
 * hits carry, so a hit opens its conversation at its message). Everything else the viewer shows it
 * gets from the functions the commands use (recall, report, forget, status).
 */

export interface WorkspaceSummary {
  /** Undefined: the sessions whose workspace nobody recorded, grouped together. */
  workspaceDir?: string;
  conversations: number;
  messages: number;
  lastActivityMs?: number;
}

export interface DayCount {
  /** UTC midnight of the day. */
  dayMs: number;
  messages: number;
}

export interface ViewerMessage {
  /** The message's row id: what a search hit's `messageId` names. */
  id: number;
  message: AgentMessage;
}

export interface MessageWindow {
  messages: ViewerMessage[];
  /** Messages stored before the first one of this window, and after its last. */
  before: number;
  after: number;
}

interface WorkspaceRow {
  workspace_dir: string | null;
  conversations: number;
  messages: number;
  last_ms: number | null;
}

/**
 * Every workspace's counts and last activity: read from the workspace index alone (it holds every
 * column this asks for, migration 12), never from the conversations' rows.
 */
export const WORKSPACES_SQL = `SELECT workspace_dir, count(*) AS conversations, sum(message_count) AS messages, max(updated_at_ms) AS last_ms
  FROM conversations WHERE message_count > 0
  GROUP BY workspace_dir
  ORDER BY workspace_dir IS NULL, last_ms IS NULL, last_ms DESC, workspace_dir`;


export class ViewerStore {
  private readonly stmts;
  private readonly days: MessageDays;

  constructor(private readonly db: Database.Database) {
    this.days = new MessageDays(db);
    this.stmts = {
      workspaces: db.prepare<[], WorkspaceRow>(WORKSPACES_SQL),
      unknownWorkspace: db.prepare<{ limit: number }, ConversationRow>(
        `${CONVERSATION_WITH_META} WHERE c.message_count > 0 AND c.workspace_dir IS NULL
         ORDER BY c.updated_at_ms IS NULL, c.updated_at_ms DESC, c.conversation_id LIMIT @limit`,
      ),
      // With the session index's title, kind and parent (#30), as every list shows them.
      conversation: db.prepare<[string], ConversationRow>(`${CONVERSATION_WITH_META} WHERE c.conversation_id = ?`),
      messageAt: db.prepare<[string, number], number>(
        'SELECT count(*) FROM messages WHERE conversation_id = ? AND id < ?',
      ).pluck(),
      window: db.prepare<[string, number, number], StoredMessageRow>(
        `SELECT ${STORED_MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ? ORDER BY id LIMIT ? OFFSET ?`,
      ),
      total: db.prepare<[string], number>('SELECT count(*) FROM messages WHERE conversation_id = ?').pluck(),
    };
  }

  /** Every workspace with messages, most recently active first; the unknown-workspace group last. */
  workspaces(): WorkspaceSummary[] {
    return this.stmts.workspaces.all().map((row) => ({
      ...(row.workspace_dir === null ? {} : { workspaceDir: row.workspace_dir }),
      conversations: row.conversations,
      messages: row.messages,
      ...(row.last_ms === null ? {} : { lastActivityMs: row.last_ms }),
    }));
  }

  /** Messages per UTC day for the `days` days ending with the day of `nowMs`, oldest first, zero days included. */
  messagesPerDay(nowMs: number, days: number): DayCount[] {
    const lastDay = dayOf(nowMs);
    const firstDay = lastDay - days + 1;
    const counts = this.days.range(firstDay, lastDay);
    const out: DayCount[] = [];
    for (let day = firstDay; day <= lastDay; day++) out.push({ dayMs: day * DAY_MS, messages: counts.get(day) ?? 0 });
    return out;
  }

  /**
   * A workspace's conversations, most recently active first (the workspace and everything below it,
   * as `--project` means everywhere); `undefined` lists those whose workspace is unknown.
   */
  conversations(workspaceDir: string | undefined, limit: number): ConversationSummary[] {
    if (workspaceDir !== undefined) return listRecentConversations(this.db, { project: workspaceDir, limit });
    return this.stmts.unknownWorkspace.all({ limit }).map(toConversationSummary);
  }

  /** One conversation's summary, or undefined when the store does not hold it. */
  conversation(conversationId: string): ConversationSummary | undefined {
    const row = this.stmts.conversation.get(conversationId);
    return row ? toConversationSummary(row) : undefined;
  }

  /**
   * Up to `size` messages in stored order, starting at `offset`; with `aroundId`, the window that
   * shows that message a few messages below its top.
   */
  messages(conversationId: string, opts: { size: number; offset?: number; aroundId?: number }): MessageWindow {
    const total = this.stmts.total.get(conversationId) ?? 0;
    let offset = Math.max(0, opts.offset ?? 0);
    // Past the end (a hand-edited link, or messages forgotten since): the last page, not an empty
    // one that counts messages that do not exist.
    if (offset >= total) offset = Math.max(0, total - opts.size);
    if (opts.aroundId !== undefined) {
      const index = this.stmts.messageAt.get(conversationId, opts.aroundId) ?? 0;
      offset = Math.max(0, index - Math.min(CONTEXT_ABOVE, opts.size - 1));
    }
    const rows = this.stmts.window.all(conversationId, opts.size, offset);
    const messages: ViewerMessage[] = [];
    for (const row of rows) {
      const message = storedMessage(row);
      if (message) messages.push({ id: row.id, message });
    }
    return { messages, before: offset, after: Math.max(0, total - offset - rows.length) };
  }
}

/** Messages shown above the one a search hit opens. */
const CONTEXT_ABOVE = 5;
