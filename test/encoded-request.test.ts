import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import type { AgentMessage } from '../src/core/agent-message.js';
import { partTransferList } from '../src/engine/plan-protocol.js';
import { encodeRequest, requestsTransferList } from '../src/memory/encoded-request.js';
import { encodeMessageRows } from '../src/store/message-rows.js';

const turn: AgentMessage[] = [
  { role: 'user', timestamp: 1789355112345, content: 'why does the build fail? 漢字😀' },
  { role: 'assistant', timestamp: 1789355116445, content: 'The lockfile is stale.', turnComplete: true },
];

describe('a request encoded by the plan phase', () => {
  it('holds its messages as JSON.stringify writes them, and says whether its last one ends a turn', () => {
    const encoded = encodeRequest({ messages: turn, keys: ['k1', 'k2'], bytes: 321 });
    expect(Buffer.from(encoded.messagesJson).toString('utf8')).toBe(JSON.stringify(turn));
    expect(encoded).toMatchObject({ keys: ['k1', 'k2'], bytes: 321, messageCount: 2, endsTurn: true });
    expect(encodeRequest({ messages: turn.slice(0, 1), keys: ['k1'], bytes: 1 }).endsTurn).toBe(false);
    expect(encodeRequest({ messages: [{ ...turn[1]!, turnComplete: false } as AgentMessage], keys: ['k2'], bytes: 1 }).endsTurn).toBe(false);
  });

  it('is moved to another thread, not copied, however small (its bytes are never in Node’s shared pool)', () => {
    const small = [encodeRequest({ messages: turn.slice(0, 1), keys: ['k1'], bytes: 1 }), encodeRequest({ messages: turn, keys: ['k1', 'k2'], bytes: 1 })];
    const texts = small.map((request) => Buffer.from(request.messagesJson).toString('utf8'));
    const { port1, port2 } = new MessageChannel();
    try {
      port1.postMessage(small, requestsTransferList(small));
      const received = receiveMessageOnPort(port2)?.message as Array<{ messagesJson: Uint8Array }>;
      expect(received.map((request) => Buffer.from(request.messagesJson).toString('utf8'))).toEqual(texts);
      // Moved: the sender's buffers are detached.
      expect(small.map((request) => request.messagesJson.byteLength)).toEqual([0, 0]);
    } finally {
      port1.close();
    }
  });

  it('travels with a plan part as moved buffers, beside the part’s rows', () => {
    const encoded = [encodeRequest({ messages: turn, keys: ['k1', 'k2'], bytes: 1 })];
    const rows = encodeMessageRows(turn.map((message, i) => ({ key: `k${i + 1}`, message })));
    const part = { conversation: { conversationId: 'minimaxcode-mvs_x', sessionId: 'mvs_x', source: 'messages' as const }, encoded, rows, requestCount: 1, messageCount: 2, bytes: 1 };
    const moved = partTransferList(part);
    expect(moved).toContain(encoded[0]!.messagesJson.buffer);
    expect(moved).toContain(rows.bytes.buffer);
  });
});
