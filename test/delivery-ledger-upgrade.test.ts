import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SinkName } from '../src/config/settings.js';
import { openDatabase } from '../src/store/database.js';
import { startFakeGateway, type FakeGateway } from './support/fake-gateway.js';
import {
  conversationFor,
  expectedSignatures,
  expectedTurns,
  jsonlOf,
  ledgerEvent,
  replaceFile,
  sessionIdFor,
  turnMessages,
  writeLedgerSession,
  type PiMessage,
} from './support/delivery-trees.js';
import { duplicateKeys, freshHarnessEnv, gatewaySignatures, recordedWarnings, runEngine, storedRows, storedSignatures, type HarnessEnv } from './support/delivery-harness.js';
import { copyTree, tempDir } from './transcript-helpers.js';

const N = 42;
const SESSION_ID = sessionIdFor(N);
const CONVERSATION_ID = conversationFor(N);
const TAG = 'upg';

let gateway: FakeGateway;
beforeAll(async () => {
  gateway = await startFakeGateway();
});
afterAll(async () => {
  await gateway.close();
});

const SUMMARY: PiMessage = { role: 'user', content: [{ type: 'text', text: '[summary] turn 1' }], timestamp: turnMessages(TAG, 3).at(0)!.timestamp - 1000 };
/** What the ledger's history is once compacted: the summary, the kept turn 2, then turn 3. */
const COMPACTED = [SUMMARY, ...turnMessages(TAG, 2), ...turnMessages(TAG, 3)];

/**
 * A ledger session with turns 1 and 2, a compaction that keeps turn 2 after its summary, and turn 3,
 * delivered by a release from before kept turns carried their keys, whose marks are still in the
 * state dir. Such a release keyed a ledger's messages as a plain hash chain over its effective
 * history, which is what this build gives the same history written without a replacement: so the
 * state is made by delivering that history, and the ledger is then written as the runtime wrote it.
 * `continueIt` appends turn 4.
 */
async function deliveredByAnEarlierRelease(env: HarnessEnv, sink: SinkName): Promise<{ ledger: string; continueIt(): void }> {
  const ledger = writeLedgerSession(env.dataDir, N, TAG, []);
  const created = fs.readFileSync(ledger.file, 'utf8');
  const appended = (seq: number, messages: PiMessage[]) => ledgerEvent(SESSION_ID, seq, 'message.pi_history_appended', { messages });
  replaceFile(ledger.file, created + jsonlOf([appended(2, COMPACTED)]));
  await runEngine(env, 'import', sink);

  const events = [
    appended(2, turnMessages(TAG, 1)),
    appended(3, turnMessages(TAG, 2)),
    ledgerEvent(SESSION_ID, 4, 'message.pi_history_replaced', { messages: [SUMMARY, ...turnMessages(TAG, 2)] }),
    appended(5, turnMessages(TAG, 3)),
  ];
  replaceFile(ledger.file, created + jsonlOf(events));
  return { ledger: ledger.dir, continueIt: () => fs.appendFileSync(ledger.file, jsonlOf([appended(6, turnMessages(TAG, 4))])) };
}

/** The gateway's marks of the conversation. */
function gatewayMarks(stateDir: string): string[] {
  const db = openDatabase(stateDir, { readonly: true });
  try {
    return db.prepare<[string], string>("SELECT msg_key FROM delivered WHERE sink = 'everme' AND conversation_id = ? ORDER BY msg_key").pluck().all(CONVERSATION_ID);
  } finally {
    db.close();
  }
}

/** The keys this build gives the session's messages read cold, into a state dir of its own. */
async function coldKeys(env: HarnessEnv): Promise<string[]> {
  const cold: HarnessEnv = { dataDir: copyTree(env.dataDir), stateDir: path.join(tempDir(), 'state') };
  await runEngine(cold, 'import', 'local');
  return storedRows(cold.stateDir, CONVERSATION_ID)
    .map((row) => row.msg_key)
    .sort();
}

const warningCodes = (stateDir: string): string[] => recordedWarnings(stateDir, CONVERSATION_ID).flatMap((c) => c.warnings.map((w) => w.code));

describe('a compacted ledger session an earlier release delivered, read by this one', () => {
  it('sends the gateway only the new turn, and its marks move to this build’s keys', async () => {
    gateway.reset();
    const env: HarnessEnv = { ...freshHarnessEnv(gateway), localStore: false };
    const session = await deliveredByAnEarlierRelease(env, 'everme');
    expect(gatewaySignatures(gateway, CONVERSATION_ID)).toEqual(expectedSignatures(COMPACTED));

    session.continueIt();
    const sync = await runEngine(env, 'sync', 'everme');
    expect(sync).toMatchObject({ messages: 4, removed: 0 });
    expect(gatewaySignatures(gateway, CONVERSATION_ID)).toEqual([...expectedSignatures(COMPACTED), ...expectedTurns(TAG, [4])]);
    expect(warningCodes(env.stateDir)).not.toContain('history_rewritten');
    expect(gatewayMarks(env.stateDir)).toEqual(await coldKeys(env));

    // Settled: nothing is sent again, however the session is read.
    expect((await runEngine(env, 'import', 'everme')).messages).toBe(0);
    expect(gatewaySignatures(gateway, CONVERSATION_ID)).toHaveLength(COMPACTED.length + 4);
  });

  it('keeps the store’s rows and their ids, under this build’s keys, and stores only the new turn', async () => {
    const env = freshHarnessEnv();
    const session = await deliveredByAnEarlierRelease(env, 'local');
    const before = storedRows(env.stateDir, CONVERSATION_ID);
    expect(before).toHaveLength(COMPACTED.length);

    session.continueIt();
    const sync = await runEngine(env, 'sync', 'local');
    expect(sync).toMatchObject({ messages: 4, removed: 0 });
    const rows = storedRows(env.stateDir, CONVERSATION_ID);
    expect(rows.slice(0, before.length).map((row) => row.id)).toEqual(before.map((row) => row.id));
    expect(storedSignatures(env.stateDir, CONVERSATION_ID)).toEqual([...expectedSignatures(COMPACTED), ...expectedTurns(TAG, [4])]);
    expect(rows.map((row) => row.msg_key).sort()).toEqual(await coldKeys(env));
    expect(duplicateKeys(env.stateDir)).toEqual([]);
    expect(warningCodes(env.stateDir)).not.toContain('history_rewritten');
  });

  it.each<SinkName>(['everme', 'local'])('reopened by a newer build (a messages.jsonl beside the ledger), only the new turn goes out (%s sink)', async (sink) => {
    gateway.reset();
    const env: HarnessEnv = { ...freshHarnessEnv(gateway), localStore: sink === 'local' };
    const session = await deliveredByAnEarlierRelease(env, sink);
    const before = storedRows(env.stateDir, CONVERSATION_ID);

    // The newer build carries the ledger's history over under message ids, then goes on (§3).
    const envelopes = [...COMPACTED, ...turnMessages(TAG, 4)].map((message, i) => ({ message_id: `msg-reopened-${i}`, turn_id: `turn_r_${i}`, message }));
    fs.writeFileSync(path.join(session.ledger, 'messages.jsonl'), jsonlOf(envelopes));
    const sync = await runEngine(env, 'sync', sink);
    expect(sync).toMatchObject({ messages: 4, removed: 0 });
    const expected = [...expectedSignatures(COMPACTED), ...expectedTurns(TAG, [4])];
    if (sink === 'everme') expect(gatewaySignatures(gateway, CONVERSATION_ID)).toEqual(expected);
    else {
      expect(storedSignatures(env.stateDir, CONVERSATION_ID)).toEqual(expected);
      expect(storedRows(env.stateDir, CONVERSATION_ID).slice(0, before.length)).toEqual(before);
      expect(duplicateKeys(env.stateDir)).toEqual([]);
    }
    expect(warningCodes(env.stateDir)).not.toContain('history_rewritten');
  });
});
