import type { AgentMessage, KeyedMessage } from '../core/agent-message.js';
import { toFtsText } from './fts-text.js';
import { searchableText } from './searchable-text.js';

/**
 * A conversation's messages as the store inserts them: every long text (content, tool calls, the
 * text the index sees) UTF-8 encoded back to back in one buffer, the rest in a flat number array.
 * Built on the thread that read the messages; for the writer thread both arrays are moved, not
 * copied (`rowsTransferList`), and SQLite takes each text straight from its bytes
 * (`CAST(? AS TEXT)`). Posted as objects, the writes had the writer thread, the one that bounds a
 * large import, deserialise every message, collect the garbage, and encode every string to UTF-8
 * again for SQLite: ~15% of its time on the 10x bench tree (perf).
 */
export interface MessageRows {
  readonly count: number;
  readonly keys: readonly string[];
  /** The call a tool result answers; null for the other roles. */
  readonly toolCallIds: readonly (string | null)[];
  /** `FIELDS` numbers per message (the offsets below). */
  readonly fields: Float64Array;
  readonly bytes: Uint8Array;
}

/** A role is stored in `fields` as its index here. */
const ROLES = ['user', 'assistant', 'tool'] as const;

// Offsets into a message's fields. A text is a (start, length) pair into `bytes`; length -1 = none.
const ROLE = 0;
const TIMESTAMP = 1;
/** -1 for roles without one. */
const TURN_COMPLETE = 2;
/** 1 when the content holds a non-space character (the conversation list's previews need one). */
const HAS_TEXT = 3;
const CONTENT = 4;
const TOOL_CALLS = 6;
/** What the index sees (often the content's own bytes); none when the message has nothing to find. */
const INDEXED = 8;
const FIELDS = 10;

const NO_TEXT = -1;

function hasText(text: string | undefined): text is string {
  return text !== undefined && /\S/u.test(text);
}

/** Encodes messages for `LocalStore` (see `MessageRows`). */
export function encodeMessageRows(messages: readonly KeyedMessage[]): MessageRows {
  const count = messages.length;
  const fields = new Float64Array(count * FIELDS);
  const keys = new Array<string>(count);
  const toolCallIds = new Array<string | null>(count);
  const texts: string[] = [];
  let size = 0;
  const place = (at: number, text: string | undefined): void => {
    if (text === undefined) {
      fields[at + 1] = NO_TEXT;
      return;
    }
    const length = Buffer.byteLength(text);
    fields[at] = size;
    fields[at + 1] = length;
    size += length;
    texts.push(text);
  };
  for (let i = 0; i < count; i++) {
    const { key, message } = messages[i]!;
    const base = i * FIELDS;
    keys[i] = key;
    toolCallIds[i] = message.role === 'tool' ? message.toolCallId : null;
    fields[base + ROLE] = ROLES.indexOf(message.role);
    fields[base + TIMESTAMP] = message.timestamp;
    fields[base + TURN_COMPLETE] = message.role === 'assistant' ? (message.turnComplete ? 1 : 0) : -1;
    fields[base + HAS_TEXT] = hasText(message.content) ? 1 : 0;
    place(base + CONTENT, message.content);
    const calls = message.role === 'assistant' && message.toolCalls && message.toolCalls.length > 0 ? JSON.stringify(message.toolCalls) : undefined;
    place(base + TOOL_CALLS, calls);
    const searchable = searchableText(message);
    const indexed = searchable.length > 0 ? toFtsText(searchable) : undefined;
    if (indexed !== undefined && indexed === message.content) {
      fields[base + INDEXED] = fields[base + CONTENT]!;
      fields[base + INDEXED + 1] = fields[base + CONTENT + 1]!;
    } else {
      place(base + INDEXED, indexed);
    }
  }
  // Its own ArrayBuffer (never Node's shared pool), so it can be transferred.
  const bytes = Buffer.allocUnsafeSlow(size);
  let offset = 0;
  for (const text of texts) offset += bytes.write(text, offset);
  return { count, keys, toolCallIds, fields, bytes };
}

/** The buffers a `postMessage` of these rows moves instead of copying. */
export function rowsTransferList(rows: MessageRows): ArrayBuffer[] {
  return [rows.fields.buffer as ArrayBuffer, rows.bytes.buffer as ArrayBuffer];
}

function textAt(rows: MessageRows, at: number): Uint8Array | null {
  const length = rows.fields[at + 1]!;
  if (length === NO_TEXT) return null;
  const start = rows.fields[at]!;
  return rows.bytes.subarray(start, start + length);
}

export function rowRole(rows: MessageRows, i: number): AgentMessage['role'] {
  return ROLES[rows.fields[i * FIELDS + ROLE]!]!;
}

export function rowTimestamp(rows: MessageRows, i: number): number {
  return rows.fields[i * FIELDS + TIMESTAMP]!;
}

export function rowTurnComplete(rows: MessageRows, i: number): number | null {
  const value = rows.fields[i * FIELDS + TURN_COMPLETE]!;
  return value < 0 ? null : value;
}

export function rowHasText(rows: MessageRows, i: number): boolean {
  return rows.fields[i * FIELDS + HAS_TEXT] === 1;
}

/** The content's UTF-8 bytes; null when the message has none. */
export function rowContent(rows: MessageRows, i: number): Uint8Array | null {
  return textAt(rows, i * FIELDS + CONTENT);
}

/** The content as a string, for the few places that read it (previews). */
export function rowContentText(rows: MessageRows, i: number): string | undefined {
  const bytes = rowContent(rows, i);
  return bytes === null ? undefined : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

/** The tool calls' JSON; null when there are none. */
export function rowToolCalls(rows: MessageRows, i: number): Uint8Array | null {
  return textAt(rows, i * FIELDS + TOOL_CALLS);
}

/** The text to index; null when the message has nothing to find. */
export function rowIndexedText(rows: MessageRows, i: number): Uint8Array | null {
  return textAt(rows, i * FIELDS + INDEXED);
}
