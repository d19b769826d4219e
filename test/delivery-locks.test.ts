import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EvermeError } from '../src/core/errors.js';
import { processStamp, processStartTime } from '../src/core/process-liveness.js';
import { SessionLocks } from '../src/engine/session-lock.js';
import { openDatabase } from '../src/store/database.js';
import { FlushClaimStore } from '../src/store/flush-claim-store.js';
import { startFakeGateway, type Fault } from './support/fake-gateway.js';
import { CREATED_AT_MS, DAY, conversationFor, expectedTurns, jsonlOf, sessionIdFor, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { gatewaySignatures, runEngine } from './support/delivery-harness.js';
import { cliEnv, envelopeOf, startCli, waitFor } from './support/cli-process.js';
import { storeCount } from './support/store-count.js';
import { makeSession, tempDir } from './transcript-helpers.js';

/** How many runs the store has recorded (each import records its run as it starts). */
function runsRecorded(stateDir: string): number {
  return storeCount(stateDir, 'SELECT count(*) FROM runs');
}

const SESSION = 'mvs_00000000000000000000000000000001';

/** A pid that surely belongs to no running process: one that has just exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

function holderOf(db: ReturnType<typeof openDatabase>): { owner: string; pid: number } | undefined {
  return db.prepare<[string], { owner: string; pid: number }>('SELECT owner, pid FROM session_locks WHERE session_id = ?').get(SESSION);
}

describe('SessionLocks', () => {
  it('refuses a second owner while the lock is held, and lets it in once released', () => {
    const stateDir = tempDir();
    const dbA = openDatabase(stateDir);
    const dbB = openDatabase(stateDir);
    const first = new SessionLocks(dbA, 'owner-a');
    const second = new SessionLocks(dbB, 'owner-b');
    expect(first.tryAcquire(SESSION)).toBe(true);
    expect(second.tryAcquire(SESSION)).toBe(false);
    // Other sessions are not affected.
    expect(second.tryAcquire('mvs_00000000000000000000000000000002')).toBe(true);

    first.release(SESSION);
    expect(second.tryAcquire(SESSION)).toBe(true);
    expect(holderOf(dbA)?.owner).toBe('owner-b');
    dbA.close();
    dbB.close();
  });

  it('does not let a non-owner release someone else’s lock', () => {
    const db = openDatabase(tempDir());
    const holder = new SessionLocks(db, 'holder');
    const other = new SessionLocks(db, 'other');
    expect(holder.tryAcquire(SESSION)).toBe(true);
    other.release(SESSION);
    expect(other.tryAcquire(SESSION)).toBe(false);
    db.close();
  });

  it('takes over the lock of an owner whose process died (kill -9 leaves its row behind)', () => {
    const db = openDatabase(tempDir());
    const pid = deadPid();
    db.prepare('INSERT INTO session_locks (session_id, owner, pid, acquired_at_ms) VALUES (?, ?, ?, ?)').run(SESSION, `${pid}`, pid, Date.now());
    const locks = new SessionLocks(db, 'survivor');
    expect(locks.tryAcquire(SESSION)).toBe(true);
    expect(holderOf(db)).toEqual({ owner: 'survivor', pid: process.pid });
    db.close();
  });

  // Where the OS tells a process's start time (Linux /proc); elsewhere the pid check alone stands.
  it.skipIf(processStartTime(process.pid) === undefined)('takes over the lock of a dead owner whose pid another process now has, and only that one', () => {
    const db = openDatabase(tempDir());
    const lockedBy = (owner: string) =>
      db.prepare('INSERT OR REPLACE INTO session_locks (session_id, owner, pid, acquired_at_ms) VALUES (?, ?, ?, ?)').run(SESSION, owner, process.pid, Date.now());
    const locks = new SessionLocks(db, 'survivor');
    // This very process holds the pid, but it started long after the owner the row records.
    lockedBy(`${process.pid}@1:dead-owner`);
    expect(locks.tryAcquire(SESSION)).toBe(true);
    locks.release(SESSION);
    // The same pid and start time: the owner runs.
    lockedBy(`${processStamp()}:live-owner`);
    expect(locks.tryAcquire(SESSION)).toBe(false);
    // A row from an earlier build names the pid alone: the pid check decides, as before.
    lockedBy(`${process.pid}:older-build`);
    expect(locks.tryAcquire(SESSION)).toBe(false);
    db.close();
  });

  it.skipIf(processStartTime(process.pid) === undefined)('claims a flush a dead sender left, when its pid now names another process, and never a live sender\'s', () => {
    const db = openDatabase(tempDir());
    const flushes = new FlushClaimStore(db);
    const claimedBy = (claim: string) => {
      flushes.record('everme', 'conv', true, true);
      db.prepare("UPDATE flush_state SET flush_claim = ? WHERE sink = 'everme' AND conversation_id = 'conv'").run(claim);
    };
    const now = Date.now();
    // This process holds the pid now, but the sender the claim names started long before it.
    claimedBy(`${process.pid}@1:${now}`);
    expect(flushes.claim('everme', 'conv', true, now)).toBeDefined();
    // The same pid and start time: the sender runs, its claim stands.
    claimedBy(`${processStamp()}:${now}`);
    expect(flushes.claim('everme', 'conv', true, now)).toBeUndefined();
    // A claim from an earlier build names the pid alone: the pid check decides, as before.
    claimedBy(`${process.pid}:${now}`);
    expect(flushes.claim('everme', 'conv', true, now)).toBeUndefined();
    db.close();
  });

  it('waits for a held lock and fails as a conflict when it is not released in time', async () => {
    const db = openDatabase(tempDir());
    const holder = new SessionLocks(db, 'holder');
    const waiter = new SessionLocks(db, 'waiter');
    holder.tryAcquire(SESSION);

    const timedOut = await waiter.acquire(SESSION, 120).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(timedOut).toBeInstanceOf(EvermeError);
    expect(timedOut).toMatchObject({ type: 'conflict', code: 'session_locked' });

    setTimeout(() => holder.release(SESSION), 100);
    await expect(waiter.acquire(SESSION, 5_000)).resolves.toBeUndefined();
    expect(holderOf(db)?.owner).toBe('waiter');
    db.close();
  });

  it('stops waiting when the run is interrupted', async () => {
    const db = openDatabase(tempDir());
    new SessionLocks(db, 'holder').tryAcquire(SESSION);
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 50);
    await expect(new SessionLocks(db, 'waiter').acquire(SESSION, 10_000, abort.signal)).rejects.toMatchObject({ type: 'cancelled' });
    db.close();
  });
});

describe('the session lock between two processes', () => {
  it('makes a second import wait while the first delivers the session, then find it done: each message once', async () => {
    const gateway = await startFakeGateway();
    try {
      const root = tempDir();
      const dataDir = path.join(root, 'data');
      const stateDir = path.join(root, 'state');
      const opts = { toolBytes: 25_000 };
      writeMessagesSession(dataDir, 1, turnsEnvelopes('held', [0, 1, 2, 3], opts));
      const env = cliEnv(root, { EVERME_STATE_DIR: stateDir, EVERME_API_KEY: gateway.token, EVERME_API_BASE: gateway.url });
      const args = ['import', '--since', '2026-09-01', '--data-dir', dataDir, '--concurrency', '1', '--json'];
      // The first import's first request is held: it holds the session's lock, and nothing of the
      // session is acknowledged (no mark has moved) until the test lets the request through.
      let letGo!: () => void;
      gateway.failNext({ kind: 'hold', until: new Promise<void>((resolve) => (letGo = resolve)), path: '/mem/agent-memory' });
      const first = startCli(args, env);
      await waitFor(() => gateway.requestsTo('/mem/agent-memory').length === 1, 60_000, "the first import's first request");

      const second = startCli(args, env);
      let secondExitedAt: number | undefined;
      void second.done.then(() => (secondExitedAt = Date.now()));
      // The second import has started its run; it gets 5 s to reach the session. Without the lock it
      // delivers the whole session in that time (nothing is marked yet) and exits.
      await waitFor(() => runsRecorded(stateDir) === 2, 60_000, 'the second import to start its run');
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      const releasedAt = Date.now();
      letGo();
      const [a, b] = [await first.done, await second.done];
      expect([a.code, b.code], a.stderr + b.stderr).toEqual([0, 0]);
      // Contended for real: the second import was still waiting when the first was let go.
      expect(secondExitedAt).toBeGreaterThanOrEqual(releasedAt);
      expect(envelopeOf(a).data).toMatchObject({ messages: 16 });
      expect(envelopeOf(b).data).toMatchObject({ messages: 0, requests: 0 });
      expect(gatewaySignatures(gateway, conversationFor(1))).toEqual(expectedTurns('held', [0, 1, 2, 3], opts));
    } finally {
      await gateway.close();
    }
  }, 180_000);
});

describe('a session copied to a second directory', () => {
  // Discovery drops the second directory of one session id, so the lock is never contended here;
  // the contended lock is the test above.
  it('is delivered once, from one of its directories', async () => {
    const gateway = await startFakeGateway();
    try {
      const root = tempDir();
      const dataDir = path.join(root, 'data');
      const sessionId = sessionIdFor(1);
      const text = jsonlOf(turnsEnvelopes('twin', [0, 1, 2], { toolBytes: 25_000 }));
      // A copy of a session directory (a restored backup, say) carries the same id and messages.
      for (const time of ['08-00-00-001', '08-00-00-002']) {
        makeSession(dataDir, DAY, sessionId, { createdAtMs: CREATED_AT_MS, time, files: { 'messages.jsonl': text } });
      }
      gateway.failNext(...Array.from({ length: 20 }, (): Fault => ({ kind: 'delay', ms: 30, path: '/mem/agent-memory' })));
      await runEngine({ dataDir, stateDir: path.join(root, 'state'), gateway }, 'import', 'everme', { concurrency: 2 });
      expect(gatewaySignatures(gateway, conversationFor(1))).toEqual(expectedTurns('twin', [0, 1, 2], { toolBytes: 25_000 }));
    } finally {
      await gateway.close();
    }
  });
});
