import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { SinkName } from '../src/config/settings.js';
import { GatewaySink } from '../src/sinks/gateway/gateway-sink.js';
import { LocalSink } from '../src/sinks/local/local-sink.js';
import { startFakeGateway, type FakeGateway } from './support/fake-gateway.js';
import {
  appendLines,
  conversationFor,
  expectedTurns,
  jsonlOf,
  ledgerEvent,
  replaceFile,
  sessionIdFor,
  turnEnvelopes,
  turnMessages,
  turnsEnvelopes,
  writeLedgerSession,
  writeMessagesSession,
} from './support/delivery-trees.js';
import {
  flushFlags,
  freshHarnessEnv,
  gatewaySignatures,
  recordedWarnings,
  runEngine,
  storeCounts,
  storedSignatures,
  type HarnessEnv,
} from './support/delivery-harness.js';

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

/** What a sink holds for one conversation, in the order it was given to it. */
function held(sink: SinkName, conversationId: string): string[] {
  return sink === 'everme' ? gatewaySignatures(gateway, conversationId) : storedSignatures(env.stateDir, conversationId);
}

const agentMemoryRequests = (): number => gateway.requestsTo('/mem/agent-memory').length;

describe('flush placement', () => {
  it('on import, flushes the last request of each conversation and only that one', async () => {
    writeMessagesSession(env.dataDir, 1, turnsEnvelopes('big', [0, 1, 2, 3, 4, 5], { toolBytes: 20_000 }));
    writeMessagesSession(env.dataDir, 2, turnsEnvelopes('small', [0]));
    const summary = await runEngine(env, 'import', 'everme');
    expect(summary.sessions.delivered).toBe(2);

    const big = flushFlags(gateway, conversationFor(1));
    expect(big.length).toBeGreaterThanOrEqual(2);
    expect(big).toEqual([...Array<boolean>(big.length - 1).fill(false), true]);
    expect(flushFlags(gateway, conversationFor(2))).toEqual([true]);
    // Each flush came after everything of its conversation had arrived.
    expect(gateway.flushes).toEqual(
      expect.arrayContaining([
        { conversationId: conversationFor(1), messageCount: 24 },
        { conversationId: conversationFor(2), messageCount: 4 },
      ]),
    );
    expect(gateway.flushes).toHaveLength(2);
  });

  it('on sync, flushes the last request only when it ends on a finished turn', async () => {
    const openFile = path.join(writeMessagesSession(env.dataDir, 1, [...turnsEnvelopes('open', [0]), ...turnEnvelopes('open', 1, { open: true })]), 'messages.jsonl');
    writeMessagesSession(env.dataDir, 2, turnsEnvelopes('done', [0, 1]));
    await runEngine(env, 'sync', 'everme');
    expect(flushFlags(gateway, conversationFor(1))).toEqual([false]);
    expect(flushFlags(gateway, conversationFor(2))).toEqual([true]);

    // The tool finishes and the answer is written: the request carrying it ends the turn and flushes.
    appendLines(openFile, turnEnvelopes('open', 1).slice(2));
    await runEngine(env, 'sync', 'everme');
    expect(flushFlags(gateway, conversationFor(1))).toEqual([false, true]);
    expect(gatewaySignatures(gateway, conversationFor(1))).toEqual(expectedTurns('open', [0, 1]));
  });

  it('never flushes in hook mode, not even at a finished turn', async () => {
    writeMessagesSession(env.dataDir, 1, turnsEnvelopes('hook', [0, 1, 2, 3, 4], { toolBytes: 20_000 }));
    const summary = await runEngine(env, 'hook', 'everme');
    expect(summary.requests).toBeGreaterThanOrEqual(2);
    expect(flushFlags(gateway, conversationFor(1)).every((flush) => !flush)).toBe(true);
    expect(gateway.flushes).toEqual([]);
    expect(gatewaySignatures(gateway, conversationFor(1))).toEqual(expectedTurns('hook', [0, 1, 2, 3, 4], { toolBytes: 20_000 }));
  });

  it('sends the flush a hook-delivered conversation owes on its own: sync at a finished turn, once', async () => {
    const dir = writeMessagesSession(env.dataDir, 1, turnsEnvelopes('owed', [0, 1]));
    await runEngine(env, 'hook', 'everme');
    expect(flushFlags(gateway, conversationFor(1))).toEqual([false]);

    const sync = await runEngine(env, 'sync', 'everme');
    expect(sync).toMatchObject({ messages: 0, requests: 1 });
    const flushOnly = gateway.requestsTo('/mem/agent-memory').at(-1)!.body as { flush: boolean; messages: unknown[] };
    expect(flushOnly).toMatchObject({ conversationId: conversationFor(1), flush: true, messages: [] });
    expect(gateway.flushes).toEqual([{ conversationId: conversationFor(1), messageCount: 8 }]);

    // Owed once: the next sync and import have nothing to send at all.
    expect((await runEngine(env, 'sync', 'everme')).requests).toBe(0);
    expect((await runEngine(env, 'import', 'everme')).requests).toBe(0);

    // A hook delivery that stops mid-turn owes no flush to sync, but does to import.
    appendLines(path.join(dir, 'messages.jsonl'), turnEnvelopes('owed', 2, { open: true }));
    await runEngine(env, 'hook', 'everme');
    expect((await runEngine(env, 'sync', 'everme')).requests).toBe(0);
    const imported = await runEngine(env, 'import', 'everme');
    expect(imported).toMatchObject({ messages: 0, requests: 1 });
    expect(flushFlags(gateway, conversationFor(1))).toEqual([false, true, false, true]);
  });
});

describe.each<SinkName>(['everme', 'local'])('high-water marks (%s sink)', (sink) => {
  it('delivers nothing new when the same import runs twice', async () => {
    writeMessagesSession(env.dataDir, 1, turnsEnvelopes('a', [0, 1]));
    writeLedgerSession(env.dataDir, 2, 'b', [0, 1, 2]);
    const first = await runEngine(env, 'import', sink);
    expect(first.messages).toBe(20);
    const requestsAfterFirst = agentMemoryRequests();
    const countsAfterFirst = sink === 'local' ? storeCounts(env.stateDir) : undefined;

    const second = await runEngine(env, 'import', sink);
    expect(second.messages).toBe(0);
    expect(second.requests).toBe(0);
    expect(second.sessions).toMatchObject({ scanned: 2, unchanged: 2, delivered: 0 });
    expect(agentMemoryRequests()).toBe(requestsAfterFirst);
    if (sink === 'local') expect(storeCounts(env.stateDir)).toEqual(countsAfterFirst);
    expect(held(sink, conversationFor(1))).toEqual(expectedTurns('a', [0, 1]));
    expect(held(sink, conversationFor(2))).toEqual(expectedTurns('b', [0, 1, 2]));
  });

  it('delivers lines appended to a session exactly once, however often sync runs', async () => {
    const dir = writeMessagesSession(env.dataDir, 1, turnsEnvelopes('grow', [0, 1]));
    const file = path.join(dir, 'messages.jsonl');
    await runEngine(env, 'import', sink);

    appendLines(file, turnEnvelopes('grow', 2));
    const sync = await runEngine(env, 'sync', sink);
    expect(sync.messages).toBe(4);
    await runEngine(env, 'sync', sink);
    appendLines(file, turnEnvelopes('grow', 3));
    await runEngine(env, 'sync', sink);
    await runEngine(env, 'sync', sink);

    expect(held(sink, conversationFor(1))).toEqual(expectedTurns('grow', [0, 1, 2, 3]));
  });
});

describe('unchanged sessions', () => {
  it('skips a session whose file did not change without reading it, and re-reads a touched one without resending', async () => {
    const dir = writeMessagesSession(env.dataDir, 1, turnsEnvelopes('skip', [0, 1]));
    const file = path.join(dir, 'messages.jsonl');
    // A malformed line shows whether the file was read: each read reports it again.
    fs.appendFileSync(file, '{not json\n');
    const first = await runEngine(env, 'import', 'everme');
    expect(first.warnings).toEqual({ invalid_json: 1 });
    expect(first.bytes).toBe(fs.statSync(file).size);
    const requests = agentMemoryRequests();

    const second = await runEngine(env, 'import', 'everme');
    expect(second.sessions).toMatchObject({ scanned: 1, unchanged: 1 });
    expect(second.bytes).toBe(0);
    expect(second.warnings).toEqual({});
    expect(agentMemoryRequests()).toBe(requests);

    const later = new Date(Date.now() + 60_000);
    fs.utimesSync(file, later, later);
    const touched = await runEngine(env, 'import', 'everme');
    expect(touched.bytes).toBe(fs.statSync(file).size);
    expect(touched.warnings).toEqual({ invalid_json: 1 });
    expect(touched.sessions).toMatchObject({ scanned: 1, unchanged: 1 });
    expect(touched.requests).toBe(0);
    expect(agentMemoryRequests()).toBe(requests);
  });

  it('ends an unchanged session at its checks for the store, which owes it nothing, and still at the gateway, which may owe a flush', async () => {
    writeMessagesSession(env.dataDir, 1, turnsEnvelopes('quiet', [0, 1]));
    writeLedgerSession(env.dataDir, 2, 'still', [0]);
    const localBegins = vi.spyOn(LocalSink.prototype, 'begin');
    const gatewayBegins = vi.spyOn(GatewaySink.prototype, 'begin');
    try {
      await runEngine(env, 'import', 'everme');
      expect(localBegins).toHaveBeenCalledTimes(2);
      localBegins.mockClear();
      gatewayBegins.mockClear();

      const again = await runEngine(env, 'sync', 'everme');
      expect(again.sessions).toMatchObject({ scanned: 2, unchanged: 2, delivered: 0, failed: 0 });
      expect(again.sinks).toEqual([
        expect.objectContaining({ sink: 'everme', sessions: expect.objectContaining({ unchanged: 2, failed: 0 }) as unknown }),
        expect.objectContaining({ sink: 'local', sessions: expect.objectContaining({ unchanged: 2, failed: 0 }) as unknown }),
      ]);
      expect(localBegins).not.toHaveBeenCalled();
      expect(gatewayBegins).toHaveBeenCalledTimes(2);
    } finally {
      localBegins.mockRestore();
      gatewayBegins.mockRestore();
    }
  });
});

/** messages.jsonl after a compaction: the summary line points at the snapshot that holds the old file. */
function compact(dir: string, kept: unknown[], added: unknown[], opts: { keepSnapshot?: boolean } = {}): void {
  const file = path.join(dir, 'messages.jsonl');
  const snapshot = path.join(dir, 'snapshots', 'g000000000001--cmp_one.jsonl');
  fs.mkdirSync(path.dirname(snapshot), { recursive: true });
  if (opts.keepSnapshot !== false) fs.copyFileSync(file, snapshot);
  const summary = {
    message_id: 'msg-compaction-summary',
    turn_id: 'turn_compaction',
    message: { role: 'compactionSummary', summary: 'earlier work, summarised', tokensBefore: 12000, timestamp: Date.UTC(2026, 8, 10, 9) },
    history_artifact: { schemaVersion: 1, generation: 2, producedBy: 'compaction', parentSnapshot: { generation: 1, compactionId: 'cmp_one', revision: 1 } },
  };
  replaceFile(file, jsonlOf([summary, ...kept, ...added]));
}

describe.each<SinkName>(['everme', 'local'])('rewritten files (%s sink)', (sink) => {
  it('after a compaction, resends none of the kept messages and delivers the new ones once', async () => {
    const dir = writeMessagesSession(env.dataDir, 1, turnsEnvelopes('cmp', [0, 1, 2]));
    await runEngine(env, 'import', sink);

    compact(dir, turnEnvelopes('cmp', 2), turnEnvelopes('cmp', 3));
    const sync = await runEngine(env, 'sync', sink);
    expect(sync.messages).toBe(4);
    expect(sync.removed).toBe(0);
    expect(sync.warnings).toEqual({});
    expect(held(sink, conversationFor(1))).toEqual(expectedTurns('cmp', [0, 1, 2, 3]));
  });

  it('after a rewind, delivers the new turn once and never resends the turns kept', async () => {
    const dir = writeMessagesSession(env.dataDir, 1, turnsEnvelopes('rw', [0, 1, 2]));
    await runEngine(env, 'import', sink);

    // Rewound to before turn 2, then a different turn 5 was asked.
    replaceFile(path.join(dir, 'messages.jsonl'), jsonlOf(turnsEnvelopes('rw', [0, 1, 5])));
    const sync = await runEngine(env, 'sync', sink);
    expect(sync.messages).toBe(4);
    if (sink === 'local') {
      // The embedded store forgets what left the history.
      expect(sync.removed).toBe(4);
      expect(sync.warnings).toEqual({});
      expect(held(sink, conversationFor(1))).toEqual(expectedTurns('rw', [0, 1, 5]));
    } else {
      // The gateway cannot take it back: it is recorded as a warning instead.
      expect(sync.removed).toBe(0);
      expect(sync.warnings).toEqual({ history_rewritten: 4 });
      expect(held(sink, conversationFor(1))).toEqual(expectedTurns('rw', [0, 1, 2, 5]));
      const recorded = recordedWarnings(env.stateDir, conversationFor(1));
      expect(recorded.flatMap((set) => set.warnings)).toEqual([{ code: 'history_rewritten', count: 4, samples: [{ file: 'messages.jsonl', line: 0 }] }]);
    }
  });

  it('after a rewind that leaves messages.jsonl empty, removes (embedded store) or reports (gateway) all of it; a new empty session stays silent', async () => {
    const dir = writeMessagesSession(env.dataDir, 1, turnsEnvelopes('gone', [0, 1]));
    // Just created: the runtime makes its messages.jsonl empty.
    writeMessagesSession(env.dataDir, 2, []);
    await runEngine(env, 'import', sink);

    // Rewound to before the first message: the runtime replaces the file with an empty one.
    replaceFile(path.join(dir, 'messages.jsonl'), '');
    const sync = await runEngine(env, 'sync', sink);
    expect(sync.sessions).toMatchObject({ delivered: 1, empty: 1 });
    expect(sync.messages).toBe(0);
    if (sink === 'local') {
      expect(sync.removed).toBe(8);
      expect(held(sink, conversationFor(1))).toEqual([]);
    } else {
      expect(sync.warnings).toEqual({ history_rewritten: 8 });
      expect(held(sink, conversationFor(1))).toEqual(expectedTurns('gone', [0, 1]));
    }
    expect(held(sink, conversationFor(2))).toEqual([]);

    const again = await runEngine(env, 'sync', sink);
    expect(again.sessions).toMatchObject({ delivered: 0, unchanged: 1, empty: 1 });
  });

  it('removes (embedded store) or reports (gateway) a ledger turn retracted after import, and delivers the next turn once', async () => {
    const ledger = writeLedgerSession(env.dataDir, 3, 'led', [0, 1, 2]);
    await runEngine(env, 'import', sink);
    const sessionId = sessionIdFor(3);
    const before = turnMessages('led', 0).concat(turnMessages('led', 1));
    appendLines(ledger.file, [ledgerEvent(sessionId, ledger.nextSeq, 'message.turn_retracted', { turnId: 'turn_led_2', removedDisplayMsgIds: [], messages: before })]);

    const sync = await runEngine(env, 'sync', sink);
    expect(sync.messages).toBe(0);
    if (sink === 'local') {
      expect(sync.removed).toBe(4);
      expect(held(sink, conversationFor(3))).toEqual(expectedTurns('led', [0, 1]));
    } else {
      expect(sync.warnings).toEqual({ history_rewritten: 4 });
      expect(held(sink, conversationFor(3))).toEqual(expectedTurns('led', [0, 1, 2]));
    }

    appendLines(ledger.file, [ledgerEvent(sessionId, ledger.nextSeq + 1, 'message.pi_history_appended', { messages: turnMessages('led', 3) })]);
    const next = await runEngine(env, 'sync', sink);
    expect(next.messages).toBe(4);
    expect(held(sink, conversationFor(3))).toEqual(expectedTurns('led', sink === 'local' ? [0, 1, 3] : [0, 1, 2, 3]));
  });
});

describe('what a rewritten history leaves behind', () => {
  it('keeps the history_rewritten warning of the gateway after later appends to the session', async () => {
    const dir = writeMessagesSession(env.dataDir, 1, turnsEnvelopes('keep', [0, 1, 2]));
    const file = path.join(dir, 'messages.jsonl');
    await runEngine(env, 'import', 'everme');
    replaceFile(file, jsonlOf(turnsEnvelopes('keep', [0, 1])));
    await runEngine(env, 'sync', 'everme');

    appendLines(file, turnEnvelopes('keep', 7));
    const later = await runEngine(env, 'sync', 'everme');
    expect(later.messages).toBe(4);
    const codes = recordedWarnings(env.stateDir, conversationFor(1)).flatMap((set) => set.warnings.map((w) => [w.code, w.count]));
    expect(codes).toEqual([['history_rewritten', 4]]);
    expect(gatewaySignatures(gateway, conversationFor(1))).toEqual(expectedTurns('keep', [0, 1, 2, 7]));
  });

  it('does not resend a retracted message that comes back to the gateway, which still holds it', async () => {
    const dir = writeMessagesSession(env.dataDir, 1, turnsEnvelopes('back', [0, 1]));
    const file = path.join(dir, 'messages.jsonl');
    await runEngine(env, 'import', 'everme');
    replaceFile(file, jsonlOf(turnsEnvelopes('back', [0])));
    await runEngine(env, 'sync', 'everme');
    replaceFile(file, jsonlOf(turnsEnvelopes('back', [0, 1, 2])));
    const restored = await runEngine(env, 'sync', 'everme');
    expect(restored.messages).toBe(4);
    expect(restored.warnings).toEqual({});
    expect(gatewaySignatures(gateway, conversationFor(1))).toEqual(expectedTurns('back', [0, 1, 2]));
  });

  it('keeps what the embedded store holds when a compacted file names a snapshot that is missing', async () => {
    const dir = writeMessagesSession(env.dataDir, 1, turnsEnvelopes('lost', [0, 1, 2]));
    await runEngine(env, 'import', 'local');
    compact(dir, turnEnvelopes('lost', 2), turnEnvelopes('lost', 3), { keepSnapshot: false });

    const sync = await runEngine(env, 'sync', 'local');
    expect(sync.warnings).toEqual({ missing_snapshot: 1 });
    expect(sync.removed).toBe(0);
    expect(storedSignatures(env.stateDir, conversationFor(1))).toEqual(expectedTurns('lost', [0, 1, 2, 3]));
  });
});
