/**
 * Session trees for the delivery tests: messages.jsonl and ledger sessions built turn by turn, with
 * the signature each message must have once converted, so a test can compare what a sink holds
 * with the list it should hold, in order, each message exactly once.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { AgentMessage } from '../../src/core/agent-message.js';
import { conversationIdFor } from '../../src/core/conversation-id.js';
import { makeSession } from '../transcript-helpers.js';

export const DAY = '2026/09/10';
export const CREATED_AT_MS = Date.UTC(2026, 8, 10, 8);

export type PiMessage = Record<string, unknown> & { role: string; timestamp: number };

export interface TurnOptions {
  /** Bytes of tool output in the turn (plain words; no trimming below ~60 KB per turn). */
  toolBytes?: number;
  /** The turn stops at a tool call whose result is not written yet (the tool is still running). */
  open?: boolean;
  /** Extra words in the user's question (e.g. Chinese text to search for). */
  question?: string;
}

export function sessionIdFor(n: number): string {
  return `mvs_${n.toString(16).padStart(8, '0')}${'d'.repeat(24)}`;
}

export function conversationFor(n: number): string {
  return conversationIdFor(sessionIdFor(n));
}

function filler(bytes: number, seed: string): string {
  const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel'];
  const out: string[] = [];
  let length = 0;
  for (let i = 0; length < bytes; i++) {
    const word = `${words[i % words.length]}${seed}${i}`;
    out.push(word);
    length += word.length + 1;
  }
  return out.join(' ');
}

/** One turn in MiniMax's (Pi) shape: question, a tool call, its result, and (unless open) the answer. */
export function turnMessages(tag: string, turn: number, opts: TurnOptions = {}): PiMessage[] {
  const t = CREATED_AT_MS + turn * 60_000;
  const callId = `call_${tag}_${turn}`;
  const messages: PiMessage[] = [
    { role: 'user', content: [{ type: 'text', text: `question ${tag} ${turn}${opts.question ? ` ${opts.question}` : ''}` }], timestamp: t },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'private reasoning', thinkingSignature: 'sig' },
        { type: 'text', text: `looking ${tag} ${turn}` },
        { type: 'toolCall', id: callId, name: 'bash', arguments: { command: `ls ${tag}${turn}` } },
      ],
      stopReason: 'toolUse',
      timestamp: t + 1000,
    },
  ];
  if (opts.open) return messages;
  messages.push(
    {
      role: 'toolResult',
      toolCallId: callId,
      toolName: 'bash',
      content: [{ type: 'text', text: `output ${tag} ${turn} ${filler(opts.toolBytes ?? 40, `${tag}${turn}`)}` }],
      isError: false,
      timestamp: t + 2000,
    },
    { role: 'assistant', content: [{ type: 'text', text: `answer ${tag} ${turn}` }], stopReason: 'stop', timestamp: t + 3000 },
  );
  return messages;
}

export interface Envelope {
  message_id: string;
  turn_id: string;
  message: PiMessage;
  history_artifact?: unknown;
}

/** messages.jsonl envelopes of one turn; ids are stable, so the same turn written again is the same messages. */
export function turnEnvelopes(tag: string, turn: number, opts: TurnOptions = {}): Envelope[] {
  return turnMessages(tag, turn, opts).map((message, i) => ({ message_id: `msg-${tag}-${turn}-${i}`, turn_id: `turn_${tag}_${turn}`, message }));
}

export function turnsEnvelopes(tag: string, turns: number[], opts: TurnOptions = {}): Envelope[] {
  return turns.flatMap((turn) => turnEnvelopes(tag, turn, opts));
}

export function jsonlOf(records: readonly unknown[]): string {
  return records.map((r) => JSON.stringify(r)).join('\n') + (records.length > 0 ? '\n' : '');
}

/** Writes a messages.jsonl session; returns its directory. */
export function writeMessagesSession(dataDir: string, n: number, envelopes: readonly Envelope[], time = '08-00-00-000'): string {
  const sessionId = sessionIdFor(n);
  return makeSession(dataDir, DAY, sessionId, {
    createdAtMs: CREATED_AT_MS,
    time: `${time.slice(0, -3)}${String(n % 1000).padStart(3, '0')}`,
    files: { 'messages.jsonl': jsonlOf(envelopes) },
  });
}

/** Appends lines the way the runtime does between turns. */
export function appendLines(file: string, records: readonly unknown[]): void {
  fs.appendFileSync(file, jsonlOf(records));
}

/** Replaces a file the way the runtime does on compaction and rewind: write a temp file, rename over. */
export function replaceFile(file: string, text: string): void {
  const temp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(temp, text);
  fs.renameSync(temp, file);
}

let eventSeq = 0;
export function ledgerEvent(sessionId: string, seq: number, kind: string, payload: Record<string, unknown>): Record<string, unknown> {
  eventSeq += 1;
  return { kind, sessionId, schemaVersion: 1, eventId: `evt_${seq}_${eventSeq}`, seq, createdAtMs: CREATED_AT_MS + seq, ...payload };
}

/** A ledger session: `session.created` then one `message.pi_history_appended` per turn. */
export function writeLedgerSession(dataDir: string, n: number, tag: string, turns: number[]): { dir: string; file: string; nextSeq: number } {
  const sessionId = sessionIdFor(n);
  const events = [ledgerEvent(sessionId, 1, 'session.created', { record: { sessionId, workspaceDir: '/home/dev/ledger-project' } })];
  for (const turn of turns) events.push(ledgerEvent(sessionId, events.length + 1, 'message.pi_history_appended', { messages: turnMessages(tag, turn) }));
  const dir = makeSession(dataDir, DAY, sessionId, {
    createdAtMs: CREATED_AT_MS,
    time: `09-00-00-${String(n % 1000).padStart(3, '0')}`,
    files: { 'ledger.jsonl': jsonlOf(events) },
  });
  return { dir, file: path.join(dir, 'ledger.jsonl'), nextSeq: events.length + 1 };
}

/**
 * How a converted message is recognised: role, instant and text (distinct per message here). Long
 * text is shown by its start and a hash of the whole, so a failing comparison stays readable.
 */
export function signature(m: Pick<AgentMessage, 'role' | 'timestamp'> & { content?: string | null }): string {
  const content = m.content ?? '';
  const text = content.length <= 60 ? content : `${content.slice(0, 40)}…(${content.length} chars, sha1 ${createHash('sha1').update(content).digest('hex').slice(0, 10)})`;
  return `${m.role}|${m.timestamp}|${text}`;
}

/** The signatures the converter must produce for these Pi messages, in order. */
export function expectedSignatures(messages: readonly PiMessage[]): string[] {
  return messages.map((m) => {
    const blocks = m.content as Array<{ type: string; text?: string }>;
    const text = blocks.filter((b) => b.type === 'text').map((b) => b.text ?? '').join('\n');
    return signature({ role: m.role === 'toolResult' ? 'tool' : (m.role as AgentMessage['role']), timestamp: m.timestamp, content: text });
  });
}

export function expectedTurns(tag: string, turns: number[], opts: TurnOptions = {}): string[] {
  return expectedSignatures(turns.flatMap((turn) => turnMessages(tag, turn, opts)));
}
