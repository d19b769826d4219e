import { createHash } from 'node:crypto';
import * as z from 'zod';
import type { WarningCollector } from '../core/warnings.js';
import { readLines, type ReadLinesOptions, type ReadLinesResult } from './line-reader.js';
import type { HistoryItem } from './types.js';

export const LEDGER_FILE = 'ledger.jsonl';

const jsonObject = z.custom<Record<string, unknown>>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  'expected an object',
);

/** The runtime's own acceptance rule for a ledger line; anything else is skipped. */
export const ledgerEventSchema = z.looseObject({
  schemaVersion: z.literal(1),
  eventId: z.string(),
  sessionId: z.string(),
  kind: z.string(),
  seq: z.int(),
  createdAtMs: z.number(),
});

const messagesPayload = z.looseObject({ messages: z.array(jsonObject) });
const retractedPayload = z.looseObject({
  messages: z.array(jsonObject),
  removedDisplayMsgIds: z.array(z.string()).optional(),
});
const metadataPayload = z.looseObject({ record: z.looseObject({ workspaceDir: z.string().min(1).optional() }) });

type Effect =
  | { type: 'append'; messages: Record<string, unknown>[] }
  | { type: 'replace'; messages: Record<string, unknown>[] }
  | { type: 'clear'; sessionDeleted: boolean }
  | { type: 'workspace'; workspaceDir: string }
  | { type: 'none' };

/** A validated event reduced to what it does; `lineNo` locates the messages it carries. */
export interface LedgerEvent {
  seq: number;
  eventId: string;
  lineNo: number;
  effect: Effect;
}

/** Event kinds that never touch the history or metadata; their lines are not even parsed. */
const INERT_LINE = /^\{"kind":"(session\.snapshot_created|media\.file_api_uploaded)"/;

/** `undefined` when the event's payload does not fit its kind: the event is then dropped whole. */
function effectOf(kind: string, event: Record<string, unknown>): Effect | undefined {
  switch (kind) {
    case 'message.pi_history_appended': {
      const p = messagesPayload.safeParse(event);
      return p.success ? { type: 'append', messages: p.data.messages } : undefined;
    }
    case 'message.pi_history_replaced': {
      const p = messagesPayload.safeParse(event);
      return p.success ? { type: 'replace', messages: p.data.messages } : undefined;
    }
    case 'message.turn_retracted': {
      // removedDisplayMsgIds is validated with the event but only touches display rows, not the history.
      const p = retractedPayload.safeParse(event);
      return p.success ? { type: 'replace', messages: p.data.messages } : undefined;
    }
    case 'message.state_deleted':
      return { type: 'clear', sessionDeleted: false };
    case 'session.deleted':
      return { type: 'clear', sessionDeleted: true };
    case 'session.created':
    case 'session.metadata_updated': {
      // Metadata never changes the history, so an odd record is not worth a warning.
      const p = metadataPayload.safeParse(event);
      const dir = p.success ? p.data.record.workspaceDir : undefined;
      return dir === undefined ? { type: 'none' } : { type: 'workspace', workspaceDir: dir };
    }
    default:
      return { type: 'none' };
  }
}

export interface LedgerEntry {
  message: Record<string, unknown>;
  /** Line of the event that last put this message into the history. */
  lineNo: number;
  /**
   * Its key, once known: carried over by a replacement from the message it matched, or its place in
   * the hash chain, remembered because an entry's predecessor never changes while it is in a history.
   */
  key?: string;
}

export interface LedgerReplay {
  history: LedgerEntry[];
  /**
   * A replacement carried some message's key over (see `carryKeys`): only then do the keys differ
   * from those releases before carried keys gave (`legacyLedgerKeys`).
   */
  carried: boolean;
  /** The project directory, from the latest `session.created` / `session.metadata_updated`. */
  workspaceDir?: string;
}

function compareEvents(a: LedgerEvent, b: LedgerEvent): number {
  if (a.seq !== b.seq) return a.seq - b.seq;
  if (a.eventId === b.eventId) return 0;
  return a.eventId < b.eventId ? -1 : 1;
}

/**
 * What identifies one message wherever the runtime copies it (a replacement's kept turns, a newer
 * build's messages.jsonl): its role, its timestamp and a digest of its content. The runtime copies
 * messages, it does not rewrite them.
 */
export function contentSignature(message: Record<string, unknown>): string | undefined {
  const { role, timestamp } = message;
  if (typeof role !== 'string' || typeof timestamp !== 'number') return undefined;
  const digest = createHash('sha256')
    .update(canonicalJson(message['content'] ?? ''))
    .update('\n')
    .update(typeof message['toolCallId'] === 'string' ? message['toolCallId'] : '')
    .digest('hex');
  return `${role}\n${timestamp}\n${digest}`;
}

/**
 * The replacement's entries, each that matches a message of the history it replaces by content
 * signature keeping that message's key. A compaction that keeps the recent turns copies them after
 * its summary; without this they would be new messages under new keys, sent and stored twice.
 */
function carryKeys(sessionId: string, before: LedgerEntry[], messages: readonly Record<string, unknown>[], lineNo: number): LedgerEntry[] {
  const bySignature = new Map<string, string[]>();
  for (const item of keyLedgerHistory(sessionId, before, LEDGER_FILE)) {
    const signature = contentSignature(item.message);
    if (signature === undefined) continue;
    const keys = bySignature.get(signature);
    if (keys) keys.push(item.key);
    else bySignature.set(signature, [item.key]);
  }
  return messages.map((message) => {
    const signature = bySignature.size === 0 ? undefined : contentSignature(message);
    const key = signature === undefined ? undefined : bySignature.get(signature)?.shift();
    return key === undefined ? { message, lineNo } : { message, lineNo, key };
  });
}

/** Replays events (already filtered to one session) in `seq`, then `eventId`, order. */
export function replayLedgerEvents(sessionId: string, events: readonly LedgerEvent[]): LedgerReplay {
  let history: LedgerEntry[] = [];
  let deleted = false;
  let carried = false;
  let workspaceDir: string | undefined;
  for (const event of [...events].sort(compareEvents)) {
    const effect = event.effect;
    // A deleted session has no history; nothing replayed after its deletion brings one back.
    if (deleted && effect.type !== 'workspace') continue;
    switch (effect.type) {
      case 'append':
        for (const message of effect.messages) history.push({ message, lineNo: event.lineNo });
        break;
      case 'replace':
        history = carryKeys(sessionId, history, effect.messages, event.lineNo);
        carried ||= history.some((entry) => entry.key !== undefined);
        break;
      case 'clear':
        history = [];
        deleted = effect.sessionDeleted;
        break;
      case 'workspace':
        workspaceDir = effect.workspaceDir;
        break;
      case 'none':
        break;
    }
  }
  const replay: LedgerReplay = { history, carried };
  if (workspaceDir !== undefined) replay.workspaceDir = workspaceDir;
  return replay;
}

/**
 * Reads a whole ledger (it has to be sorted by `seq`, and ledger-era files are small), validating
 * every line, and replays the events of `sessionId`. Bad lines cost one warning each.
 */
export async function readLedger(
  file: string,
  relFile: string,
  sessionId: string,
  warnings: WarningCollector,
  opts: ReadLinesOptions = {},
): Promise<LedgerReplay> {
  const events: LedgerEvent[] = [];
  const onEnd = (result: ReadLinesResult): void => {
    if (result.incompleteTail) warnings.add('incomplete_tail', { file: relFile, line: result.tailLineNo });
  };
  const report = (code: 'oversized_line' | 'symlinked_file', lineNo: number): void => warnings.add(code, { file: relFile, line: lineNo });
  for await (const { line, lineNo } of readLines(file, { ...opts, onEnd, report })) {
    if (INERT_LINE.test(line)) continue;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      warnings.add('invalid_json', { file: relFile, line: lineNo });
      continue;
    }
    const parsed = ledgerEventSchema.safeParse(json);
    if (!parsed.success) {
      warnings.add('invalid_record', { file: relFile, line: lineNo });
      continue;
    }
    const event = parsed.data;
    if (event.sessionId !== sessionId) continue;
    const effect = effectOf(event.kind, event);
    if (!effect) {
      warnings.add('invalid_record', { file: relFile, line: lineNo });
      continue;
    }
    events.push({ seq: event.seq, eventId: event.eventId, lineNo, effect });
  }
  return replayLedgerEvents(sessionId, events);
}

/**
 * JSON with object keys sorted at every level, so equal messages hash equally whatever their key order.
 * Built by appending to one string rather than mapping and joining arrays at every level: every
 * ledger message is hashed whole, and those arrays and joined copies made ~3x the ledger's own bytes
 * of garbage. Keys already in order (most objects) are not sorted again.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      // A hole stays empty, as Array.prototype.join leaves it.
      if (i in value) out += canonicalJson(value[i]);
    }
    return `${out}]`;
  }
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    if (!isSorted(keys)) keys.sort();
    let out = '{';
    for (const key of keys) {
      const item = record[key];
      if (item === undefined) continue;
      if (out.length > 1) out += ',';
      out += `${JSON.stringify(key)}:${canonicalJson(item)}`;
    }
    return `${out}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function isSorted(keys: readonly string[]): boolean {
  for (let i = 1; i < keys.length; i++) if (keys[i - 1]! > keys[i]!) return false;
  return true;
}

/**
 * Ledger messages have no ids, so each key is a hash chain over the effective history:
 * key_i = sha256(key_{i-1} + '\n' + canonical(message_i)), seeded with the session id, except that a
 * message a replacement carried over keeps its earlier key (see `carryKeys`). An unchanged prefix
 * keeps its keys after a replacement; a changed message gets a new key, and so does what follows it
 * unless it too was carried over. A chained key that would repeat one already in the history (the
 * same message twice around a carried one) is chained once more, so keys stay unique.
 */
export function keyLedgerHistory(sessionId: string, history: readonly LedgerEntry[], relFile: string): HistoryItem[] {
  const used = new Set<string>();
  for (const entry of history) if (entry.key !== undefined) used.add(entry.key);
  let previous = sessionId;
  return history.map((entry) => {
    if (entry.key === undefined) {
      const canonical = canonicalJson(entry.message);
      let key = chainKey(previous, canonical);
      while (used.has(key)) key = chainKey(key, canonical);
      used.add(key);
      entry.key = key;
    }
    previous = entry.key;
    return { key: entry.key, message: entry.message, location: { file: relFile, line: entry.lineNo } };
  });
}

/**
 * The keys releases before kept turns carried their keys gave the same history: the plain hash chain,
 * every message chained to the one before it. Marks such a release wrote for a ledger it read after a
 * compaction are under these keys, and only the delivery of a replay that `carried` keys needs them
 * (see `HistoryItem.legacyKey`): for any other replay they are the keys `keyLedgerHistory` gives.
 */
export function legacyLedgerKeys(sessionId: string, history: readonly LedgerEntry[]): string[] {
  let previous = sessionId;
  return history.map((entry) => (previous = chainKey(previous, canonicalJson(entry.message))));
}

/** Gives each of a history's keyed items whose key differs from its earlier release's that key (`HistoryItem.legacyKey`). */
export function withLegacyKeys(sessionId: string, history: readonly LedgerEntry[], items: HistoryItem[]): HistoryItem[] {
  const legacy = legacyLedgerKeys(sessionId, history);
  items.forEach((item, i) => {
    if (legacy[i] !== item.key) item.legacyKey = legacy[i]!;
  });
  return items;
}

function chainKey(previous: string, canonical: string): string {
  return createHash('sha256').update(`${previous}\n${canonical}`).digest('hex').slice(0, 32);
}
