import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCorpus } from '../bench/corpus.js';
import { openDatabase } from '../src/store/database.js';
import { cliEnv, envelopeOf, runCli, startCli, waitFor } from './support/cli-process.js';
import { duplicateKeys, gatewaySignatures, runEngine, storedSignatures } from './support/delivery-harness.js';
import { conversationFor, expectedTurns, sessionIdFor, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { startFakeGateway, type FakeGateway } from './support/fake-gateway.js';
import { holdSessionLock, someSessionOf } from './support/session-hold.js';
import { storeCount } from './support/store-count.js';
import { tempDir } from './transcript-helpers.js';

/** Stored messages so far, or 0 while the database does not exist or is still being created. */
function storedCount(stateDir: string): number {
  try {
    const db = openDatabase(stateDir, { readonly: true });
    try {
      return db.prepare<[], { n: number }>('SELECT count(*) AS n FROM messages').get()?.n ?? 0;
    } finally {
      db.close();
    }
  } catch {
    return 0;
  }
}

/** Every stored message as `conversation msg_key`, sorted. */
function storedKeys(stateDir: string): string[] {
  const db = openDatabase(stateDir, { readonly: true });
  try {
    return db
      .prepare<[], { k: string }>("SELECT conversation_id || ' ' || msg_key AS k FROM messages ORDER BY k")
      .all()
      .map((row) => row.k);
  } finally {
    db.close();
  }
}

describe('an import killed with SIGKILL', () => {
  it('loses and doubles nothing: the re-run stores every message exactly once, as a clean import does', async () => {
    const root = tempDir();
    const dataDir = path.join(root, 'data');
    const stateDir = path.join(root, 'state');
    fs.mkdirSync(dataDir);
    // Enough sessions that the kill usually lands among the commits (200 were once all committed
    // before it took effect). Size alone proves nothing on a loaded machine, so one session's lock
    // is held (below) until after the kill: the import cannot finish first.
    generateCorpus(dataDir, 600, 12_000);
    const env = cliEnv(root, { EVERME_STATE_DIR: stateDir });
    const args = ['import', '--since', '2026-01-01', '--data-dir', dataDir, '--sink', 'local', '--json'];

    const clean = await runEngine({ dataDir, stateDir: path.join(root, 'clean-state') }, 'import', 'local', { since: '2026-01-01', concurrency: 4 });
    expect(clean.sessions.failed).toBe(0);
    const expected = storedKeys(path.join(root, 'clean-state'));
    expect(expected.length).toBe(clean.messages);

    const release = holdSessionLock(stateDir, someSessionOf(path.join(root, 'clean-state')));
    const victim = startCli(args, env);
    await waitFor(() => storedCount(stateDir) > 0, 60_000, 'the first stored messages');
    victim.child.kill('SIGKILL');
    const killed = await victim.done;
    release();
    expect(killed.signal).toBe('SIGKILL');
    // Killed mid-run: some, not all, of the messages made it.
    const partial = storedCount(stateDir);
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThan(expected.length);

    const rerun = await runCli(args, env);
    expect(rerun.code).toBe(0);
    expect(duplicateKeys(stateDir)).toEqual([]);
    expect(storedKeys(stateDir)).toEqual(expected);
    // Three imports of 600 sessions: minutes, not seconds, on a loaded 2-core machine. A hang
    // budget, not a speed limit.
  }, 180_000);
});

/** Three (or `count`) two-turn sessions, and the environment that imports them to the gateway and the store. */
function threeSessionsForBothSinks(gateway: FakeGateway, count = 3): { dataDir: string; stateDir: string; ids: number[]; env: NodeJS.ProcessEnv } {
  const root = tempDir();
  const dataDir = path.join(root, 'data');
  const stateDir = path.join(root, 'state');
  fs.mkdirSync(dataDir);
  const ids = Array.from({ length: count }, (_, i) => i + 1);
  for (const n of ids) writeMessagesSession(dataDir, n, turnsEnvelopes(`k${n}`, [0, 1]));
  const env = cliEnv(root, { EVERME_STATE_DIR: stateDir, EVERME_API_KEY: gateway.token, EVERME_API_BASE: gateway.url });
  return { dataDir, stateDir, ids, env };
}

describe('an import to the gateway and the store killed with SIGKILL between the two sinks’ commits', () => {
  let gateway: FakeGateway;
  beforeAll(async () => {
    gateway = await startFakeGateway();
  });
  afterAll(async () => {
    await gateway.close();
  });

  /** Sessions the store took whole (its fingerprints), or 0 while the database is being created. */
  function storeFingerprints(stateDir: string): number {
    return storeCount(stateDir, "SELECT count(*) FROM fingerprints WHERE sink = 'local'");
  }

  it('leaves neither a duplicate nor a gap in either sink: the re-run sends the gateway what it lacks and the store nothing', async () => {
    const { dataDir, stateDir, ids, env } = threeSessionsForBothSinks(gateway);
    const args = ['import', '--since', '2026-09-01', '--data-dir', dataDir, '--concurrency', '1', '--json'];

    // The first session's one request (it flushes) never gets an answer; the store commits that
    // session meanwhile. The kill lands after the store's commit and before the gateway's.
    gateway.failNext({ kind: 'hang', path: '/mem/agent-memory' });
    const victim = startCli(args, env);
    await waitFor(() => gateway.requestsTo('/mem/agent-memory').length === 1 && storeFingerprints(stateDir) === 1, 20_000, 'the store’s commit with the gateway’s request in flight');
    victim.child.kill('SIGKILL');
    expect((await victim.done).signal).toBe('SIGKILL');
    const inStore = ids.filter((n) => storedSignatures(stateDir, conversationFor(n)).length > 0);
    expect(inStore).toHaveLength(1);
    expect(storedSignatures(stateDir, conversationFor(inStore[0]!))).toEqual(expectedTurns(`k${inStore[0]}`, [0, 1]));
    for (const n of ids) expect(gateway.messagesFor(conversationFor(n))).toEqual([]);

    const rerun = await runCli(args, env);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(envelopeOf(rerun).data).toMatchObject({ sinks: [{ sink: 'everme', messages: 24 }, { sink: 'local', messages: 16 }] });
    for (const n of ids) {
      expect(gatewaySignatures(gateway, conversationFor(n))).toEqual(expectedTurns(`k${n}`, [0, 1]));
      expect(storedSignatures(stateDir, conversationFor(n))).toEqual(expectedTurns(`k${n}`, [0, 1]));
    }
    expect(duplicateKeys(stateDir)).toEqual([]);
  });
});

describe('an import killed with SIGKILL, then status and a plain sync', () => {
  let gateway: FakeGateway;
  beforeAll(async () => {
    gateway = await startFakeGateway();
  });
  afterAll(async () => {
    await gateway.close();
  });

  interface RunView {
    status?: string;
    since?: string;
  }
  interface StatusSeen {
    code: number | null;
    lastImport?: RunView;
    problems: Array<{ what: string; hint: string }>;
  }

  /** `status --json`'s report, whether it passed or failed with problems. */
  async function statusOf(args: string[], env: NodeJS.ProcessEnv): Promise<StatusSeen> {
    const r = await runCli(['status', '--json', ...args], env);
    const envelope = envelopeOf(r) as { data?: { lastImport?: RunView; problems: StatusSeen['problems'] }; error?: { detail?: { status?: { lastImport?: RunView; problems: StatusSeen['problems'] } } } };
    const report = envelope.data ?? envelope.error?.detail?.status;
    if (!report) throw new Error(`status printed no report:\n${r.stdout}\n${r.stderr}`);
    return { code: r.code, ...report };
  }

  it('says the import was interrupted, not running, and the next sync delivers what it left', async () => {
    const { dataDir, stateDir, ids, env } = threeSessionsForBothSinks(gateway);
    const dataArgs = ['--data-dir', dataDir];

    // Session 3 is held, so the import takes 1 and 2 and then waits for it until the kill. The kill
    // waits for both sinks to have taken 1 and 2: the store commits a session before the gateway's
    // answer is recorded, so waiting for the store alone once killed before session 2's gateway mark
    // and the sync rightly delivered two sessions, not one.
    // The gateway answers session 2 late, so the two sinks' marks for it land far apart.
    const release = holdSessionLock(stateDir, sessionIdFor(3));
    gateway.failNext({ kind: 'delay', ms: 0, path: '/mem/agent-memory' }, { kind: 'delay', ms: 1_500, path: '/mem/agent-memory' });
    const victim = startCli(['import', '--since', '2026-09-01', '--concurrency', '1', '--json', ...dataArgs], env);
    const takenBy = (sink: string) => storeCount(stateDir, `SELECT count(*) FROM fingerprints WHERE sink = '${sink}'`);
    await waitFor(() => takenBy('local') === 2 && takenBy('everme') === 2, 30_000, 'sessions 1 and 2 imported to both sinks');
    victim.child.kill('SIGKILL');
    expect((await victim.done).signal).toBe('SIGKILL');
    release();
    expect(gateway.messagesFor(conversationFor(3))).toEqual([]);

    // The import's own process (the heap-capped child) kills itself once its parent is gone.
    let seen = await statusOf(dataArgs, env);
    for (const deadline = Date.now() + 10_000; seen.lastImport?.status !== 'interrupted' && Date.now() < deadline; ) seen = await statusOf(dataArgs, env);
    expect(seen.lastImport).toMatchObject({ status: 'interrupted', since: '2026-09-01' });
    expect(seen.code).toBe(1);
    expect(seen.problems).toContainEqual({ what: expect.stringContaining('--since 2026-09-01') as unknown, hint: expect.stringContaining('`everme sync`') as unknown });
    const text = await runCli(['status', ...dataArgs], env);
    expect(text.stderr).toMatch(/last import: {2}\S+ \(interrupted\) since 2026-09-01/);

    // No --since: the sync looks back as far as the interrupted import and completes it.
    const synced = await runCli(['sync', '--json', ...dataArgs], env);
    expect(synced.code, synced.stderr).toBe(0);
    expect(envelopeOf(synced).data).toMatchObject({ sessions: { delivered: 1 } });
    for (const n of ids) {
      expect(gatewaySignatures(gateway, conversationFor(n))).toEqual(expectedTurns(`k${n}`, [0, 1]));
      expect(storedSignatures(stateDir, conversationFor(n))).toEqual(expectedTurns(`k${n}`, [0, 1]));
    }
    const after = await statusOf(dataArgs, env);
    expect(after.lastImport).toMatchObject({ status: 'interrupted' });
    expect(after.problems.map((p) => p.what).join('\n')).not.toContain('interrupted');
  });

  it('keeps reporting the interrupted import after a sync --session delivers one of the sessions it left', async () => {
    const { dataDir, stateDir, env } = threeSessionsForBothSinks(gateway, 4);
    const dataArgs = ['--data-dir', dataDir];

    // Session 3 is held: the import takes 1 and 2, waits for 3 until the kill, and never reaches 4.
    const release = holdSessionLock(stateDir, sessionIdFor(3));
    const victim = startCli(['import', '--since', '2026-09-01', '--concurrency', '1', '--json', ...dataArgs], env);
    const takenBy = (sink: string) => storeCount(stateDir, `SELECT count(*) FROM fingerprints WHERE sink = '${sink}'`);
    await waitFor(() => takenBy('local') === 2 && takenBy('everme') === 2, 30_000, 'sessions 1 and 2 imported to both sinks');
    victim.child.kill('SIGKILL');
    expect((await victim.done).signal).toBe('SIGKILL');
    release();
    let seen = await statusOf(dataArgs, env);
    for (const deadline = Date.now() + 10_000; seen.lastImport?.status !== 'interrupted' && Date.now() < deadline; ) seen = await statusOf(dataArgs, env);
    expect(seen.lastImport).toMatchObject({ status: 'interrupted' });

    // One session delivered; session 4 is still not captured, so the problem and its hint stay.
    const one = await runCli(['sync', '--session', sessionIdFor(3), '--json', ...dataArgs], env);
    expect(one.code, one.stderr).toBe(0);
    expect(envelopeOf(one).data).toMatchObject({ sessions: { delivered: 1 } });
    expect(gateway.messagesFor(conversationFor(4))).toEqual([]);
    const afterOne = await statusOf(dataArgs, env);
    expect(afterOne.code).toBe(1);
    expect(afterOne.problems).toContainEqual({ what: expect.stringContaining('was interrupted') as unknown, hint: expect.stringContaining('`everme sync`') as unknown });

    // A sync of every session delivers session 4 and completes the import.
    const all = await runCli(['sync', '--json', ...dataArgs], env);
    expect(all.code, all.stderr).toBe(0);
    expect(envelopeOf(all).data).toMatchObject({ sessions: { delivered: 1 } });
    expect(storedSignatures(stateDir, conversationFor(4))).toEqual(expectedTurns('k4', [0, 1]));
    const afterAll = await statusOf(dataArgs, env);
    expect(afterAll.problems.map((p) => p.what).join('\n')).not.toContain('interrupted');
  });
});
