import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useCliTree } from './support/cli-tree.js';
import type { FakeGateway } from './support/fake-gateway.js';
import { envelopeOf, runCli } from './support/cli-process.js';
import {
  appendLines,
  conversationFor,
  expectedTurns,
  jsonlOf,
  sessionIdFor,
  turnEnvelopes,
  turnsEnvelopes,
  writeMessagesSession,
} from './support/delivery-trees.js';
import { flushFlags, gatewaySignatures } from './support/delivery-harness.js';
import { makeSession } from './transcript-helpers.js';

let gateway: FakeGateway;
let dataDir: string;
let env: NodeJS.ProcessEnv;

useCliTree((tree) => {
  ({ gateway, dataDir, env } = tree);
});

const sync = (...more: string[]) => runCli(['sync', '--data-dir', dataDir, '--json', ...more], env);

describe('everme sync', () => {
  it('delivers what was appended since the import exactly once, flushing at the finished turn; a second sync sends nothing', async () => {
    const file = path.join(writeMessagesSession(dataDir, 1, turnsEnvelopes('s', [0, 1])), 'messages.jsonl');
    writeMessagesSession(dataDir, 2, turnsEnvelopes('quiet', [0]));
    expect((await runCli(['import', '--since', '2026-09-01', '--data-dir', dataDir, '--json'], env)).code).toBe(0);

    appendLines(file, turnEnvelopes('s', 2));
    const first = await sync();
    expect(first.code).toBe(0);
    expect(envelopeOf(first).data).toMatchObject({ mode: 'sync', sink: 'everme', since: '2026-09-01', messages: 4, sessions: { scanned: 2, delivered: 1, unchanged: 1 } });
    const requests = gateway.requestsTo('/mem/agent-memory').length;

    const second = await sync();
    expect(envelopeOf(second).data).toMatchObject({ messages: 0, requests: 0, sessions: { unchanged: 2 } });
    expect(gateway.requestsTo('/mem/agent-memory')).toHaveLength(requests);
    expect(gatewaySignatures(gateway, conversationFor(1))).toEqual(expectedTurns('s', [0, 1, 2]));
    expect(flushFlags(gateway, conversationFor(1))).toEqual([true, true]);
  });

  it('looks back only as far as the earliest import, and --session narrows it to one session', async () => {
    const oldId = sessionIdFor(9);
    const oldDir = makeSession(dataDir, '2026/08/15', oldId, {
      createdAtMs: Date.UTC(2026, 7, 15),
      files: { 'messages.jsonl': jsonlOf(turnsEnvelopes('old', [0])) },
    });
    const newFile = path.join(writeMessagesSession(dataDir, 1, turnsEnvelopes('new', [0])), 'messages.jsonl');
    expect(envelopeOf(await runCli(['import', '--since', '2026-09-01', '--data-dir', dataDir, '--json'], env)).data).toMatchObject({ messages: 4 });

    appendLines(path.join(oldDir, 'messages.jsonl'), turnEnvelopes('old', 1));
    appendLines(newFile, turnEnvelopes('new', 1));
    const narrowed = await sync('--session', oldId);
    // Named explicitly, a session is synced whatever its age.
    expect(envelopeOf(narrowed).data).toMatchObject({ messages: 8, sessions: { scanned: 1, delivered: 1 } });
    expect(gateway.messagesFor(conversationFor(1))).toHaveLength(4);

    const wide = await sync();
    expect(envelopeOf(wide).data).toMatchObject({ messages: 4, sessions: { scanned: 1, delivered: 1 } });
    expect(gatewaySignatures(gateway, conversationFor(1))).toEqual(expectedTurns('new', [0, 1]));
    expect(gatewaySignatures(gateway, conversationFor(9))).toEqual(expectedTurns('old', [0, 1]));
  });

  it('--session with an id no session has is not_found, naming the data dir, and sends nothing', async () => {
    writeMessagesSession(dataDir, 1, turnsEnvelopes('s', [0]));
    const missing = await sync('--session', sessionIdFor(42));
    expect(missing.code).toBe(1);
    expect(envelopeOf(missing).error).toMatchObject({ type: 'not_found', message: `No session ${sessionIdFor(42)} under ${dataDir}` });
    expect(gateway.requestsTo('/mem/agent-memory')).toEqual([]);
  });

  it('with no import yet, looks back 24 hours: a session of today is delivered, one of 10 days ago is not scanned', async () => {
    const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10).replaceAll('-', '/');
    const now = Date.now();
    const recent = sessionIdFor(3);
    makeSession(dataDir, day(now), recent, { createdAtMs: now - 60 * 60_000, files: { 'messages.jsonl': jsonlOf(turnsEnvelopes('recent', [0])) } });
    const stale = now - 10 * 24 * 60 * 60_000;
    makeSession(dataDir, day(stale), sessionIdFor(4), { createdAtMs: stale, files: { 'messages.jsonl': jsonlOf(turnsEnvelopes('stale', [0])) } });

    const before = Date.now();
    const run = await sync();
    const after = Date.now();
    expect(run.code, run.stderr).toBe(0);
    const data = envelopeOf(run).data as { since: string; sessions: { scanned: number; delivered: number } };
    // The horizon is the moment 24 hours before the run, not a day boundary or an older import.
    const since = Date.parse(data.since);
    expect(since).toBeGreaterThanOrEqual(before - 24 * 60 * 60_000 - 1000);
    expect(since).toBeLessThanOrEqual(after - 24 * 60 * 60_000);
    expect(data.sessions).toMatchObject({ scanned: 1, delivered: 1 });
    expect(gatewaySignatures(gateway, conversationFor(3))).toEqual(expectedTurns('recent', [0]));
    expect(gateway.messagesFor(conversationFor(4))).toEqual([]);
  });
});
