import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runOutcomeError } from '../src/cli/render-run.js';
import { exitCodeFor } from '../src/core/errors.js';
import { startFakeGateway, type Fault, type FakeGateway } from './support/fake-gateway.js';
import { openDatabase } from '../src/store/database.js';
import { sinkStatuses } from '../src/status/sink-status.js';
import { conversationFor, expectedTurns, sessionIdFor, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { duplicateKeys, gatewaySignatures, runEngine, storeCounts, storedSignatures, type HarnessEnv } from './support/delivery-harness.js';
import { tempDir } from './transcript-helpers.js';

let gateway: FakeGateway;
let env: HarnessEnv;

beforeAll(async () => {
  gateway = await startFakeGateway();
});
afterAll(async () => {
  await gateway.close();
});
beforeEach(async () => {
  await gateway.setDown(false);
  gateway.reset();
  const root = tempDir();
  // A request timeout is a hang detector, not a speed limit: 15 s, which no answered request takes
  // even on a loaded 2-core machine. Only the test of a hanging request shortens it (below).
  env = { dataDir: path.join(root, 'data'), stateDir: path.join(root, 'state'), gateway, timeoutMs: 15_000 };
  fs.mkdirSync(env.dataDir);
});

const SESSIONS = [1, 2, 3] as const;
const TURNS = [0, 1, 2, 3, 4, 5];
const BIG = { toolBytes: 20_000 };

/** Three sessions, each large enough for several requests. */
function writeTree(): void {
  for (const n of SESSIONS) writeMessagesSession(env.dataDir, n, turnsEnvelopes(`s${n}`, TURNS, BIG));
}

function expectEveryMessageExactlyOnce(): void {
  for (const n of SESSIONS) expect(gatewaySignatures(gateway, conversationFor(n))).toEqual(expectedTurns(`s${n}`, TURNS, BIG));
}

const run = () => runEngine(env, 'import', 'everme', { concurrency: 1 });
const agentMemoryRequests = (): number => gateway.requestsTo('/mem/agent-memory').length;

/** A fault for the n-th next write (1-based): earlier writes pass untouched. */
function failWrite(n: number, fault: Fault): void {
  const pass: Fault[] = Array.from({ length: n - 1 }, () => ({ kind: 'delay', ms: 0, path: '/mem/agent-memory' }));
  gateway.failNext(...pass, { ...fault, path: '/mem/agent-memory' });
}

describe('exactly once after a failed request', () => {
  const cases: Array<[string, Fault, string]> = [
    ['HTTP 500', { kind: 'http', status: 500 }, 'upstream'],
    ['a connection reset before the gateway stored anything', { kind: 'reset' }, 'network'],
    ['a request that times out', { kind: 'hang' }, 'network'],
    ['a non-JSON 502', { kind: 'non_json', status: 502 }, 'upstream'],
  ];
  it.each(cases)('after %s mid-session, the run fails that session only and a re-run completes it exactly once', async (_name, fault, type) => {
    writeTree();
    // The hanging request never gets an answer: any timeout ends it. 3 s is still far above what an
    // answered request takes (it was 400 ms, and a slow answer under load failed a second session).
    if (fault.kind === 'hang') env.timeoutMs = 3_000;
    failWrite(2, fault);
    const first = await run();
    expect(first.sessions).toMatchObject({ scanned: 3, failed: 1, delivered: 2 });
    expect(first.failures).toEqual([expect.objectContaining({ type })]);
    const error = runOutcomeError(first);
    expect(error?.type).toBe('conflict');
    expect(error?.detail).toMatchObject({ failed: 1, total: 3 });
    expect(exitCodeFor(error!.type)).toBe(1);
    // The request before the failure was acknowledged and committed; the other sessions are complete.
    const failedConversation = conversationFor(Number(first.failures[0]!.sessionId.slice(4, 12)));
    expect(gateway.messagesFor(failedConversation).length).toBeGreaterThan(0);

    const before = agentMemoryRequests();
    const second = await run();
    expect(second.sessions).toMatchObject({ failed: 0, delivered: 1, unchanged: 2 });
    expect(runOutcomeError(second)).toBeUndefined();
    // Only the failed session's remaining requests went out again.
    expect(agentMemoryRequests() - before).toBe(second.requests);
    expectEveryMessageExactlyOnce();
  });

  it('honours a 429 Retry-After and delivers everything in the same run, once', async () => {
    writeTree();
    failWrite(2, { kind: 'rate_limit', retryAfter: '1' });
    const started = Date.now();
    const summary = await run();
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(summary.sessions.failed).toBe(0);
    const limited = gateway.requestsTo('/mem/agent-memory').findIndex((r) => r.fault === 'rate_limit');
    expect(limited).toBeGreaterThanOrEqual(0);
    // The very next request resent the refused body.
    expect(gateway.requests[limited + 1]?.body).toEqual(gateway.requests[limited]?.body);
    expectEveryMessageExactlyOnce();
  });

  it('reports a gateway that is down as a network failure of the run, and a re-run delivers everything once', async () => {
    writeTree();
    await gateway.setDown(true);
    const first = await run();
    expect(first.sessions).toMatchObject({ scanned: 3, failed: 3, delivered: 0 });
    const error = runOutcomeError(first);
    expect(error?.type).toBe('network');
    expect(exitCodeFor(error!.type)).toBe(4);
    expect(gateway.requests).toHaveLength(0);

    await gateway.setDown(false);
    const second = await run();
    expect(second.sessions).toMatchObject({ failed: 0, delivered: 3 });
    expectEveryMessageExactlyOnce();
  });

  it('stops after an auth failure instead of failing every session against the same key', async () => {
    writeTree();
    failWrite(1, { kind: 'http', status: 401 });
    const first = await run();
    expect(first.failures.map((f) => f.type)).toEqual(['auth']);
    expect(first.sessions.failed).toBe(3);
    expect(agentMemoryRequests()).toBe(1);
    expect(runOutcomeError(first)?.type).toBe('auth');

    await run();
    expectEveryMessageExactlyOnce();
  });

  it('counts a session the store already holds as failed too, once the key was rejected: the gateway never got it', async () => {
    writeTree();
    const stored = await runEngine(env, 'import', 'local', { concurrency: 1 });
    expect(stored.sessions).toMatchObject({ delivered: 3, failed: 0 });
    failWrite(1, { kind: 'http', status: 401 });
    const first = await run();
    expect(first.failures.map((f) => f.type)).toEqual(['auth']);
    expect(first.sessions).toMatchObject({ scanned: 3, failed: 3, unchanged: 0 });
    expect(first.sinks.find((s) => s.sink === 'local')?.sessions).toMatchObject({ unchanged: 3, failed: 0 });
    expect(agentMemoryRequests()).toBe(1);

    const second = await run();
    expect(second.sessions).toMatchObject({ delivered: 3, failed: 0 });
    expectEveryMessageExactlyOnce();
  });

  it('counts a session with no history yet as empty at every sink, the gateway a rejected key stopped included', async () => {
    writeTree();
    // A fourth session, after the others, whose directory holds no history file yet.
    fs.rmSync(path.join(writeMessagesSession(env.dataDir, 4, turnsEnvelopes('s4', [0])), 'messages.jsonl'));
    failWrite(1, { kind: 'http', status: 401 });
    const first = await run();
    expect(first.sessions).toMatchObject({ scanned: 4, failed: 3, empty: 1 });
    expect(first.sinks.map((s) => [s.sink, s.sessions])).toEqual([
      ['everme', { delivered: 0, unchanged: 0, empty: 1, failed: 3 }],
      ['local', { delivered: 3, unchanged: 0, empty: 1, failed: 0 }],
    ]);
  });
});

describe('exactly once at each of two sinks (the gateway and the embedded store)', () => {
  // The file's 400 ms request timeout is for its hanging gateway; these runs must not hit it on a busy machine.
  const run = () => runEngine({ ...env, timeoutMs: 10_000 }, 'import', 'everme', { concurrency: 1 });
  /** The store keeps what the gateway was sent: every message once, in order, in both. */
  function expectBothSinksExactlyOnce(): void {
    expectEveryMessageExactlyOnce();
    for (const n of SESSIONS) expect(storedSignatures(env.stateDir, conversationFor(n))).toEqual(expectedTurns(`s${n}`, TURNS, BIG));
    expect(duplicateKeys(env.stateDir)).toEqual([]);
  }

  it('after a gateway 500 mid-run, the store still takes every session; the re-run completes only the gateway, once', async () => {
    writeTree();
    failWrite(2, { kind: 'http', status: 500 });
    const first = await run();
    expect(first.sinks.map((s) => [s.sink, s.sessions.delivered, s.sessions.failed])).toEqual([
      ['everme', 2, 1],
      ['local', 3, 0],
    ]);
    expect(first.sinks[0]!.failures).toEqual([expect.objectContaining({ type: 'upstream' })]);
    for (const n of SESSIONS) expect(storedSignatures(env.stateDir, conversationFor(n))).toEqual(expectedTurns(`s${n}`, TURNS, BIG));

    const before = agentMemoryRequests();
    const second = await run();
    expect(runOutcomeError(second)).toBeUndefined();
    // The gateway's failure is never resent to the store: it takes nothing on the re-run.
    expect(second.sinks[1]).toMatchObject({ sink: 'local', messages: 0, requests: 0, sessions: { delivered: 0, unchanged: 3, failed: 0 } });
    expect(second.sinks[0]).toMatchObject({ sink: 'everme', sessions: { delivered: 1, unchanged: 2, failed: 0 } });
    expect(agentMemoryRequests() - before).toBe(second.sinks[0]!.requests);
    expectBothSinksExactlyOnce();
  });

  it('after a store failure, the gateway still takes every session; the re-run completes only the store, once', async () => {
    writeTree();
    // The store refuses one conversation's messages (a full disk would too): the gateway is not told.
    const db = openDatabase(env.stateDir);
    db.exec(`CREATE TRIGGER refuse BEFORE INSERT ON messages WHEN NEW.conversation_id = '${conversationFor(2)}' BEGIN SELECT RAISE(ABORT, 'disk full'); END;`);
    db.close();
    const first = await run();
    expect(first.sinks.map((s) => [s.sink, s.sessions.delivered, s.sessions.failed])).toEqual([
      ['everme', 3, 0],
      ['local', 2, 1],
    ]);
    expect(first.failures).toEqual([expect.objectContaining({ sessionId: sessionIdFor(2), message: expect.stringContaining('disk full') as unknown })]);
    expectEveryMessageExactlyOnce();

    const fixed = openDatabase(env.stateDir);
    fixed.exec('DROP TRIGGER refuse');
    fixed.close();
    const before = agentMemoryRequests();
    const second = await run();
    expect(runOutcomeError(second)).toBeUndefined();
    expect(agentMemoryRequests()).toBe(before);
    expect(second.sinks[0]).toMatchObject({ sink: 'everme', messages: 0, requests: 0 });
    expect(second.sinks[1]).toMatchObject({ sink: 'local', sessions: { delivered: 1, unchanged: 2 } });
    expectBothSinksExactlyOnce();
  });

  it('counts as delivered by the store only the messages it committed, in the summary and in `everme status`', async () => {
    writeTree();
    const db = openDatabase(env.stateDir);
    db.exec(`CREATE TRIGGER refuse BEFORE INSERT ON messages WHEN NEW.conversation_id = '${conversationFor(2)}' BEGIN SELECT RAISE(ABORT, 'disk full'); END;`);
    db.close();
    const first = await run();
    const stored = storeCounts(env.stateDir).messages;
    const [everme, local] = first.sinks;
    expect(local).toMatchObject({ sink: 'local', sessions: { delivered: 2, failed: 1 }, messages: stored });
    expect(everme!.messages).toBeGreaterThan(stored);

    const status = openDatabase(env.stateDir);
    const lastRuns = sinkStatuses(status, ['everme', 'local']).map((s) => [s.sink, s.lastRun?.messages]);
    status.close();
    expect(lastRuns).toEqual([
      ['everme', everme!.messages],
      ['local', stored],
    ]);
  });

  it('with EVERME_LOCAL_STORE=0 delivers to the gateway alone and leaves the store empty', async () => {
    writeTree();
    const summary = await runEngine({ ...env, localStore: false }, 'import', 'everme', { concurrency: 1 });
    expect(summary.sinks.map((s) => s.sink)).toEqual(['everme']);
    expect(summary.sessions.delivered).toBe(3);
    expectEveryMessageExactlyOnce();
    expect(storeCounts(env.stateDir)).toEqual({ conversations: 0, messages: 0 });
  });
});

/**
 * A 32 MiB tmpfs for the state directory: a disk the store could fill, as `statfs` sees it. Mounting
 * takes root (CI runs as root); elsewhere these tests are skipped, and say why.
 */
const smallDisk = ((): string | undefined => {
  const dir = tempDir();
  return spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=32m', 'tmpfs', dir]).status === 0 ? dir : undefined;
})();

describe.skipIf(smallDisk === undefined)('on a nearly full disk, at two sinks (needs `mount -t tmpfs`, so root)', () => {
  const run = () => runEngine({ ...env, timeoutMs: 10_000 }, 'import', 'everme', { concurrency: 1 });
  afterAll(() => {
    spawnSync('umount', ['-l', smallDisk!]);
  });
  beforeEach(() => {
    env = { ...env, stateDir: fs.mkdtempSync(path.join(smallDisk!, 'state-')) };
  });

  it("the gateway's marks of what it acknowledged commit before the store's rows: a re-run once space is freed sends nothing", async () => {
    writeTree();
    // The disk's last space goes to whichever commits first: once a conversation's rows are in the
    // store, its gateway marks no longer fit.
    const db = openDatabase(env.stateDir);
    db.exec(`CREATE TRIGGER full_disk BEFORE INSERT ON delivered WHEN EXISTS (SELECT 1 FROM messages WHERE conversation_id = NEW.conversation_id)
      BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;`);
    db.close();
    const first = await run();
    expect(runOutcomeError(first)).toBeUndefined();
    expect(first.sinks.map((s) => [s.sink, s.sessions.delivered, s.sessions.failed])).toEqual([
      ['everme', 3, 0],
      ['local', 3, 0],
    ]);

    const freed = openDatabase(env.stateDir);
    freed.exec('DROP TRIGGER full_disk');
    freed.close();
    const before = agentMemoryRequests();
    const second = await run();
    expect(runOutcomeError(second)).toBeUndefined();
    expect(agentMemoryRequests()).toBe(before);
    expectEveryMessageExactlyOnce();
    for (const n of SESSIONS) expect(storedSignatures(env.stateDir, conversationFor(n))).toEqual(expectedTurns(`s${n}`, TURNS, BIG));
  });
});
