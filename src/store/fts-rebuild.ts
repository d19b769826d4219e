import type Database from 'better-sqlite3';
import type { AgentToolCall } from '../core/agent-message.js';
import { toFtsText } from './fts-text.js';
import { assistantText, searchableText } from './searchable-text.js';

/**
 * Re-indexes every stored message, for a migration that changes how text is tokenized. Contentless
 * FTS5 keeps no text to re-read, so each message's searchable text is cut again from its content,
 * exactly as the writer cut it (`encodeMessageRows`). Free of zod: `database.ts` is on the
 * SessionStart hook's path.
 */
export function reindexMessages(db: Database.Database): number {
  const insert = db.prepare<[number, string]>('INSERT INTO messages_fts (rowid, text) VALUES (?, ?)');
  // Read a page at a time: a connection cannot write while it iterates, and a page bounds memory.
  const page = db.prepare<[number], { id: number; role: string; content: string | null; tool_calls_json: string | null }>(
    'SELECT id, role, content, tool_calls_json FROM messages WHERE id > ? ORDER BY id LIMIT 500',
  );
  let indexed = 0;
  for (let after = 0, rows = page.all(after); rows.length > 0; after = rows.at(-1)!.id, rows = page.all(after)) {
    for (const row of rows) {
      const text = storedText(row.role, row.content, row.tool_calls_json);
      if (text.length === 0) continue;
      insert.run(row.id, toFtsText(text));
      indexed++;
    }
  }
  return indexed;
}

function storedText(role: string, content: string | null, toolCallsJson: string | null): string {
  const text = content ?? '';
  if (role === 'user') return searchableText({ role: 'user', timestamp: 0, content: text });
  if (role === 'tool') return searchableText({ role: 'tool', timestamp: 0, toolCallId: '', content: text });
  return assistantText(content ?? undefined, toolCalls(toolCallsJson));
}

function toolCalls(json: string | null): AgentToolCall[] | undefined {
  if (json === null) return undefined;
  try {
    const value: unknown = JSON.parse(json);
    if (!Array.isArray(value)) return undefined;
    // What the writer stored: objects with a name and arguments; anything else is skipped, as the
    // store's own reader (parseJsonColumn) would skip it.
    return value.filter(
      (c): c is AgentToolCall => typeof c === 'object' && c !== null && typeof (c as AgentToolCall).name === 'string' && typeof (c as AgentToolCall).arguments === 'string',
    );
  } catch {
    return undefined;
  }
}
