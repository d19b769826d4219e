/**
 * The plan phase on worker threads, and one plan for every sink: a worker that dies fails only the
 * session it was planning, and `show`, the gateway and the embedded store get the same plan.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { PlanPool } from '../src/engine/plan-pool.js';
import { PLAN_WORKER_NICE_STEP, uniformJob } from '../src/engine/plan-protocol.js';
import { openDatabase } from '../src/store/database.js';
import { ensureBuilt, repoRoot } from './support/cli.js';
import { cliEnv, envelopeOf, runCli } from './support/cli-process.js';
import { duplicateKeys, freshHarnessEnv, gatewaySignatures, runEngine, storedSignatures, type HarnessEnv } from './support/delivery-harness.js';
import { conversationFor, expectedTurns, sessionIdFor, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { startFakeGateway, type FakeGateway } from './support/fake-gateway.js';
import { discoverSessions } from '../src/transcript/discover.js';
import type { PlanPart } from '../src/sinks/sink.js';
import { collect } from './transcript-helpers.js';

let gateway: FakeGateway;
let env: HarnessEnv;

beforeAll(async () => {
  ensureBuilt();
  gateway = await startFakeGateway();
});
afterAll(async () => {
  await gateway.close();
});
beforeEach(() => {
  gateway.reset();
  env = freshHarnessEnv(gateway);
});

/** The built worker behind a wrapper that kills it where a session's marker file says (see the wrapper). */
const crashingWorker = new URL('./support/crashing-plan-worker.mjs', import.meta.url);
const realWorker = new URL(`file://${path.join(repoRoot, 'dist', 'src', 'engine', 'plan-worker.js')}`);

async function importWith(url: URL, sink: 'local' | 'everme') {
  const pool = new PlanPool(url, 2);
  try {
    return await runEngine(env, 'import', sink, { planner: pool, concurrency: 4 });
  } finally {
    await pool.close();
  }
}

describe('a plan worker that dies', () => {
  const SESSIONS = Array.from({ length: 12 }, (_, i) => i + 1);
  const TURNS = [0, 1, 2];

  it('before planning fails that session only; the others commit, and a re-run completes it exactly once', async () => {
    const dirs = SESSIONS.map((n) => writeMessagesSession(env.dataDir, n, turnsEnvelopes(`w${n}`, TURNS)));
    fs.writeFileSync(path.join(dirs[6]!, 'crash-plan-worker-at-start'), '');
    const first = await importWith(crashingWorker, 'local');
    expect(first.sessions).toMatchObject({ scanned: 12, delivered: 11, failed: 1 });
    expect(first.failures).toEqual([{ sessionId: sessionIdFor(7), type: 'internal', message: expect.stringContaining('plan worker') as unknown }]);
    expect(storedSignatures(env.stateDir, conversationFor(7))).toEqual([]);

    fs.rmSync(path.join(dirs[6]!, 'crash-plan-worker-at-start'));
    const second = await importWith(realWorker, 'local');
    expect(second.sessions).toMatchObject({ delivered: 1, unchanged: 11, failed: 0 });
    for (const n of SESSIONS) expect(storedSignatures(env.stateDir, conversationFor(n))).toEqual(expectedTurns(`w${n}`, TURNS));
    expect(duplicateKeys(env.stateDir)).toEqual([]);
  });

  it('after a part was delivered to both sinks fails that session only; the re-run sends each sink only what it lacks', async () => {
    // 700 turns: more messages than one part carries, so the session is delivered in parts.
    const bigTurns = Array.from({ length: 700 }, (_, i) => i);
    const dirs = [1, 2, 3].map((n) => writeMessagesSession(env.dataDir, n, turnsEnvelopes(`p${n}`, n === 2 ? bigTurns : TURNS)));
    fs.writeFileSync(path.join(dirs[1]!, 'crash-plan-worker-after-part'), '');
    const first = await importWith(crashingWorker, 'everme');
    expect(first.sessions).toMatchObject({ delivered: 2, failed: 1 });
    expect(first.failures).toEqual([expect.objectContaining({ sessionId: sessionIdFor(2), type: 'internal' })]);
    // The gateway acknowledged the first part before the worker died; the store holds none of it.
    const sentBefore = gateway.messagesFor(conversationFor(2)).length;
    expect(sentBefore).toBeGreaterThan(0);
    expect(storedSignatures(env.stateDir, conversationFor(2))).toEqual([]);

    fs.rmSync(path.join(dirs[1]!, 'crash-plan-worker-after-part'));
    const second = await importWith(realWorker, 'everme');
    expect(second.sessions).toMatchObject({ delivered: 1, unchanged: 2, failed: 0 });
    expect(second.sinks[0]!.messages).toBe(700 * 4 - sentBefore);
    expect(second.sinks[1]!.messages).toBe(700 * 4);
    for (const n of [1, 2, 3]) {
      const expected = expectedTurns(`p${n}`, n === 2 ? bigTurns : TURNS);
      expect(gatewaySignatures(gateway, conversationFor(n))).toEqual(expected);
      expect(storedSignatures(env.stateDir, conversationFor(n))).toEqual(expected);
    }
    expect(duplicateKeys(env.stateDir)).toEqual([]);
  });
});

describe('one plan for every sink', () => {
  it('`show` previews exactly what the gateway receives, and the store keeps the same messages with the trimmed tool results whole', async () => {
    // Tool output large enough that batching trims it, and a credential that redaction masks.
    const secret = 'sk-ant-api03-' + 'Q'.repeat(90) + 'AA';
    writeMessagesSession(env.dataDir, 1, turnsEnvelopes('plan', [0, 1, 2, 3, 4, 5], { toolBytes: 90_000, question: `key ${secret}` }));
    const root = path.dirname(env.dataDir);
    const cliEnvironment = cliEnv(root, { EVERME_STATE_DIR: env.stateDir, EVERME_API_KEY: gateway.token, EVERME_API_BASE: gateway.url });
    const imported = await runCli(['import', '--since', '2026-09-01', '--data-dir', env.dataDir, '--json'], cliEnvironment);
    expect(imported.code, imported.stderr).toBe(0);
    const shown = envelopeOf(await runCli(['show', sessionIdFor(1), '--data-dir', env.dataDir, '--json'], cliEnvironment)).data as {
      requests: Array<{ messages: number; flush: boolean }>;
      messages: Array<Record<string, unknown>>;
    };
    expect(JSON.stringify(shown)).not.toContain(secret);
    expect(JSON.stringify(shown)).toContain('bytes cut]');

    const sent = gateway.requestsTo('/mem/agent-memory').map((r) => r.body as { flush: boolean; messages: Array<Record<string, unknown>> });
    expect(sent.map((body) => ({ messages: body.messages.length, flush: body.flush }))).toEqual(shown.requests);
    expect(sent.flatMap((body) => body.messages)).toEqual(shown.messages);

    // The store keeps the same messages, but a tool result the request limit trimmed it keeps whole.
    const exported = await runCli(['export', '--data-dir', env.dataDir], cliEnvironment);
    const stored = exported.stdout.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { message: Record<string, unknown> }).message);
    expect(stored).toHaveLength(shown.messages.length);
    let trimmed = 0;
    for (const [i, message] of shown.messages.entries()) {
      const cut = typeof message.content === 'string' ? /\n…\[everme: \d+ bytes cut\]…\n/u.exec(message.content) : null;
      if (!cut) {
        expect(stored[i]).toEqual(message);
        continue;
      }
      trimmed++;
      const content = stored[i]!.content as string;
      expect({ ...stored[i], content: '' }).toEqual({ ...message, content: '' });
      expect(content).not.toContain('bytes cut]');
      expect(content.length).toBeGreaterThan(90_000);
      expect(content.startsWith((message.content as string).slice(0, cut.index))).toBe(true);
      expect(content.endsWith((message.content as string).slice(cut.index + cut[0].length))).toBe(true);
    }
    expect(trimmed).toBe(6);
  });

  it('keeps a trimmed tool result whole in the store: `get` shows the lines the request cut from its middle', async () => {
    // Ten results of 8 KB in one turn: 80 KB, over one request's 64 KiB, so the request carries each cut to 4 KiB.
    const turns = Array.from({ length: 10 }, (_, i) => i);
    const envelopes = turnsEnvelopes('mid', turns, { toolBytes: 8_000 }).map((envelope) => ({ ...envelope, turn_id: 'turn_mid_all' }));
    writeMessagesSession(env.dataDir, 1, envelopes.filter((envelope) => envelope.message.role !== 'user' || envelope.message_id === 'msg-mid-0-0'));
    const root = path.dirname(env.dataDir);
    const cliEnvironment = cliEnv(root, { EVERME_STATE_DIR: env.stateDir });
    const imported = await runCli(['import', '--since', '2026-09-01', '--sink', 'local', '--data-dir', env.dataDir, '--json'], cliEnvironment);
    expect(imported.code, imported.stderr).toBe(0);
    const shown = envelopeOf(await runCli(['show', sessionIdFor(1), '--data-dir', env.dataDir, '--json'], cliEnvironment)).data as { messages: Array<{ content?: string }> };
    // `alphamid3280` is word 280 of turn 3's output: past the 2 KiB head a 4 KiB cut keeps.
    expect(shown.messages.filter((message) => message.content?.includes('bytes cut]'))).toHaveLength(10);
    expect(JSON.stringify(shown)).not.toContain('alphamid3280 ');

    // The index sees a tool result's opening and end (searchable-text.ts): found by its first word, opened whole.
    const found = envelopeOf(await runCli(['search', 'alphamid30', '--data-dir', env.dataDir, '--json'], cliEnvironment)).data as { results: Array<{ id: string }> };
    expect(found.results).toHaveLength(1);
    const opened = await runCli(['get', found.results[0]!.id, '--data-dir', env.dataDir], cliEnvironment);
    expect(opened.code, opened.stderr).toBe(0);
    expect(opened.stdout).toContain('alphamid3280 ');
    expect(opened.stdout).not.toContain('bytes cut]');
  });
});

describe('the store a pooled import leaves', () => {
  it('is the store an import planned on this thread leaves', async () => {
    for (const n of [1, 2, 3, 4, 5]) writeMessagesSession(env.dataDir, n, turnsEnvelopes(`s${n}`, [0, 1, 2], { toolBytes: 30_000 }));
    await importWith(realWorker, 'local');
    const pooled = dumpMessages(env.stateDir);
    const inline = { ...env, stateDir: `${env.stateDir}-inline` };
    await runEngine(inline, 'import', 'local');
    expect(pooled.length).toBeGreaterThan(0);
    expect(dumpMessages(inline.stateDir)).toEqual(pooled);
  });
});

describe('the plan pool', () => {
  it('acks a part only while its plan runs: a plan that ended meanwhile is not woken for nothing', async () => {
    writeMessagesSession(env.dataDir, 1, turnsEnvelopes('one', [0, 1]));
    // Thousands of turns: a plan of several parts (2,500 messages at most each), which waits for its acks (at most two ahead).
    writeMessagesSession(env.dataDir, 2, turnsEnvelopes('big', Array.from({ length: 2000 }, (_, i) => i)), '09-00-00-000');
    const [small, big] = await collect(discoverSessions(env.dataDir, { onInvalidManifest: () => undefined }));
    const posted = vi.spyOn(Worker.prototype, 'postMessage');
    const acks = (): number => posted.mock.calls.filter(([message]) => (message as { kind: string }).kind === 'ack').length;
    const pool = new PlanPool(realWorker, 1);
    try {
      const target = { delivered: new Set<string>(), requests: true, encoded: false, rows: false };
      const slowly = (ms: number) => async (_target: number, _part: PlanPart) => new Promise<void>((resolve) => setTimeout(resolve, ms));
      // The one part is delivered slowly: its plan has ended before the delivery does.
      expect((await pool.plan({ session: small!, targets: [target] }, slowly(200))).status).toBe('planned');
      expect(acks()).toBe(0);
      let parts = 0;
      const result = await pool.plan({ session: big!, targets: [target] }, async (t, part) => {
        parts += 1;
        await slowly(20)(t, part);
      });
      expect(result.status).toBe('planned');
      expect(parts).toBeGreaterThanOrEqual(3);
      expect(acks()).toBeGreaterThanOrEqual(parts - 2);
    } finally {
      posted.mockRestore();
      await pool.close();
    }
  });
});

describe('a plan worker\'s priority', () => {
  /** Each thread of this process and its nice value (field 19 of its stat, after the command's closing parenthesis). */
  function threadNices(): Map<number, number> {
    const nices = new Map<number, number>();
    for (const tid of fs.readdirSync('/proc/self/task')) {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      nices.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    }
    return nices;
  }

  it.runIf(process.platform === 'linux')('is PLAN_WORKER_NICE_STEP below the thread that started it, and no other thread of the process moves', async () => {
    writeMessagesSession(env.dataDir, 1, turnsEnvelopes('one', [0, 1]));
    writeMessagesSession(env.dataDir, 2, turnsEnvelopes('two', [0, 1]), '09-00-00-000');
    const sessions = await collect(discoverSessions(env.dataDir, { onInvalidManifest: () => undefined }));
    const before = threadNices();
    const own = Number(fs.readlinkSync('/proc/thread-self').split('/').at(-1));
    const base = before.get(own)!;
    const pool = new PlanPool(realWorker, 2);
    try {
      const target = { delivered: new Set<string>(), requests: true, encoded: false, rows: false };
      // Both at once: two workers.
      const results = await Promise.all(sessions.map((session) => pool.plan({ session, targets: [target] }, async () => undefined)));
      expect(results.map((r) => r.status)).toEqual(['planned', 'planned']);
      const during = threadNices();
      const started = [...during].filter(([tid]) => !before.has(tid));
      const lowered = started.filter(([, nice]) => nice === Math.min(19, base + PLAN_WORKER_NICE_STEP));
      expect(lowered).toHaveLength(2);
      // Every thread that was there before keeps its priority (this one included).
      for (const [tid, nice] of before) if (during.has(tid)) expect(during.get(tid)).toBe(nice);
    } finally {
      await pool.close();
    }
  });
});

function dumpMessages(stateDir: string): unknown[] {
  const db = openDatabase(stateDir, { readonly: true });
  try {
    return db
      .prepare('SELECT conversation_id, msg_key, role, timestamp, content, tool_calls_json, tool_call_id, turn_complete FROM messages ORDER BY conversation_id, id')
      .all();
  } finally {
    db.close();
  }
}

describe('the jobs a plan worker plans', () => {
  it('all have the same fields in the same order, whatever the main thread left out (one hidden class for planSession)', () => {
    const target = { delivered: new Set<string>(), requests: false, encoded: false, rows: true };
    const bare = uniformJob({ session: { sessionId: 's1', dir: '/d/s1', createdAtMs: 1 }, targets: [target] });
    const full = uniformJob({
      session: { sessionId: 's2', dir: '/d/s2', createdAtMs: 2, updatedAtMs: 3 },
      targets: [target],
      fingerprint: { file: '/d/s2/messages.jsonl', size: 10, mtimeMs: 4, ino: 7, headHash: 'h' },
      recordedWorkspace: '/w',
      decidedWorkspace: '/w2',
    });
    const reordered = uniformJob({ decidedWorkspace: '/w3', targets: [target], session: { createdAtMs: 5, dir: '/d/s3', sessionId: 's3' } });
    for (const job of [full, reordered]) {
      expect(Object.keys(job)).toEqual(Object.keys(bare));
      expect(Object.keys(job.session)).toEqual(Object.keys(bare.session));
    }
    expect(Object.keys(bare)).toEqual(['session', 'targets', 'fingerprint', 'recordedWorkspace', 'decidedWorkspace']);
    // Nothing is lost or changed on the way.
    expect(full).toMatchObject({ recordedWorkspace: '/w', decidedWorkspace: '/w2', fingerprint: { ino: 7 }, session: { sessionId: 's2', updatedAtMs: 3 } });
    expect(reordered.decidedWorkspace).toBe('/w3');
    expect(reordered.targets[0]).toBe(target);
  });
});
