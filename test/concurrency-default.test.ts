import { expect, it } from 'vitest';
import { defaultConcurrency } from '../src/engine/run-pipeline.js';
import { envelopeOf, startCli, waitFor } from './support/cli-process.js';
import { useCliTree, type CliTree } from './support/cli-tree.js';
import { conversationFor, expectedTurns, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { gatewaySignatures } from './support/delivery-harness.js';

/**
 * README (`everme import`): "`--concurrency` sessions read at once (default 2 into the embedded
 * store, 4 to the gateway)". A session holds its read slot until its last request is answered, so
 * the gateway, holding every request, sees exactly as many at once as the default allows.
 */
let tree: CliTree;
useCliTree((t) => {
  tree = t;
});

const SESSIONS = 7;

it('import to the gateway has 4 sessions in flight at once by default, no more', async () => {
  for (let n = 1; n <= SESSIONS; n++) writeMessagesSession(tree.dataDir, n, turnsEnvelopes(`c${n}`, [0]));
  let release!: () => void;
  const until = new Promise<void>((resolve) => (release = resolve));
  tree.gateway.failNext(...Array.from({ length: SESSIONS }, () => ({ kind: 'hold' as const, until, path: '/mem/agent-memory' })));
  const held = (): number => tree.gateway.requestsTo('/mem/agent-memory').length;

  // Held requests must not time out (and be sent again) while the test watches them.
  const env = { ...tree.env, EVERME_REQUEST_TIMEOUT_MS: '300000' };
  const run = startCli(['import', '--since', '2026-09-01', '--sink', 'everme', '--data-dir', tree.dataDir, '--json'], env);
  try {
    await waitFor(() => held() >= 4, 60_000, 'four requests held by the gateway');
    // A fifth slot would have sent its session's request well within this (each session is one
    // small request, read in milliseconds); a hang budget, not a speed limit.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(held()).toBe(4);
  } finally {
    release();
  }
  const done = await run.done;
  expect(done.code, done.stderr).toBe(0);
  expect(envelopeOf(done).data).toMatchObject({ sessions: { scanned: SESSIONS, delivered: SESSIONS, failed: 0 } });
  for (let n = 1; n <= SESSIONS; n++) expect(gatewaySignatures(tree.gateway, conversationFor(n))).toEqual(expectedTurns(`c${n}`, [0]));
}, 120_000);

it('the embedded store reads 2 sessions at once by default, the gateway 4', () => {
  // The embedded store's count cannot be watched from outside (its reads are synchronous and its
  // commits leave the slot); its default is checked where the pipeline takes it.
  expect(defaultConcurrency('local')).toBe(2);
  expect(defaultConcurrency('everme')).toBe(4);
});
