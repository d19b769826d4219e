import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SinkName } from '../src/config/settings.js';
import { conversationIdFor } from '../src/core/conversation-id.js';
import { startFakeGateway, type FakeGateway } from './support/fake-gateway.js';
import { jsonlOf, signature } from './support/delivery-trees.js';
import { duplicateKeys, gatewaySignatures, recordedWarnings, runEngine, storedSignatures, type HarnessEnv } from './support/delivery-harness.js';
import { copyTree, minimaxFixtures, tempDir } from './transcript-helpers.js';

const SESSION_ID = 'mvs_9d2e4c6a8b0f41d3a5c7e9f1b3d5f7a9';
const SESSION_DIR = path.join('v2', 'sessions', '2026', '07', '21', '14-02-33-910-session_bXZzXzlkMmU0YzZhOGIwZjQxZDNhNWM3ZTlmMWIzZDVmN2E5');
const SINCE_MS = Date.UTC(2026, 6, 1);

interface ExpectedReplay {
  piHistory: Array<Record<string, unknown> & { timestamp: number }>;
}

let gateway: FakeGateway;
beforeAll(async () => {
  gateway = await startFakeGateway();
});
afterAll(async () => {
  await gateway.close();
});

/**
 * The shared ledger example (fixtures/minimax/ledger-session), continued by a newer build: its
 * messages.jsonl holds the replayed ledger history (the fixture's expected replay) under
 * message ids, then one new turn.
 */
function continueWithMessagesFile(dataDir: string): Array<Record<string, unknown>> {
  const replay = JSON.parse(fs.readFileSync(path.join(minimaxFixtures, 'ledger-session', 'expected-replay.json'), 'utf8')) as ExpectedReplay;
  const last = replay.piHistory.at(-1)!.timestamp;
  const newTurn = [
    { role: 'user', content: [{ type: 'text', text: 'Now bump it to 4, please.' }], timestamp: last + 60_000 },
    { role: 'assistant', content: [{ type: 'text', text: 'WIDGET_VERSION is 4 now.' }], stopReason: 'stop', timestamp: last + 61_000 },
  ];
  const envelopes = [...replay.piHistory, ...newTurn].map((message, i) => ({ message_id: `msg-continued-${i}`, turn_id: `turn_c_${i}`, message }));
  fs.writeFileSync(path.join(dataDir, SESSION_DIR, 'messages.jsonl'), jsonlOf(envelopes));
  return newTurn;
}

describe('a ledger-era session continued by a newer build (ledger.jsonl and a non-empty messages.jsonl)', () => {
  it.each<SinkName>(['local', 'everme'])('sends only what is really new, matching what went under ledger keys by content (%s sink)', async (sink) => {
    gateway.reset();
    const dataDir = copyTree(path.join(minimaxFixtures, 'ledger-session'));
    const env: HarnessEnv = { dataDir, stateDir: path.join(tempDir(), 'state'), gateway };
    const conversationId = conversationIdFor(SESSION_ID);
    const held = (): string[] => (sink === 'everme' ? gatewaySignatures(gateway, conversationId) : storedSignatures(env.stateDir, conversationId));

    const first = await runEngine(env, 'import', sink, { sinceMs: SINCE_MS });
    expect(first.sessions.failed).toBe(0);
    const before = held();
    expect(before.length).toBeGreaterThan(0);

    const newTurn = continueWithMessagesFile(dataDir);
    const second = await runEngine(env, 'import', sink, { sinceMs: SINCE_MS });
    expect(second.sessions).toMatchObject({ delivered: 1, failed: 0 });
    // Only the new turn went out: nothing resent, nothing taken back.
    expect(second.messages).toBe(2);
    expect(second.removed).toBe(0);
    expect(held()).toEqual([...before, ...newTurn.map((m) => signature({ role: m.role as 'user' | 'assistant', timestamp: m.timestamp as number, content: (m.content as Array<{ text: string }>)[0]!.text }))]);
    if (sink === 'local') expect(duplicateKeys(env.stateDir)).toEqual([]);
    expect(recordedWarnings(env.stateDir, conversationId).flatMap((c) => c.warnings.map((w) => w.code))).not.toContain('history_rewritten');

    // And it stays settled: a re-run sends nothing.
    const third = await runEngine(env, 'import', sink, { sinceMs: SINCE_MS });
    expect(third.messages).toBe(0);
  });

  /** The ledger example imported into the local store: what it holds, and a way to write the newer file. */
  async function importedLedger() {
    const dataDir = copyTree(path.join(minimaxFixtures, 'ledger-session'));
    const env: HarnessEnv = { dataDir, stateDir: path.join(tempDir(), 'state'), gateway };
    const conversationId = conversationIdFor(SESSION_ID);
    await runEngine(env, 'import', 'local', { sinceMs: SINCE_MS });
    const replay = JSON.parse(fs.readFileSync(path.join(minimaxFixtures, 'ledger-session', 'expected-replay.json'), 'utf8')) as ExpectedReplay;
    return {
      dataDir,
      env,
      history: replay.piHistory,
      ledgerEra: storedSignatures(env.stateDir, conversationId),
      stored: () => storedSignatures(env.stateDir, conversationId),
      writeMessages: (envelopes: readonly unknown[]) => fs.writeFileSync(path.join(dataDir, SESSION_DIR, 'messages.jsonl'), jsonlOf(envelopes)),
      importAgain: () => runEngine(env, 'import', 'local', { sinceMs: SINCE_MS }),
    };
  }

  const said = (role: 'user' | 'assistant', text: string, timestamp: number) => ({
    role,
    content: [{ type: 'text', text }],
    ...(role === 'assistant' ? { stopReason: 'stop' } : {}),
    timestamp,
  });

  it('forgets what a rewind dropped, the messages first delivered under ledger keys included', async () => {
    const s = await importedLedger();
    continueWithMessagesFile(s.dataDir);
    await s.importAgain();

    // The user rewinds to after the first exchange and asks again: the runtime replaces the file (§3).
    const end = s.history.at(-1)!.timestamp;
    const retry = [said('user', 'Try it another way.', end + 120_000), said('assistant', 'Done the other way.', end + 121_000)];
    s.writeMessages([...s.history.slice(0, 2), ...retry].map((message, i) => ({ message_id: `msg-continued-${i < 2 ? i : 100 + i}`, turn_id: `turn_r_${i}`, message })));
    expect((await s.importAgain()).messages).toBe(2);
    expect(s.stored()).toEqual([
      ...s.ledgerEra.slice(0, 2),
      signature({ role: 'user', timestamp: end + 120_000, content: 'Try it another way.' }),
      signature({ role: 'assistant', timestamp: end + 121_000, content: 'Done the other way.' }),
    ]);
    expect(duplicateKeys(s.env.stateDir)).toEqual([]);
  });

  it('keeps every ledger-era message while the newer file ends with ones it carried over (it may still be being copied)', async () => {
    const s = await importedLedger();
    s.writeMessages(s.history.slice(0, 2).map((message, i) => ({ message_id: `msg-copy-${i}`, turn_id: 'turn_copy', message })));
    expect(await s.importAgain()).toMatchObject({ messages: 0, removed: 0 });
    expect(s.stored()).toEqual(s.ledgerEra);
  });

  it('keeps every ledger-era message when the newer file starts afresh, without the ledger history', async () => {
    const s = await importedLedger();
    const later = s.history.at(-1)!.timestamp + 60_000;
    const fresh = [said('user', 'A new question.', later), said('assistant', 'A new answer.', later + 1000)];
    s.writeMessages(fresh.map((message, i) => ({ message_id: `msg-fresh-${i}`, turn_id: 'turn_f', message })));
    expect(await s.importAgain()).toMatchObject({ messages: 2, removed: 0 });
    expect(s.stored()).toEqual([
      ...s.ledgerEra,
      signature({ role: 'user', timestamp: later, content: 'A new question.' }),
      signature({ role: 'assistant', timestamp: later + 1000, content: 'A new answer.' }),
    ]);
  });
});
