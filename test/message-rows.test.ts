import type Database from 'better-sqlite3';
import fs from 'node:fs';
import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from './support/temp.js';
import type { KeyedMessage } from '../src/core/agent-message.js';
import { openDatabase } from '../src/store/database.js';
import { encodeMessageRows, rowContentText, rowIndexedText, rowsTransferList, type MessageRows } from '../src/store/message-rows.js';
import { LocalStore } from '../src/store/local-store.js';

let dir: string;
let db: Database.Database;
let store: LocalStore;

beforeEach(() => {
  dir = tempDir('everme-rows-');
  db = openDatabase(dir);
  store = new LocalStore(db);
  store.upsertConversation({ conversationId: 'c1', sessionId: 's1', source: 'messages' });
});

afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const stored = (): Array<{ msg_key: string; content: string | null; kind: string; calls: string | null }> =>
  db
    .prepare('SELECT msg_key, content, typeof(content) AS kind, tool_calls_json AS calls FROM messages ORDER BY id')
    .all() as Array<{ msg_key: string; content: string | null; kind: string; calls: string | null }>;

describe('message rows (texts as UTF-8 bytes, bound as they are)', () => {
  it('stores every text as TEXT, character for character: CJK, emoji, combining marks, empty', () => {
    const texts = ['优先级 payload', 'emoji 🧪 and 𠀋', 'e\u0301 café', '', 'line\nbreak\ttab "quoted" \\ back'];
    store.appendMessages(
      'c1',
      texts.map((content, i) => ({ key: `k${i}`, message: { role: 'user', timestamp: i, content } })),
    );
    expect(stored()).toEqual(texts.map((content, i) => ({ msg_key: `k${i}`, content, kind: 'text', calls: null })));
  });

  it('stores a lone surrogate (a JSON escape can make one) as one U+FFFD, valid UTF-8', () => {
    // Bound as a JS string, it went in as the invalid bytes ED A0 80 and read back as three U+FFFD.
    store.appendMessages('c1', [{ key: 'k', message: { role: 'user', timestamp: 1, content: 'a\ud800b' } }]);
    expect(stored()[0]!.content).toBe('a\ufffdb');
    expect(db.prepare<[], string>('SELECT hex(content) FROM messages').pluck().get()).toBe('61EFBFBD62');
  });

  it('keeps an assistant without text NULL, and its tool calls as the JSON they were', () => {
    const toolCalls = [{ id: 'call_1', type: 'function' as const, name: 'bash', arguments: '{"command":"ls 目录"}' }];
    store.appendMessages('c1', [{ key: 'a', message: { role: 'assistant', timestamp: 1, toolCalls, turnComplete: false } }]);
    expect(stored()).toEqual([{ msg_key: 'a', content: null, kind: 'null', calls: JSON.stringify(toolCalls) }]);
    expect(store.search('目录').map((hit) => hit.role)).toEqual(['assistant']);
  });

  it('indexes the spaced CJK text, not the content, so one character finds a longer word', () => {
    store.appendMessages('c1', [{ key: 'k', message: { role: 'user', timestamp: 1, content: '缓存优先级' } }]);
    expect(store.search('优').map((hit) => hit.snippet)).toEqual([expect.stringContaining('优')]);
  });

  it('encodes texts of three-byte characters past the room ASCII would need, and ends at their last byte', () => {
    // Room for all-ASCII texts is their length plus twice the longest; these need three times theirs.
    const texts = Array.from({ length: 40 }, (_, i) => `${'数据'.repeat(50 + i)} ${i}`);
    const messages: KeyedMessage[] = texts.map((content, i) => ({ key: `k${i}`, message: { role: 'tool', timestamp: i, toolCallId: `call_${i}`, content } }));
    const rows = encodeMessageRows(messages);
    // Content and the spaced text the index sees, back to back, and not a byte more.
    expect(rows.bytes.byteLength).toBe(texts.reduce((sum, t, i) => sum + Buffer.byteLength(t) + rowIndexedText(rows, i)!.byteLength, 0));
    expect(texts.map((_, i) => rowContentText(rows, i))).toEqual(texts);
    store.appendMessages('c1', messages);
    expect(stored().map((row) => row.content)).toEqual(texts);
  });

  it("lets the index share the content's bytes when they are the same text", () => {
    const content = 'plain words the index takes as they are';
    const rows = encodeMessageRows([{ key: 'k', message: { role: 'user', timestamp: 1, content } }]);
    expect(rows.bytes.byteLength).toBe(Buffer.byteLength(content));
    expect(Buffer.from(rowIndexedText(rows, 0)!).toString()).toBe(content);
  });

  it('moves its buffers to another thread rather than copying them, and reads the same there', () => {
    const messages: KeyedMessage[] = [
      { key: 'u', message: { role: 'user', timestamp: 1, content: 'quokka 数据' } },
      { key: 't', message: { role: 'tool', timestamp: 2, toolCallId: 'call_9', content: 'result' } },
    ];
    const rows = encodeMessageRows(messages);
    const { port1, port2 } = new MessageChannel();
    try {
      port1.postMessage(rows, rowsTransferList(rows));
      // Detached on the sending side: nothing of the texts stays behind.
      expect(rows.bytes.byteLength).toBe(0);
      expect(rows.fields.byteLength).toBe(0);
      const received = receiveMessageOnPort(port2)?.message as MessageRows;
      expect([rowContentText(received, 0), rowContentText(received, 1)]).toEqual(['quokka 数据', 'result']);
      expect(received.toolCallIds).toEqual([null, 'call_9']);
    } finally {
      port1.close();
      port2.close();
    }
  });
});
