/**
 * A hostile or broken gateway, through the real CLI: answers that arrive after the batch was stored
 * but cannot be read, a rejected key among unchanged sessions, and an owed flush two runs race for.
 */
import { describe, expect, it } from 'vitest';
import { useCliTree } from './support/cli-tree.js';
import { cliEnv, envelopeOf, runCli, startCli, waitFor } from './support/cli-process.js';
import type { FakeGateway } from './support/fake-gateway.js';
import { conversationFor, expectedTurns, sessionIdFor, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { duplicateKeys, gatewaySignatures, storedSignatures } from './support/delivery-harness.js';

let gateway: FakeGateway;
let dataDir: string;
let stateDir: string;
let env: NodeJS.ProcessEnv;
let root: string;

useCliTree((tree) => {
  ({ gateway, dataDir, stateDir, env, root } = tree);
});

const TURNS = [0, 1, 2, 3, 4, 5];
const BIG = { toolBytes: 20_000 };
const SESSIONS = [1, 2] as const;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[48][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const importAll = (...more: string[]) => runCli(['import', '--since', '2026-09-01', '--data-dir', dataDir, '--concurrency', '1', ...more], env);
const writes = () => gateway.requestsTo('/mem/agent-memory');
const requestIdOf = (i: number): string => String(writes()[i]!.headers.requestid);

function writeTree(): void {
  for (const n of SESSIONS) writeMessagesSession(dataDir, n, turnsEnvelopes(`s${n}`, TURNS, BIG));
}

function expectEveryMessageExactlyOnce(): void {
  for (const n of SESSIONS) expect(gatewaySignatures(gateway, conversationFor(n))).toEqual(expectedTurns(`s${n}`, TURNS, BIG));
}

describe('a 2xx the client cannot read is an acknowledgement, never resent', () => {
  it.each(['bad_json', 'wrong_types', 'oversized', 'reset_mid_body'] as const)(
    'a gateway that stores a batch and answers it with %s ends with zero duplicates after re-runs',
    async (answer) => {
      writeTree();
      // The second write is stored, then answered unreadably.
      gateway.failNext({ kind: 'delay', ms: 0, path: '/mem/agent-memory' }, { kind: 'store_then', answer, path: '/mem/agent-memory' });
      const first = await importAll();
      expect(first.code, first.stderr).toBe(0);
      const garbled = writes().find((r) => r.fault === 'store_then')!;
      const garbledId = String(garbled.headers.requestid);
      expect(garbledId).toMatch(UUID);
      expect(first.stderr).toContain('gateway_response_invalid');
      expect(first.stderr).toContain(garbledId);
      expect(first.stdout).toContain('gateway_response_invalid 1');

      const sent = writes().length;
      const again = await importAll('--json');
      expect(again.code).toBe(0);
      expect(envelopeOf(again).data).toMatchObject({ messages: 0, requests: 0 });
      expect(writes()).toHaveLength(sent);
      expectEveryMessageExactlyOnce();
      // The acknowledged request was never sent a second time under its id.
      expect(writes().filter((r) => r.headers.requestid === garbledId)).toHaveLength(1);
    },
  );

  it('a reset before the status line may be resent, and the resend carries the same content-derived requestId', async () => {
    writeTree();
    gateway.failNext({ kind: 'delay', ms: 0, path: '/mem/agent-memory' }, { kind: 'reset', afterStore: false, path: '/mem/agent-memory' });
    const first = await importAll();
    expect(first.code).toBe(1);
    const lostId = requestIdOf(1);
    expect(writes()[1]!.fault).toBe('reset');
    const before = writes().length;

    const second = await importAll();
    expect(second.code, second.stderr).toBe(0);
    // Re-sent from the last acknowledged point: the same batch, recognisably the same request.
    expect(requestIdOf(before)).toBe(lostId);
    expect(writes()[before]!.body).toEqual(writes()[1]!.body);
    expectEveryMessageExactlyOnce();
    // Every other request had its own id: ids name content, not a coincidence.
    const ids = writes().map((r) => String(r.headers.requestid));
    expect(new Set(ids).size).toBe(ids.length - 1);
  });
});

describe('exit codes', () => {
  it('a rejected key exits 3 even when another session had nothing to send', async () => {
    writeMessagesSession(dataDir, 1, turnsEnvelopes('a', [0]));
    expect((await importAll()).code).toBe(0);
    // A second session appears; the first is unchanged. Then the key is rejected.
    writeMessagesSession(dataDir, 2, turnsEnvelopes('b', [0]));
    const rejected = await runCli(
      ['import', '--since', '2026-09-01', '--data-dir', dataDir, '--json'],
      cliEnv(root, { ...env, EVERME_API_KEY: 'evt_wrongwrongwrong0123' }),
    );
    expect(rejected.code).toBe(3);
    expect(envelopeOf(rejected).error).toMatchObject({ type: 'auth' });
  });
});

describe('an owed flush is claimed once', () => {
  it('two concurrent runs send an owed flush exactly once', async () => {
    // The hook's way of delivering: a sync of an open turn delivers without a flush and owes one.
    writeMessagesSession(dataDir, 1, [...turnsEnvelopes('f', [0]), ...turnsEnvelopes('f', [1], { open: true })]);
    const owing = await runCli(['sync', '--session', sessionIdFor(1), '--data-dir', dataDir, '--json'], env);
    expect(owing.code, owing.stderr).toBe(0);
    const flushes = () => writes().filter((r) => (r.body as { flush?: boolean }).flush === true);
    expect(flushes()).toHaveLength(0);

    let release!: () => void;
    gateway.failNext({ kind: 'hold', until: new Promise<void>((resolve) => (release = resolve)), path: '/mem/agent-memory' });
    const a = startCli(['import', '--since', '2026-09-01', '--data-dir', dataDir, '--json'], env);
    await waitFor(() => flushes().length === 1, 20_000, 'the first run to send its flush');
    // While the first run's flush is in flight, a second run looks at the same conversation.
    const b = await runCli(['import', '--since', '2026-09-01', '--data-dir', dataDir, '--json'], env);
    release();
    const aDone = await a.done;
    expect([aDone.code, b.code]).toEqual([0, 0]);
    expect(flushes()).toHaveLength(1);
    expect(gateway.flushes).toEqual([{ conversationId: conversationFor(1), messageCount: 6 }]);

    // Settled: a third run owes and sends nothing.
    const c = await runCli(['import', '--since', '2026-09-01', '--data-dir', dataDir, '--json'], env);
    expect(envelopeOf(c).data).toMatchObject({ requests: 0 });
  });
});

describe('a mangled 2xx with the embedded store kept too', () => {
  it('is an acknowledgement at the gateway only: neither sink holds a message twice or misses one after re-runs', async () => {
    writeTree();
    gateway.failNext({ kind: 'delay', ms: 0, path: '/mem/agent-memory' }, { kind: 'store_then', answer: 'wrong_types', path: '/mem/agent-memory' });
    const first = await importAll('--json');
    expect(first.code, first.stderr).toBe(0);
    const data = envelopeOf(first).data!;
    expect(data.sinks).toEqual([
      expect.objectContaining({ sink: 'everme', sessions: expect.objectContaining({ delivered: 2, failed: 0 }) as unknown }) as unknown,
      expect.objectContaining({ sink: 'local', sessions: expect.objectContaining({ delivered: 2, failed: 0 }) as unknown }) as unknown,
    ]);
    expect(data.warnings).toMatchObject({ gateway_response_invalid: 1 });
    // Recorded for the report as the gateway's own warning, next to the reader's.
    const report = envelopeOf(await runCli(['report', '--data-dir', dataDir, '--json'], env)).data!;
    expect(report.totals).toMatchObject({ gateway_response_invalid: 1 });

    const again = await importAll('--json');
    expect(envelopeOf(again).data).toMatchObject({ messages: 0, requests: 0, sinks: [{ sink: 'everme', messages: 0 }, { sink: 'local', messages: 0 }] });
    expectEveryMessageExactlyOnce();
    for (const n of SESSIONS) expect(storedSignatures(stateDir, conversationFor(n))).toEqual(expectedTurns(`s${n}`, TURNS, BIG));
    expect(duplicateKeys(stateDir)).toEqual([]);
  });
});
