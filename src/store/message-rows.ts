import type { AgentMessage, KeyedMessage } from '../core/agent-message.js';
import { exactBytes, MAX_UTF8_PER_UNIT } from '../core/utf8.js';
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
  const texts = new TextRun(fields);
  const place = (at: number, text: string | undefined): void => {
    if (text === undefined) fields[at + 1] = NO_TEXT;
    else texts.add(at, text);
  };
  // Messages whose indexed text is their content: the INDEXED field copies CONTENT once it is placed.
  const indexedIsContent: number[] = [];
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
    if (indexed !== undefined && indexed === message.content) indexedIsContent.push(base);
    else place(base + INDEXED, indexed);
  }
  const bytes = texts.encode();
  for (const base of indexedIsContent) {
    fields[base + INDEXED] = fields[base + CONTENT]!;
    fields[base + INDEXED + 1] = fields[base + CONTENT + 1]!;
  }
  return { count, keys, toolCallIds, fields, bytes };
}

/**
 * Texts encoded back to back in one pass: each is written where there is room for its worst case
 * (3 bytes a UTF-16 unit), and its (start, length) pair set from what the write took. Measuring each
 * text first and then writing it read every text twice (~1% of an import's CPU in perf).
 */
class TextRun {
  private readonly slots: number[] = [];
  private readonly texts: string[] = [];
  private units = 0;
  private longest = 0;

  constructor(private readonly fields: Float64Array) {}

  add(at: number, text: string): void {
    this.slots.push(at);
    this.texts.push(text);
    this.units += text.length;
    if (text.length > this.longest) this.longest = text.length;
  }

  /** Its own ArrayBuffer (never Node's shared pool), so it can be transferred. */
  encode(): Uint8Array {
    // Enough for every text when all are ASCII (the usual case), without growing.
    let bytes = Buffer.allocUnsafeSlow(this.units + 2 * this.longest);
    let offset = 0;
    for (let k = 0; k < this.texts.length; k++) {
      const text = this.texts[k]!;
      const worst = MAX_UTF8_PER_UNIT * text.length;
      if (offset + worst > bytes.length) {
        const grown = Buffer.allocUnsafeSlow(Math.max(2 * bytes.length, offset + worst));
        bytes.copy(grown, 0, 0, offset);
        bytes = grown;
      }
      const written = bytes.write(text, offset);
      this.fields[this.slots[k]!] = offset;
      this.fields[this.slots[k]! + 1] = written;
      offset += written;
    }
    // The room left over is let go: a group's rows wait in memory until the writer commits them.
    return exactBytes(bytes, offset);
  }
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
