import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeGateway, type FakeGateway } from './support/fake-gateway.js';
import { appendLines, conversationFor, turnEnvelopes, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { freshHarnessEnv, runEngine, type HarnessEnv } from './support/delivery-harness.js';

let gateway: FakeGateway;
let env: HarnessEnv;

beforeAll(async () => {
  gateway = await startFakeGateway();
});
afterAll(async () => {
  await gateway.close();
});
beforeEach(() => {
  gateway.reset();
  env = freshHarnessEnv(gateway);
});

/** `flush` and `sync` of every agent-memory request of one conversation, in arrival order. */
function flags(conversationId: string): Array<{ flush: boolean; sync: boolean | undefined }> {
  return gateway
    .requestsTo('/mem/agent-memory')
    .map((r) => r.body as { conversationId: string; flush: boolean; sync?: boolean })
    .filter((b) => b.conversationId === conversationId)
    .map((b) => ({ flush: b.flush, sync: b.sync }));
}

/** Nine turns of ~20 KB of tool output: at least three requests of 64 KiB. */
const BIG = { toolBytes: 20_000 };

describe('sync: true on every request that does not flush', () => {
  it('import: a conversation sent in 3+ requests carries sync: true on every request before the flushing one', async () => {
    writeMessagesSession(env.dataDir, 1, turnsEnvelopes('big', [0, 1, 2, 3, 4, 5, 6, 7, 8], BIG));
    await runEngine(env, 'import', 'everme');
    const seen = flags(conversationFor(1));
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(seen.slice(0, -1)).toEqual(seen.slice(0, -1).map(() => ({ flush: false, sync: true })));
    // The flushing request itself carries no sync: nothing after it needs to see it.
    expect(seen.at(-1)).toEqual({ flush: true, sync: undefined });
  });

  it('sync ending on a finished turn: the earlier requests carry sync: true', async () => {
    writeMessagesSession(env.dataDir, 1, turnsEnvelopes('big', [0, 1, 2, 3, 4, 5, 6, 7, 8], BIG));
    await runEngine(env, 'sync', 'everme');
    const seen = flags(conversationFor(1));
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(seen).toEqual([...seen.slice(0, -1).map(() => ({ flush: false, sync: true })), { flush: true, sync: undefined }]);
  });

  it('sync ending on an unfinished turn does not flush, yet every request carries sync: true for the flush it owes', async () => {
    const envelopes = [...turnsEnvelopes('big', [0, 1, 2, 3, 4, 5, 6, 7], BIG), ...turnEnvelopes('big', 8, { ...BIG, open: true })];
    writeMessagesSession(env.dataDir, 1, envelopes);
    await runEngine(env, 'sync', 'everme');
    const seen = flags(conversationFor(1));
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(seen).toEqual(seen.map(() => ({ flush: false, sync: true })));
  });

  it('hook mode never flushes, yet every request carries sync: true, so the flush owed later sees it', async () => {
    const dir = writeMessagesSession(env.dataDir, 1, turnsEnvelopes('big', [0, 1, 2, 3, 4, 5, 6, 7, 8], BIG));
    await runEngine(env, 'hook', 'everme');
    const hookRequests = flags(conversationFor(1));
    expect(hookRequests.length).toBeGreaterThanOrEqual(3);
    expect(hookRequests).toEqual(hookRequests.map(() => ({ flush: false, sync: true })));

    // A later sync at a finished turn sends the new turn and flushes: the requests before the flush carry sync: true as well.
    appendLines(path.join(dir, 'messages.jsonl'), turnsEnvelopes('big', [9, 10, 11, 12], BIG));
    gateway.reset();
    await runEngine(env, 'sync', 'everme');
    const syncRequests = flags(conversationFor(1));
    expect(syncRequests.length).toBeGreaterThanOrEqual(2);
    expect(syncRequests).toEqual([...syncRequests.slice(0, -1).map(() => ({ flush: false, sync: true })), { flush: true, sync: undefined }]);
  });
});

describe('the flush a conversation owes, sent alone', () => {
  /** The conversation's flush-only requests (no messages), in arrival order: their request ids and faults. */
  function flushOnly(conversationId: string): Array<{ id: string; fault: string | undefined }> {
    return gateway
      .requestsTo('/mem/agent-memory')
      .filter((r) => {
        const body = r.body as { conversationId: string; flush: boolean; messages: unknown[] };
        return body.conversationId === conversationId && body.flush && body.messages.length === 0;
      })
      .map((r) => ({ id: String(r.headers.requestid), fault: r.fault }));
  }

  it('follows the hook with its own request id per turn it flushes, and keeps that id when sent again', async () => {
    const dir = writeMessagesSession(env.dataDir, 1, turnsEnvelopes('t', [0, 1]));
    await runEngine(env, 'hook', 'everme');
    expect(flags(conversationFor(1))).toEqual([{ flush: false, sync: true }]);

    // The host's SessionEnd right after: the owed flush goes alone. The first try gets a 500, the next one resends it.
    gateway.failNext({ kind: 'http', status: 500, path: '/mem/agent-memory' });
    await runEngine(env, 'hook', 'everme', { boundary: true });
    await runEngine(env, 'hook', 'everme', { boundary: true });
    // Another turn, delivered by the hook, and the flush it owes in turn.
    appendLines(path.join(dir, 'messages.jsonl'), turnsEnvelopes('t', [2]));
    await runEngine(env, 'hook', 'everme');
    await runEngine(env, 'hook', 'everme', { boundary: true });

    const sent = flushOnly(conversationFor(1));
    expect(sent.map((s) => s.fault)).toEqual(['http', undefined, undefined]);
    expect(sent[1]!.id).toBe(sent[0]!.id);
    expect(sent[2]!.id).not.toBe(sent[1]!.id);
    expect(new Set(sent.map((s) => s.id)).size).toBe(2);
  });
});
