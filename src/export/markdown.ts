import type { AgentMessage } from '../core/agent-message.js';
import type { ExportConversation } from '../store/export-reader.js';

function iso(ms: number | undefined): string {
  return ms === undefined ? 'unknown' : new Date(ms).toISOString();
}

/** A fence longer than any run of backticks inside, so no content can close it early. */
function fenced(text: string, lang = ''): string {
  let longest = 0;
  for (const run of text.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}${lang}\n${text}\n${fence}`;
}

/** Tool arguments are a JSON string: pretty-printed when they parse, as they are otherwise. */
function prettyArguments(args: string): string {
  try {
    return JSON.stringify(JSON.parse(args) as unknown, null, 2);
  } catch {
    return args;
  }
}

/** `<summary>` is HTML: the few characters that would break it are escaped. */
function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function folded(summary: string, body: string): string {
  return `<details>\n<summary>${escapeHtml(summary)}</summary>\n\n${body}\n\n</details>`;
}

/** The file name of a conversation: its id with anything not filesystem-safe replaced (a re-imported id may hold any character). */
export function markdownFileName(conversationId: string): string {
  return `${conversationId.replace(/[^A-Za-z0-9._-]/g, '_')}.md`;
}

export function markdownHeader(c: ExportConversation): string {
  return [
    `# ${c.conversationId}`,
    '',
    `- session: ${c.sessionId}`,
    `- workspace: ${c.workspaceDir ?? 'unknown'}`,
    `- started: ${iso(c.createdAtMs)}`,
    `- last message: ${iso(c.updatedAtMs)}`,
    `- messages: ${c.messageCount}`,
    `- history: ${c.source}`,
    '',
  ].join('\n');
}

/** One turn of the conversation; tool calls and results folded into `<details>`. */
export function markdownMessage(m: AgentMessage): string {
  const parts: string[] = [];
  switch (m.role) {
    case 'user':
      parts.push(`## User · ${iso(m.timestamp)}`, '', m.content);
      break;
    case 'assistant':
      parts.push(`## Assistant · ${iso(m.timestamp)}`);
      if (m.content !== undefined) parts.push('', m.content);
      for (const call of m.toolCalls ?? []) parts.push('', folded(`Tool call: ${call.name} (${call.id})`, fenced(prettyArguments(call.arguments), 'json')));
      break;
    case 'tool':
      parts.push(folded(`Tool result (${m.toolCallId}) · ${iso(m.timestamp)}`, m.content === '' ? '(empty)' : fenced(m.content)));
      break;
  }
  return `\n${parts.join('\n')}\n`;
}
