import type { StoredMessage } from '../store/local-store.js';
import { excerpt } from '../store/fts-text.js';
import { EvermeError } from '../core/errors.js';
import { LocalRecall, messageIdOf } from './recall.js';
import { boundedTitle, DATA_PREFACE, formatWhen, shownTitle } from './recall-markdown.js';
import { withThousands } from '../core/thousands.js';

/**
 * Opening what a search found, in steps: `mem_get` / `everme get` show whole messages, a page of a
 * long one at a time; `mem_timeline` shows the messages around one, compactly, with their ids.
 */

/** Ids one `mem_get` may open. */
export const MAX_GET_IDS = 10;
/** Characters of one message's content per call; a longer one says where the next page starts. */
export const GET_PAGE_CHARS = 12_000;
/** Neighbours `mem_timeline` shows on either side by default, and at most. */
export const DEFAULT_TIMELINE_SPAN = 3;
export const MAX_TIMELINE_SPAN = 20;
const TIMELINE_ENTRY_CHARS = 300;

export interface OpenedMessage {
  id: string;
  conversationId: string;
  sessionId: string;
  role: string;
  /** ISO 8601. */
  time: string;
  project?: string;
  /** The conversation's title, when MiniMax Code's session index named its session. */
  title?: string;
  /** The page of the content from `offset`. */
  content: string;
  offset: number;
  totalChars: number;
  /** Where the next page starts (of the content or of a tool call's arguments); absent on the last page. */
  nextOffset?: number;
  toolCalls?: OpenedToolCall[];
  toolCallId?: string;
}

/** A tool call as a page shows it: its arguments paged with the content, by the same offset. */
export interface OpenedToolCall {
  name: string;
  /** At most GET_PAGE_CHARS characters of the arguments (JSON), from the page's offset. */
  arguments: string;
  /** The arguments' whole length, when this page does not hold them whole. */
  argumentsChars?: number;
}

export interface TimelineEntry {
  id: string;
  role: string;
  time: string;
  /** The message's opening, one line. */
  preview: string;
  /** True for the message the timeline was asked around. */
  anchor: boolean;
}

function isoTime(timestamp: number): string {
  const date = new Date(timestamp);
  return Number.isNaN(date.getTime()) ? '' : date.toISOString();
}

/** Cuts at a code point boundary so a page never splits a surrogate pair. */
function page(text: string, offset: number, window = GET_PAGE_CHARS): { content: string; from: number; next?: number } {
  let from = Math.min(Math.max(0, offset), text.length);
  if (from > 0 && from < text.length && isLowSurrogate(text.charCodeAt(from))) from--;
  let to = Math.min(text.length, from + Math.max(2, window));
  if (to < text.length && isLowSurrogate(text.charCodeAt(to))) to--;
  return { content: text.slice(from, to), from, ...(to < text.length ? { next: to } : {}) };
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/**
 * A tool call's arguments, paged like the content: a Write of a 2 MB file is stored whole (the
 * content cap is the text's), and handed over whole it flooded the model's context from one
 * `mem_get`. The same offset pages both, so the agent reads the rest the way it reads a long message.
 */
function openedCall(call: { name: string; arguments: string }, offset: number, window: number): { call: OpenedToolCall; next?: number } {
  const { content, next } = page(call.arguments, offset, window);
  const whole = content.length === call.arguments.length;
  return { call: { name: call.name, arguments: content, ...(whole ? {} : { argumentsChars: call.arguments.length }) }, ...(next === undefined ? {} : { next }) };
}

/**
 * One message from `offset`, a page of `window` characters of its content and of each tool call's
 * arguments (GET_PAGE_CHARS; narrower when mem_get's answer budget says so, get-budget.ts).
 */
export function openedMessage(m: StoredMessage, offset = 0, window = GET_PAGE_CHARS): OpenedMessage {
  const { content, from, next: contentNext } = page(m.content, offset, window);
  const calls = m.toolCalls?.map((c) => openedCall(c, offset, window));
  // The earliest place any of them goes on from (a surrogate pair may move one back by one), so no
  // character of any is skipped.
  const nexts = [contentNext, ...(calls ?? []).map((c) => c.next)].filter((n): n is number => n !== undefined);
  const next = nexts.length === 0 ? undefined : Math.min(...nexts);
  const out: OpenedMessage = {
    id: messageIdOf(m.messageId),
    conversationId: m.conversationId,
    sessionId: m.sessionId,
    role: m.role,
    time: isoTime(m.timestamp),
    content,
    // Where the page starts: one back from an offset inside a character's surrogate pair.
    offset: from,
    totalChars: m.content.length,
  };
  if (m.workspaceDir !== undefined) out.project = m.workspaceDir;
  const title = boundedTitle(m.title);
  if (title !== undefined) out.title = title;
  if (next !== undefined) out.nextOffset = next;
  if (calls) out.toolCalls = calls.map((c) => c.call);
  if (m.toolCallId !== undefined) out.toolCallId = m.toolCallId;
  return out;
}

export function timelineEntry(m: StoredMessage, anchorId: number): TimelineEntry {
  const calls = m.toolCalls?.map((c) => `${c.name}(${c.arguments})`).join(' ') ?? '';
  return {
    id: messageIdOf(m.messageId),
    role: m.role,
    time: isoTime(m.timestamp),
    preview: excerpt(m.content.trim() === '' ? calls : m.content, TIMELINE_ENTRY_CHARS),
    anchor: m.messageId === anchorId,
  };
}

function head(parts: Array<string | undefined>): string {
  return parts.filter((p): p is string => p !== undefined && p !== '').join(' · ');
}

/** One opened message as text: a heading, its content page, its tool calls, and how to page on. */
export function formatOpened(m: OpenedMessage): string {
  const lines = [`## ${head([m.id, m.role, formatWhen(Date.parse(m.time)), m.conversationId, shownTitle(m.title), m.project])}`, '', m.content];
  for (const call of m.toolCalls ?? []) {
    // A later page of a long message, past the end of this call's arguments: nothing of it to show.
    if (call.arguments === '' && call.argumentsChars !== undefined) continue;
    const part = call.argumentsChars === undefined ? '' : ` (arguments, a page of ${withThousands(call.argumentsChars)} characters)`;
    lines.push('', `tool call ${call.name}${part}: ${call.arguments}`);
  }
  if (m.nextOffset !== undefined) {
    const shown = m.offset < m.totalChars ? `Characters ${withThousands(m.offset)}–${withThousands(Math.min(m.nextOffset, m.totalChars))} of ${withThousands(m.totalChars)}` : 'The tool call arguments go on';
    lines.push('', `_${shown}; the rest: offset ${m.nextOffset}._`);
  }
  return lines.join('\n');
}

export function renderOpened(messages: OpenedMessage[]): string {
  return [DATA_PREFACE, ...messages.map(formatOpened)].join('\n\n');
}

export function renderTimeline(conversationId: string, entries: TimelineEntry[], title?: string): string {
  const lines = entries.map((e) => `${e.anchor ? '→' : ' '} ${head([e.id, e.role, formatWhen(Date.parse(e.time))])}\n    ${e.preview}`);
  const named = shownTitle(title);
  return `${DATA_PREFACE}\n\n## Timeline of ${conversationId}${named ? ` ${named}` : ''}\n\n${lines.join('\n')}\n\nOpen any of them whole with mem_get {ids: [...]}.`;
}

/**
 * `everme get`: the messages with these ids from the local store at `stateDir`, each from `offset`.
 * The ids are checked before anything is opened, and every unknown one is named.
 */
export function getMessages(stateDir: string, ids: readonly string[], offset = 0): OpenedMessage[] {
  if (ids.length === 0) throw new EvermeError('invalid_args', 'Name at least one message id', { code: 'missing_ids', hint: 'Ids look like m123: `everme search` shows them.' });
  const recall = new LocalRecall(stateDir);
  try {
    if (!recall.exists()) {
      throw new EvermeError('not_found', `No local store at ${stateDir} to open messages from`, {
        code: 'message_not_found',
        hint: 'Run `everme import --since YYYY-MM-DD` (or `everme sync`) first.',
      });
    }
    return recall.get(ids).map((m) => openedMessage(m, offset));
  } finally {
    recall.close();
  }
}
