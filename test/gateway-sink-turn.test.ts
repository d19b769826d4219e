/**
 * The gateway's marks and the embedded store's writer thread share one state file: the marks are
 * written in the main thread's turn (WriteTurn), never by sleeping in SQLite's busy handler while
 * the writer's transaction holds the file, and a session does not wait for that turn between its
 * requests (GatewayMarks).
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeRequest } from '../src/memory/encoded-request.js';
import { GatewayClient } from '../src/sinks/gateway/gateway-client.js';
import { GatewaySink } from '../src/sinks/gateway/gateway-sink.js';
import type { PlanPart } from '../src/sinks/sink.js';
import { openDatabase } from '../src/store/database.js';
import { WRITE_TURN_BYTES, WriteTurn } from '../src/store/write-turn.js';
import { ensureBuilt, repoRoot } from './support/cli.js';
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
  return { conversation, encoded: [encodeRequest(request(first)), encodeRequest(request(second))], requestCount: 2, messageCount: first.length + second.length, bytes: 200 };
}

function sinkWith(turn: WriteTurn | undefined): GatewaySink {
  const client = new GatewayClient({ apiBase: gw.url, apiKey: gw.token, userAgent: 'everme-test' });
  return new GatewaySink(client, db, () => turn);
}

function stateOf() {
  return {
    sinkName: 'everme' as const,
    sessionId: conversation.sessionId,
    warningsOwner: { ...conversation, sessionDir: '/nowhere/mvs_turn' },
    warnings: [],
    fingerprint: { file: '/nowhere/mvs_turn/messages.jsonl', size: 200, mtimeMs: 1, ino: 1, headHash: 'h' },
  };
}

function fingerprintOf(): unknown {
  return db.prepare("SELECT size FROM fingerprints WHERE sink = 'everme' AND session_id = ?").get(conversation.sessionId);
}

function flushOwed(): unknown {
  return db.prepare("SELECT 1 FROM flush_state WHERE sink = 'everme' AND conversation_id = ? AND pending = 1").get(conversation.conversationId);
}

const context = { conversationId: conversation.conversationId, sessionId: conversation.sessionId, mode: 'import' as const, boundary: false, excluded: () => Promise.resolve(false) };

describe("the gateway sink's marks beside the writer thread", () => {
  it('sends on while the writer holds its turn, and commits the acknowledged marks together once it gives the turn up', { timeout: 10_000 }, async () => {
    const turn = new WriteTurn(new SharedArrayBuffer(WRITE_TURN_BYTES));
    const sink = sinkWith(turn);
    // The hook delivered the conversation's start earlier and left its flush owed.
    db.prepare("INSERT INTO flush_state (sink, conversation_id, pending, ends_turn) VALUES ('everme', ?, 1, 1)").run(conversation.conversationId);
    const session = await sink.begin(context);
    // The writer thread is in a transaction.
    turn.takeWriter();
    // Both requests go out and are acknowledged: the second does not wait for the first one's marks.
    await session.deliver(part(['k1', 'k2'], ['k3']));
    // The end needs no turn either: the last request flushed, so the file's owed flush (its mark
    // not yet written over) is not claimed and sent again.
    const handoff = await session.finish({ conversation, state: stateOf() });
    expect(gw.requestsTo('/mem/agent-memory').map((r) => (r.body as { flush: boolean }).flush)).toEqual([false, true]);
    let durable = false;
    void handoff.durable.then(() => {
      durable = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Nothing was written in the writer's turn, and the session's end is not durable yet.
    expect(durable).toBe(false);
    expect([...sink.deliveredKeys(conversation.conversationId)]).toEqual([]);
    expect(fingerprintOf()).toBeUndefined();
    turn.give();
    await handoff.durable;
    expect([...sink.deliveredKeys(conversation.conversationId)].sort()).toEqual(['k1', 'k2', 'k3']);
    expect(fingerprintOf()).toMatchObject({ size: 200 });
    expect(flushOwed()).toBeUndefined();
  });

  it('commits marks still queued at close, once the writer gives its turn up', async () => {
    const turnBuffer = new SharedArrayBuffer(WRITE_TURN_BYTES);
    const turn = new WriteTurn(turnBuffer);
    const sink = sinkWith(turn);
    const session = await sink.begin(context);
    // Another thread holds the writer's turn for 200 ms, as a writer thread's transaction does.
    const holder = new Worker(
      `const { workerData, parentPort } = require('node:worker_threads');
       const cell = new Int32Array(workerData, 0, 2);
       Atomics.store(cell, 0, 1);
       parentPort.postMessage('held');
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
       Atomics.store(cell, 0, 0);
       Atomics.notify(cell, 0);`,
      { eval: true, workerData: turnBuffer },
    );
    await new Promise((resolve) => holder.once('message', resolve));
    // The session failed after its first request was acknowledged: no one waits for that mark.
    await session.deliver(part(['k1'], ['k2']));
    session.abandon();
    expect([...sink.deliveredKeys(conversation.conversationId)]).toEqual([]);
    sink.close();
    expect([...sink.deliveredKeys(conversation.conversationId)]).toEqual(['k1']);
    await holder.terminate();
  });

  it('at close, waits for a writer that never gives its turn back only so long, then writes anyway', async () => {
    // In a thread of its own: the wait blocks its thread, and one that never ended would hang the suite.
    ensureBuilt();
    const turnModule = pathToFileURL(path.join(repoRoot, 'dist', 'src', 'store', 'write-turn.js')).href;
    const closer = new Worker(
      `const { workerData, parentPort } = require('node:worker_threads');
       import(workerData).then(({ WriteTurn, WRITE_TURN_BYTES }) => {
         const turn = new WriteTurn(new SharedArrayBuffer(WRITE_TURN_BYTES));
         turn.takeWriter(); // a writer thread that died in its turn
         const started = performance.now();
         const result = turn.runMainBlocking(() => 'written', 300);
         parentPort.postMessage({ result, waited: performance.now() - started });
       });`,
      { eval: true, workerData: turnModule },
    );
    let answer: { result: string; waited: number };
    try {
      answer = await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('runMainBlocking never returned')), 5000);
        closer.once('error', reject);
        closer.once('message', (message: { result: string; waited: number }) => {
          clearTimeout(timer);
          resolve(message);
        });
      });
    } finally {
      await closer.terminate();
    }
    expect(answer.result).toBe('written');
    expect(answer.waited).toBeGreaterThanOrEqual(290);
  });

  it('without a writer thread, a mark that cannot be written stops the session before its next request', async () => {
    db.exec("CREATE TRIGGER refuse BEFORE INSERT ON delivered BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END");
    const sink = sinkWith(undefined);
    const session = await sink.begin(context);
    await expect(session.deliver(part(['k1'], ['k2']))).rejects.toThrow(/disk is full/);
    expect(gw.requestsTo('/mem/agent-memory')).toHaveLength(1);
    expect([...sink.deliveredKeys(conversation.conversationId)]).toEqual([]);
  });

  it('without a writer thread, records the marks as soon as the gateway acknowledged', async () => {
    const sink = sinkWith(undefined);
    const session = await sink.begin(context);
    await session.deliver(part(['k1'], ['k2']));
    expect([...sink.deliveredKeys(conversation.conversationId)]).toEqual(['k1']);
  });
});
