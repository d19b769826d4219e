/**
 * The gateway's marks and the embedded store's writer thread share one state file: the marks are
 * written in the main thread's turn (WriteTurn), never by sleeping in SQLite's busy handler while
 * the writer's transaction holds the file.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GatewayClient } from '../src/sinks/gateway/gateway-client.js';
import { GatewaySink } from '../src/sinks/gateway/gateway-sink.js';
import type { PlanPart } from '../src/sinks/sink.js';
import { openDatabase } from '../src/store/database.js';
import { WRITE_TURN_BYTES, WriteTurn } from '../src/store/write-turn.js';
import { startFakeGateway, type FakeGateway } from './support/fake-gateway.js';
import { tempDir } from './transcript-helpers.js';

let gw: FakeGateway;
let db: ReturnType<typeof openDatabase>;

beforeEach(async () => {
  gw = await startFakeGateway();
  db = openDatabase(tempDir());
});

afterEach(async () => {
  db.close();
  await gw.close();
});

const conversation = { conversationId: 'minimaxcode-mvs_turn', sessionId: 'mvs_turn', source: 'messages' as const };

/**
 * Two requests: the sink sends a request once it knows whether the next one follows (its flush
 * flag), so delivering this part sends the first, and the second waits for the session's end.
 */
function part(first: string[], second: string[]): PlanPart {
  const request = (keys: string[]) => ({
    messages: keys.map((key, i) => ({ role: 'user' as const, timestamp: 1_789_355_112_345 + i, content: `message ${key}` })),
    keys,
    bytes: 100,
  });
  return { conversation, requests: [request(first), request(second)], requestCount: 2, messageCount: first.length + second.length, bytes: 200 };
}

function sinkWith(turn: WriteTurn | undefined): GatewaySink {
  const client = new GatewayClient({ apiBase: gw.url, apiKey: gw.token, userAgent: 'everme-test' });
  return new GatewaySink(client, db, () => turn);
}

const context = { conversationId: conversation.conversationId, sessionId: conversation.sessionId, mode: 'import' as const, boundary: false, excluded: () => Promise.resolve(false) };

describe("the gateway sink's marks beside the writer thread", () => {
  it('waits for the writer to give up its turn before recording what the gateway acknowledged, then records it', async () => {
    const turn = new WriteTurn(new SharedArrayBuffer(WRITE_TURN_BYTES));
    const sink = sinkWith(turn);
    const session = await sink.begin(context);
    // The writer thread is in a transaction.
    turn.takeWriter();
    let delivered = false;
    const delivering = session.deliver(part(['k1', 'k2'], ['k3'])).then(() => {
      delivered = true;
    });
    // The gateway took the request; the marks wait for the turn, without blocking this thread.
    await expect.poll(() => gw.requestsTo('/mem/agent-memory').length).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(delivered).toBe(false);
    expect([...sink.deliveredKeys(conversation.conversationId)]).toEqual([]);
    turn.give();
    await delivering;
    expect([...sink.deliveredKeys(conversation.conversationId)].sort()).toEqual(['k1', 'k2']);
    expect(gw.requestsTo('/mem/agent-memory')).toHaveLength(1);
  });

  it('without a writer thread, records the marks as soon as the gateway acknowledged', async () => {
    const sink = sinkWith(undefined);
    const session = await sink.begin(context);
    await session.deliver(part(['k1'], ['k2']));
    expect([...sink.deliveredKeys(conversation.conversationId)]).toEqual(['k1']);
  });
});
