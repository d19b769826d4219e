/**
 * A run over many sessions reads every fingerprint and tombstone once, at its start, for the first
 * checks; under the session lock it reads both again, live.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openEngine } from '../src/engine/engine-context.js';
import { deliverSession, startDelivery, StartedDelivery } from '../src/engine/session-delivery.js';
import { openDatabase } from '../src/store/database.js';
import { FingerprintStore } from '../src/store/fingerprint-store.js';
import { inlinePlanner } from '../src/engine/planner.js';
import { TombstoneStore } from '../src/store/tombstones.js';
import { discoverSessions } from '../src/transcript/discover.js';
import type { SessionRef } from '../src/transcript/types.js';
import { runEngine, settingsFor, storeCounts } from './support/delivery-harness.js';
import { appendLines, conversationFor, sessionIdFor, turnEnvelopes, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { tempDir } from './transcript-helpers.js';

const SESSIONS = 70;

function tree(sessions = SESSIONS): { dataDir: string; stateDir: string; files: string[] } {
  const root = tempDir();
  const dataDir = path.join(root, 'data');
  fs.mkdirSync(dataDir);
  const files = Array.from({ length: sessions }, (_, i) => path.join(writeMessagesSession(dataDir, i + 1, turnsEnvelopes(`s${i + 1}`, [0])), 'messages.jsonl'));
  return { dataDir, stateDir: path.join(root, 'state'), files };
}

describe('a run over many sessions', () => {
  it('skips unchanged and forgotten sessions from what it read at its start, and delivers what changed', async () => {
    const t = tree();
    const first = await runEngine(t, 'import', 'local');
    expect(first.sessions).toMatchObject({ scanned: SESSIONS, delivered: SESSIONS, failed: 0 });

    const db = openDatabase(t.stateDir);
    // The walk kept every manifest it read, for the next walk (see transcript-discover.test.ts).
    expect(db.prepare('SELECT count(*) FROM session_manifests').pluck().get()).toBe(SESSIONS);
    const fingerprints = new FingerprintStore(db);
    // One query returns what the per-session lookup returns, for every session.
    const all = fingerprints.allOf('local');
    expect(all.size).toBe(SESSIONS);
    for (let n = 1; n <= SESSIONS; n++) expect(all.get(sessionIdFor(n))).toEqual(fingerprints.get('local', sessionIdFor(n)));
    const tombstones = new TombstoneStore(db);
    tombstones.put({ conversationId: conversationFor(1), sessionId: sessionIdFor(1) });
    tombstones.put({ conversationId: conversationFor(2), sessionId: sessionIdFor(2) });
    expect(tombstones.forgottenIds()).toEqual(new Set([conversationFor(1), conversationFor(2)]));
    db.close();

    // A forgotten session that grew, and two others that grew.
    for (const i of [0, 2, 3]) appendLines(t.files[i]!, turnEnvelopes(`s${i + 1}`, 1));
    const before = storeCounts(t.stateDir).messages;
    const second = await runEngine(t, 'sync', 'local');
    expect(second.sessions).toMatchObject({ scanned: SESSIONS, delivered: 2, forgotten: 2, unchanged: SESSIONS - 4, failed: 0 });
    const perTurn = (storeCounts(t.stateDir).messages - before) / 2;
    expect(perTurn).toBeGreaterThan(0);
    expect(second.messages).toBe(2 * perTurn);
  });

  it('checks tombstones and fingerprints again under the lock: a forget or a delivery since the start wins', async () => {
    const t = tree();
    await runEngine(t, 'import', 'local');
    appendLines(t.files[0]!, turnEnvelopes('s1', 1));
    appendLines(t.files[1]!, turnEnvelopes('s2', 1));
    const sessions: SessionRef[] = [];
    for await (const s of discoverSessions(t.dataDir, { onInvalidManifest: () => undefined })) sessions.push(s);
    const engine = openEngine(settingsFor(t), 'local');
    try {
      // As the run found things at its start: nothing forgotten, nothing delivered.
      const stale = { fingerprint: () => undefined, forgotten: () => false };
      new TombstoneStore(engine.db).put({ conversationId: conversationFor(1), sessionId: sessionIdFor(1) });
      const ctx = { mode: 'sync' as const, sinks: engine.sinks, marks: engine.marks, planner: inlinePlanner, locks: engine.locks, privacy: engine.privacy, dryRun: false, snapshot: stale };
      const forgotten = await deliverSession(sessions.find((s) => s.sessionId === sessionIdFor(1))!, ctx);
      expect(forgotten.status).toBe('forgotten');
      expect(forgotten.sinks[0]!.messages).toBe(0);
      // Session 3 was delivered whole by the import: the live fingerprint says so, whatever the snapshot.
      const unchanged = await deliverSession(sessions.find((s) => s.sessionId === sessionIdFor(3))!, ctx);
      expect(unchanged).toMatchObject({ status: 'unchanged', sinks: [{ messages: 0 }] });
      const grown = await deliverSession(sessions.find((s) => s.sessionId === sessionIdFor(2))!, ctx);
      expect(grown.status).toBe('delivered');
    } finally {
      engine.close();
    }
  });
});

describe('sessions a run passes at once', () => {
  it("end at their first checks when unchanged and no sink is owed their end; the gateway's possible flush starts the session", async () => {
    const t = tree();
    await runEngine(t, 'import', 'local');
    const sessions: SessionRef[] = [];
    for await (const s of discoverSessions(t.dataDir, { onInvalidManifest: () => undefined })) sessions.push(s);
    const unchanged = sessions.find((s) => s.sessionId === sessionIdFor(3))!;
    appendLines(t.files[1]!, turnEnvelopes('s2', 1));
    const grown = sessions.find((s) => s.sessionId === sessionIdFor(2))!;
    // A gateway that is never asked: the first checks send nothing.
    const withKey = { ...settingsFor(t), apiKey: 'evt_never_sent_0000000000000000', apiBase: 'http://127.0.0.1:9' };
    for (const [primary, settings] of [['local', settingsFor(t)], ['everme', withKey]] as const) {
      const engine = openEngine(settings, primary);
      try {
        const fingerprints = engine.marks.fingerprints.allOf('local');
        const snapshot = { fingerprint: (sink: string, id: string) => (sink === 'local' ? fingerprints.get(id) : undefined), forgotten: () => false };
        const ctx = { mode: 'sync' as const, sinks: engine.sinks, marks: engine.marks, planner: inlinePlanner, locks: engine.locks, privacy: engine.privacy, dryRun: false, snapshot };
        expect(startDelivery(grown, ctx)).toBeInstanceOf(StartedDelivery);
        if (primary === 'local') expect(startDelivery(unchanged, ctx)).toMatchObject({ status: 'unchanged', sinks: [{ sink: 'local', status: 'unchanged' }] });
        // Unchanged for the store, but the gateway never took it: started, never ended at once.
        else expect(startDelivery(unchanged, ctx)).toBeInstanceOf(StartedDelivery);
      } finally {
        engine.close();
      }
    }
  });

  it('still hear Ctrl-C: a long no-op run gives the event loop a turn between them', async () => {
    const many = 300;
    const t = tree(many);
    await runEngine(t, 'import', 'local');
    const controller = new AbortController();
    let done = 0;
    const summary = await runEngine(t, 'sync', 'local', {
      signal: controller.signal,
      onProgress: (p) => {
        // Ctrl-C as the signal handler would deliver it: on a turn of the event loop.
        if (done === 0) setImmediate(() => controller.abort());
        done = p.sessionsDone;
      },
    });
    expect(summary.cancelled).toBe(true);
    expect(done).toBeGreaterThan(0);
    expect(done).toBeLessThan(many);
    expect(summary.sessions).toMatchObject({ failed: 0, delivered: 0 });
  });
});

describe('a defect outside any session', () => {
  it('rejects the run with its error once the sessions in flight end, and starts no more sessions', async () => {
    const t = tree();
    let calls = 0;
    const run = runEngine(t, 'import', 'local', {
      onProgress: () => {
        calls++;
        throw new Error('the progress display failed');
      },
    });
    await expect(run).rejects.toThrow('the progress display failed');
    // Two read slots (the harness's concurrency): far fewer than every session got started.
    expect(calls).toBeGreaterThan(0);
    expect(calls).toBeLessThan(SESSIONS);
  });
});
