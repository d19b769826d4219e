import { describe, expect, it } from 'vitest';
import { runCli, startCli, waitFor } from './support/cli-process.js';
import { useCliTree, type CliTree } from './support/cli-tree.js';
import { conversationFor, expectedTurns, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { gatewaySignatures } from './support/delivery-harness.js';

const TURNS = [0, 1, 2, 3, 4, 5, 6, 7, 8];

describe('Ctrl-C during a 429 back-off', () => {
  let tree!: CliTree;
  useCliTree((t) => (tree = t));

  it('ends the Retry-After wait: exit 130 long before the 60 s it was told to wait, and a re-run delivers every message exactly once', async () => {
    // Nine turns of ~20 KB of tool output: three or more requests for the one conversation.
    writeMessagesSession(tree.dataDir, 1, turnsEnvelopes('wait', TURNS, { toolBytes: 20_000 }));
    const args = ['import', '--since', '2026-09-01', '--data-dir', tree.dataDir, '--concurrency', '1'];
    // The first request goes through; the second is told to come back in a minute.
    tree.gateway.failNext({ kind: 'delay', ms: 0, path: '/mem/agent-memory' }, { kind: 'rate_limit', retryAfter: '60', path: '/mem/agent-memory' });

    const run = startCli(args, tree.env);
    await waitFor(() => tree.gateway.requestsTo('/mem/agent-memory').some((r) => r.fault === 'rate_limit'), 30_000, 'the rate-limited request');
    const acceptedBefore = tree.gateway.messagesFor(conversationFor(1)).length;
    expect(acceptedBefore).toBeGreaterThan(0);
    const interruptedAt = Date.now();
    run.child.kill('SIGINT');
    const interrupted = await run.done;
    // A hang detector: 15 s is far below the 60 s wait, and above any loaded machine's exit time.
    expect(Date.now() - interruptedAt).toBeLessThan(15_000);
    expect(interrupted.code).toBe(130);
    expect(interrupted.stdout).toBe('');
    // Nothing new started after the interrupt.
    expect(tree.gateway.requestsTo('/mem/agent-memory')).toHaveLength(2);

    const rerun = await runCli(args, tree.env);
    expect(rerun.code).toBe(0);
    expect(gatewaySignatures(tree.gateway, conversationFor(1))).toEqual(expectedTurns('wait', TURNS, { toolBytes: 20_000 }));
  });
});
