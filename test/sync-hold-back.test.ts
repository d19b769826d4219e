import { afterAll, beforeAll, expect, it } from 'vitest';
import { MAX_UNDECIDED_BYTES } from '../src/sinks/gateway/flush-policy.js';
import { MAX_REQUEST_BYTES } from '../src/memory/task-batcher.js';
import { startFakeGateway, type FakeGateway } from './support/fake-gateway.js';
import { conversationFor, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { runEngine, stateDirIn } from './support/delivery-harness.js';
import { tempDir } from './transcript-helpers.js';

/**
 * README (`everme sync`): "While that is not known yet [whether the batch ends on a finished turn],
 * a sync holds up to 8 MiB of requests back; past that it sends them with `sync: true`." The
 * engine runs in-process against the fake gateway; the session is ~12 MiB of new text that ends
 * mid-turn, so no flush follows and what is held to the end goes out without `sync`.
 */
let gateway: FakeGateway;

beforeAll(async () => {
  gateway = await startFakeGateway();
});

afterAll(async () => {
  await gateway.close();
});

interface Sent {
  sync: boolean;
  flush: boolean;
  bytes: number;
}

/** The README's number, not the constant's: a changed constant fails here. */
const EIGHT_MIB = 8 * 1024 * 1024;

it('a sync holds up to 8 MiB of undecided requests back and sends the older ones with sync: true', async () => {
  expect(MAX_UNDECIDED_BYTES).toBe(EIGHT_MIB);
  const root = tempDir();
  const dataDir = `${root}/data`;
  // ~12 MiB: 300 turns with 40 KB tool outputs, the last turn open (no answer yet).
  const turns = Array.from({ length: 300 }, (_, i) => i);
  const envelopes = [...turnsEnvelopes('big', turns.slice(0, -1), { toolBytes: 40_000 }), ...turnsEnvelopes('big', turns.slice(-1), { open: true })];
  writeMessagesSession(dataDir, 1, envelopes);

  const summary = await runEngine({ dataDir, stateDir: stateDirIn(root), gateway }, 'sync', 'everme', { sinceMs: Date.UTC(2026, 8, 1) });
  expect(summary.sessions).toMatchObject({ delivered: 1, failed: 0 });

  const sent: Sent[] = gateway
    .requestsTo('/mem/agent-memory')
    .filter((r) => (r.body as { conversationId?: string }).conversationId === conversationFor(1))
    .map((r) => {
      const body = r.body as { sync?: boolean; flush: boolean };
      return { sync: body.sync === true, flush: body.flush, bytes: r.bodyBytes };
    });
  const total = sent.reduce((sum, r) => sum + r.bytes, 0);
  // The premise: well past the hold-back, in many requests.
  expect(total).toBeGreaterThan(EIGHT_MIB + 2 * 1024 * 1024);
  expect(sent.every((r) => r.bytes <= MAX_REQUEST_BYTES + 1024)).toBe(true);

  // The batch ends mid-turn: nothing flushes.
  expect(sent.some((r) => r.flush)).toBe(false);
  // The older requests went out with sync: true, the newer ones without, never mixed.
  const firstHeld = sent.findIndex((r) => !r.sync);
  expect(firstHeld).toBeGreaterThan(0);
  expect(sent.slice(firstHeld).every((r) => !r.sync)).toBe(true);
  // What was held back to the end is at most 8 MiB, and no less than 8 MiB less one request:
  // a smaller hold-back sends more with sync, a larger one fewer.
  const heldBytes = sent.slice(firstHeld).reduce((sum, r) => sum + r.bytes, 0);
  expect(heldBytes).toBeLessThanOrEqual(EIGHT_MIB + 2 * 1024);
  expect(heldBytes).toBeGreaterThan(EIGHT_MIB - MAX_REQUEST_BYTES - 2 * 1024);
}, 120_000);
