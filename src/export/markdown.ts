import { createHash } from 'node:crypto';
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

/** Short and stable: the same id always gets the same suffix, whatever else an export holds. */
function idDigest(conversationId: string): string {
  return createHash('sha256').update(conversationId).digest('hex').slice(0, 10);
}

/**
 * The file names of one markdown export, one per conversation, never the same twice. An id that
 * is filesystem-safe is its own name (`minimaxcode-mvs_….md`). An id with other characters (a
 * re-imported id may hold any) has them replaced by `_` and a digest of the whole id appended after
 * a `~`, which no safe id holds: `proj/a` and `proj:a` both clean to `proj_a`, and stay two files.
 * A name a case-insensitive file system would fold onto one already given gets the digest too.
 */
export class MarkdownFileNames {
  private readonly given = new Set<string>();

  next(conversationId: string): string {
    const safe = conversationId.replace(/[^A-Za-z0-9._-]/g, '_');
    const digested = `${safe}~${idDigest(conversationId)}`;
    let name = safe === conversationId && !this.given.has(safe.toLowerCase()) ? safe : digested;
    for (let n = 2; this.given.has(name.toLowerCase()); n++) name = `${digested}-${n}`;
    this.given.add(name.toLowerCase());
    return `${name}.md`;
  }
}

/** A title as one heading line: whitespace (newlines included) folded, so it cannot start a block of its own. */
function headingTitle(title: string | undefined): string | undefined {
  const flat = title?.replace(/\s+/gu, ' ').trim();
  return flat ? flat : undefined;
}

export function markdownHeader(c: ExportConversation): string {
  const title = headingTitle(c.title);
  return [
    title === undefined ? `# ${c.conversationId}` : `# ${title}`,
    '',
    ...(title === undefined ? [] : [`- conversation: ${c.conversationId}`]),
    `- session: ${c.sessionId}`,
    ...(c.kind === undefined ? [] : [`- kind: ${c.kind}`]),
    ...(c.parentSessionId === undefined ? [] : [`- parent session: ${c.parentSessionId}`]),
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
