import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGateway, type FakeGateway } from './support/fake-gateway.js';
import { appendLines, conversationFor, expectedTurns, ledgerEvent, sessionIdFor, signature, turnMessages, writeLedgerSession } from './support/delivery-trees.js';
import { duplicateKeys, freshHarnessEnv, gatewaySignatures, runEngine, storedRows, type HarnessEnv } from './support/delivery-harness.js';
import { copyTree, tempDir } from './transcript-helpers.js';

const N = 41;
const SESSION_ID = sessionIdFor(N);
const CONVERSATION_ID = conversationFor(N);

let gateway: FakeGateway;
beforeAll(async () => {
  gateway = await startFakeGateway();
});
afterAll(async () => {
  await gateway.close();
});

/**
 * A ledger session with turns 1 and 2, then (written later) a compaction that keeps turn 2 after
 * its summary, and turn 3 after it.
 */
const SUMMARY = { role: 'user', content: [{ type: 'text', text: '[summary] turn 1' }], timestamp: turnMessages('keep', 3).at(0)!.timestamp - 1000 };

function compactionThatKeepsTheRecentTurn(env: HarnessEnv): { continueIt(): void } {
  const ledger = writeLedgerSession(env.dataDir, N, 'keep', [1, 2]);
  return {
    continueIt: () =>
      appendLines(ledger.file, [
        ledgerEvent(SESSION_ID, ledger.nextSeq, 'message.pi_history_replaced', { messages: [SUMMARY, ...turnMessages('keep', 2)] }),
        ledgerEvent(SESSION_ID, ledger.nextSeq + 1, 'message.pi_history_appended', { messages: turnMessages('keep', 3) }),
      ]),
  };
}

describe('a ledger-era compaction that keeps the recent turns', () => {
  it('sends the kept messages once and keeps their stored rows; only the summary and what follows are new', async () => {
    gateway.reset();
    const env = freshHarnessEnv(gateway);
    const session = compactionThatKeepsTheRecentTurn(env);
    await runEngine(env, 'import', 'everme');
    const turn2Rows = storedRows(env.stateDir, CONVERSATION_ID).slice(4);

    session.continueIt();
    const second = await runEngine(env, 'import', 'everme');
    expect(second.messages).toBe(5);
    expect(gatewaySignatures(gateway, CONVERSATION_ID)).toEqual([...expectedTurns('keep', [1, 2]), signature({ role: 'user', timestamp: SUMMARY.timestamp, content: '[summary] turn 1' }), ...expectedTurns('keep', [3])]);
    // Turn 1 left the history; turn 2 is still there under the rows (and `m…` ids) it had.
    const rows = storedRows(env.stateDir, CONVERSATION_ID);
    expect(rows).toHaveLength(9);
    expect(rows.slice(0, 4)).toEqual(turn2Rows);
    expect(duplicateKeys(env.stateDir)).toEqual([]);
  });

  it('gives the same keys read in steps as read cold from the final file', async () => {
    const stepped = freshHarnessEnv();
    const session = compactionThatKeepsTheRecentTurn(stepped);
    await runEngine(stepped, 'import', 'local');
    session.continueIt();
    await runEngine(stepped, 'import', 'local');

    const cold: HarnessEnv = { dataDir: copyTree(stepped.dataDir), stateDir: tempDir() };
    await runEngine(cold, 'import', 'local');

    const keys = (env: HarnessEnv) => storedRows(env.stateDir, CONVERSATION_ID).map((row) => row.msg_key).sort();
    expect(keys(stepped)).toHaveLength(9);
    expect(keys(cold)).toEqual(keys(stepped));
  });
});
