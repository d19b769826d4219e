import * as z from 'zod';
import type { AgentMessage } from '../core/agent-message.js';
import type { ExportConversation } from '../store/export-reader.js';

/** What the first line of each conversation carries besides its message: enough to rebuild it. */
export interface ExportConversationMeta {
  sessionId: string;
  source: 'messages' | 'ledger';
  workspaceDir?: string;
  historyFile?: string;
  createdAtMs?: number;
  /** What MiniMax Code's session index said of the session: its title, kind and parent. */
  title?: string;
  kind?: string;
  parentSessionId?: string;
}

/**
 * One line of a jsonl export: one agent-memory message (exactly what the gateway receives in
 * `messages[]`), its conversation id, and the key it is stored under (so a store re-imported from
 * it, then synced from the same session files, recognises every message). Key order is fixed:
 * the same store gives the same bytes.
 */
export interface ExportLine {
  conversationId: string;
  conversation?: ExportConversationMeta;
  key: string;
  message: AgentMessage;
}

export function conversationMeta(c: ExportConversation): ExportConversationMeta {
  return {
    sessionId: c.sessionId,
    source: c.source,
    ...(c.workspaceDir === undefined ? {} : { workspaceDir: c.workspaceDir }),
    ...(c.historyFile === undefined ? {} : { historyFile: c.historyFile }),
    ...(c.createdAtMs === undefined ? {} : { createdAtMs: c.createdAtMs }),
    ...(c.title === undefined ? {} : { title: c.title }),
    ...(c.kind === undefined ? {} : { kind: c.kind }),
    ...(c.parentSessionId === undefined ? {} : { parentSessionId: c.parentSessionId }),
  };
}

export function exportLine(line: ExportLine): string {
  const ordered: ExportLine = line.conversation
    ? { conversationId: line.conversationId, conversation: line.conversation, key: line.key, message: line.message }
    : { conversationId: line.conversationId, key: line.key, message: line.message };
  return `${JSON.stringify(ordered)}\n`;
}

const timestamp = z.number().int().nonnegative();
const toolCall = z.object({ id: z.string().min(1), type: z.literal('function'), name: z.string().min(1), arguments: z.string() });

/** The agent-memory message as the gateway contract defines it. */
const messageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.literal('user'), timestamp, content: z.string() }),
  z.object({
    role: z.literal('assistant'),
    timestamp,
    turnComplete: z.boolean(),
    content: z.string().optional(),
    toolCalls: z.array(toolCall).min(1).optional(),
  }),
  z.object({ role: z.literal('tool'), timestamp, toolCallId: z.string().min(1), content: z.string() }),
]);

export const exportLineSchema = z.object({
  conversationId: z.string().min(1),
  conversation: z
    .object({
      sessionId: z.string().min(1),
      source: z.enum(['messages', 'ledger']),
      workspaceDir: z.string().optional(),
      historyFile: z.string().optional(),
      createdAtMs: timestamp.optional(),
      title: z.string().optional(),
      kind: z.string().optional(),
      parentSessionId: z.string().optional(),
    })
    .optional(),
  key: z.string().min(1),
  message: messageSchema,
});

/** Rebuilds the message with the converter's key order, whatever order the file had. */
export function canonicalMessage(m: z.infer<typeof messageSchema>): AgentMessage {
  switch (m.role) {
    case 'user':
      return { role: 'user', timestamp: m.timestamp, content: m.content };
    case 'tool':
      return { role: 'tool', timestamp: m.timestamp, toolCallId: m.toolCallId, content: m.content };
    case 'assistant': {
      const message: AgentMessage = { role: 'assistant', timestamp: m.timestamp, turnComplete: m.turnComplete };
      if (m.content !== undefined) message.content = m.content;
      if (m.toolCalls !== undefined) message.toolCalls = m.toolCalls.map((c) => ({ id: c.id, type: c.type, name: c.name, arguments: c.arguments }));
      return message;
    }
  }
}
