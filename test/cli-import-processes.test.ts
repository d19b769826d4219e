import { describe, expect, it } from 'vitest';
import { useCliTree } from './support/cli-tree.js';
import type { Fault, FakeGateway } from './support/fake-gateway.js';
import { envelopeOf, runCli, startCli, waitFor } from './support/cli-process.js';
import { conversationFor, expectedTurns, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { duplicateKeys, gatewaySignatures, storedSignatures } from './support/delivery-harness.js';

let gateway: FakeGateway;
let dataDir: string;
let stateDir: string;
let env: NodeJS.ProcessEnv;

useCliTree((tree) => {
  ({ gateway, dataDir, stateDir, env } = tree);
});

const importArgs = (...more: string[]) => ['import', '--since', '2026-09-01', '--data-dir', dataDir, '--sink', 'everme', '--json', ...more];
const TURNS = [0, 1, 2];

function writeTree(sessions: number): number[] {
  const ids = Array.from({ length: sessions }, (_, i) => i + 1);
  for (const n of ids) writeMessagesSession(dataDir, n, turnsEnvelopes(`c${n}`, TURNS, { toolBytes: 25_000 }));
  return ids;
}

function slowWrites(count: number, ms: number): void {
  gateway.failNext(...Array.from({ length: count }, (): Fault => ({ kind: 'delay', ms, path: '/mem/agent-memory' })));
}

function expectEachExactlyOnce(ids: number[]): void {
  for (const n of ids) expect(gatewaySignatures(gateway, conversationFor(n))).toEqual(expectedTurns(`c${n}`, TURNS, { toolBytes: 25_000 }));
}

describe('two everme processes at once', () => {
  it('never deliver a message twice: each session is worked on by one of them, the other finds it done', async () => {
    const ids = writeTree(10);
    // The first import's two workers each send one request that the gateway holds: it is mid-run,
    // holding two sessions, while the second import starts and delivers others. That the two runs
    // overlapped is then a fact, not a hope about timing.
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => (letGo = resolve));
    gateway.failNext({ kind: 'hold', until: held, path: '/mem/agent-memory' }, { kind: 'hold', until: held, path: '/mem/agent-memory' });
    const first = startCli(importArgs('--concurrency', '2'), env);
    await waitFor(() => gateway.requestsTo('/mem/agent-memory').length === 2, 60_000, "the first import's two held requests");
    // Four workers: two wait for the sessions the first import holds, two go on with others.
    const second = startCli(importArgs('--concurrency', '4'), env);
    await waitFor(() => gateway.requestsTo('/mem/agent-memory').length >= 3, 60_000, "the second import's first request");
    letGo();
    const [a, b] = [await first.done, await second.done];
    expect([a.code, b.code], a.stderr + b.stderr).toEqual([0, 0]);
    const [da, db] = [envelopeOf(a).data!, envelopeOf(b).data!];
    // Both did part of the work, and together all of it, once.
    expect(da.messages).toBeGreaterThan(0);
    expect(db.messages).toBeGreaterThan(0);
    const total = ids.length * TURNS.length * 4;
    expect((da.messages as number) + (db.messages as number)).toBe(total);
    expectEachExactlyOnce(ids);
  });
});

describe('Ctrl-C during an import', () => {
  it('exits 130 once the requests in flight are answered, and a re-run delivers the rest exactly once', async () => {
    const ids = writeTree(8);
    slowWrites(50, 400);
    const run = startCli(importArgs('--concurrency', '1'), env);
    await waitFor(() => gateway.requestsTo('/mem/agent-memory').length >= 1, 15_000, 'the first request');
    run.child.kill('SIGINT');
    const interrupted = await run.done;

    expect(interrupted.code).toBe(130);
    expect(envelopeOf(interrupted)).toMatchObject({ ok: false, error: { type: 'cancelled' } });
    const sent = gateway.requestsTo('/mem/agent-memory').length;
    expect(sent).toBeLessThan(ids.length);
    // The request in flight was answered and stored before the process left.
    expect(gateway.messagesFor(conversationFor(1)).length).toBeGreaterThan(0);

    const rerun = await runCli(importArgs(), env);
    expect(rerun.code).toBe(0);
    expectEachExactlyOnce(ids);
  });
});

describe('the gateway and the embedded store together', () => {
  function expectStoreExactlyOnce(ids: number[]): void {
    for (const n of ids) expect(storedSignatures(stateDir, conversationFor(n))).toEqual(expectedTurns(`c${n}`, TURNS, { toolBytes: 25_000 }));
    expect(duplicateKeys(stateDir)).toEqual([]);
  }

  it('two processes at once leave each message once in each sink', async () => {
    const ids = writeTree(10);
    slowWrites(200, 40);
    const [a, b] = await Promise.all([runCli(importArgs('--concurrency', '2'), env), runCli(importArgs('--concurrency', '2'), env)]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const local = (r: typeof a) => ((envelopeOf(r).data!.sinks as Array<{ sink: string; messages: number }>).find((s) => s.sink === 'local')?.messages ?? 0);
    expect(local(a) + local(b)).toBe(ids.length * TURNS.length * 4);
    expectEachExactlyOnce(ids);
    expectStoreExactlyOnce(ids);
  });

  it('Ctrl-C, then a re-run, leaves each message once in each sink', async () => {
    const ids = writeTree(8);
    slowWrites(50, 400);
    const run = startCli(importArgs('--concurrency', '1'), env);
    await waitFor(() => gateway.requestsTo('/mem/agent-memory').length >= 1, 15_000, 'the first request');
    run.child.kill('SIGINT');
    expect((await run.done).code).toBe(130);
    const rerun = await runCli(importArgs(), env);
    expect(rerun.code).toBe(0);
    expectEachExactlyOnce(ids);
    expectStoreExactlyOnce(ids);
  });
});
