import type { AgentMessage, AgentToolCall } from '../core/agent-message.js';
import { capText, headAndTail } from './fts-text.js';

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

/** An assistant message's searchable text: its words, then each tool call's name and arguments. */
export function assistantText(content: string | undefined, toolCalls: readonly AgentToolCall[] | undefined): string {
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
