import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readHookEvents } from '../src/hook/hook-events.js';
import { startFakeGateway, type FakeGateway } from './support/fake-gateway.js';
import {
  appendTurns,
  BIN,
  ensureBuilt,
  hookEnv,
  hookStdin,
  newSessionId,
  runCli,
  runHookCli,
  turnContents,
  todayUtc,
  turnLines,
  waitFor,
  waitForWorkers,
  writeSession,
  type CliRun,
} from './support/hook-harness.js';
import { storeCount } from './support/store-count.js';
import { makeSession, tempDir } from './transcript-helpers.js';

const INTERVAL_MS = '300';

let gw: FakeGateway;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  ensureBuilt();
  gw = await startFakeGateway();
}, 240_000);

afterEach(async () => {
  // Workers first, then their directories: nothing a test started outlives it.
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await gw.setDown(false);
  gw.reset();
});

afterAll(async () => {
  await gw?.close();
});

/** A data dir and a state dir in temp, removed after the test once its workers are gone. */
function dirs(): { dataDir: string; stateDir: string } {
  const dataDir = tempDir();
  const stateDir = tempDir();
  cleanups.push(async () => {
    await waitForWorkers(stateDir);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
  });
  return { dataDir, stateDir };
}

function gatewayEnv(dataDir: string, stateDir: string): NodeJS.ProcessEnv {
  return hookEnv({
    HOME: dataDir,
    MINIMAX_DATA_DIR: dataDir,
    EVERME_STATE_DIR: stateDir,
    EVERME_MINIMAX_SYNC_INTERVAL_MS: INTERVAL_MS,
    EVERME_API_KEY: gw.token,
    EVERME_API_BASE: gw.url,
  });
}

function expectFailOpen(run: CliRun): void {
  expect(run.code).toBe(0);
  expect(run.stdout).toBe('');
}

const contentsOf = (sessionId: string): string[] => gw.messagesFor(`minimaxcode-${sessionId}`).map((m) => m.content ?? '');
const sorted = (values: string[]): string[] => [...values].sort();
const agentMemoryBodies = (): Array<{ flush?: unknown }> => gw.requestsTo('/mem/agent-memory').map((r) => r.body as { flush?: unknown });

describe('everme hook (the real CLI, fail-open)', () => {
  it('exits 0 silently for garbage, empty, oversized, session-less and unknown-session input, starting no worker', async () => {
    const { dataDir, stateDir } = dirs();
    const known = newSessionId();
    writeSession(dataDir, known, [1]);
    const env = gatewayEnv(dataDir, stateDir);
    const huge = JSON.stringify({ session_id: known, hook_event_name: 'PostToolUse', pad: 'x'.repeat(1024 * 1024 + 16) });
    const inputs: Array<[string, string]> = [
      ['garbage', '{"session_id": "mvs_'],
      ['garbage', '[1,2,3]'],
      ['empty', ''],
      ['empty', '  \n'],
      ['too_large', huge],
      ['no_session', JSON.stringify({ tool_name: 'bash', session_id: '../../etc/passwd' })],
      ['unknown_session', hookStdin(newSessionId())],
    ];
    const runs = await Promise.all(inputs.map(([, input]) => runHookCli(input, env)));
    for (const run of runs) {
      expectFailOpen(run);
      expect(run.stderr).toBe('');
    }
    const events = readHookEvents(stateDir);
    expect(events.map((e) => e.outcome)).toEqual(inputs.map(() => 'ignored'));
    expect(sorted(events.map((e) => e.reason ?? ''))).toEqual(sorted(inputs.map(([reason]) => reason)));
    // Ignored means ignored: no worker was started, so no state database was even opened.
    expect(existsSync(path.join(stateDir, 'everme.db'))).toBe(false);
    expect(gw.messagesFor(`minimaxcode-${known}`)).toEqual([]);
  });

  it('delivers every message exactly once when 20 hooks fire at once on one session, twice over, and never flushes', async () => {
    const { dataDir, stateDir } = dirs();
    const sessionId = newSessionId();
    const sessionDir = writeSession(dataDir, sessionId, [1, 2]);
    // 20 hook processes at once on a loaded machine can each outlast the 2.5 s watchdog, which
    // exits without recording an event; the watchdog is not what this test is about.
    const env = { ...gatewayEnv(dataDir, stateDir), EVERME_HOOK_WATCHDOG_MS: '60000' };
    const burst = async (): Promise<CliRun[]> => Promise.all(Array.from({ length: 20 }, () => runHookCli(hookStdin(sessionId), env)));

    const first = await burst();
    appendTurns(sessionDir, [3]);
    const second = await burst();
    for (const run of [...first, ...second]) {
      expectFailOpen(run);
      expect(run.stderr).toBe('');
    }
    await waitForWorkers(stateDir);

    const contents = contentsOf(sessionId);
    expect(sorted(contents)).toEqual(sorted([1, 2, 3].flatMap(turnContents)));
    expect(new Set(contents).size).toBe(contents.length);
    expect(gw.flushes).toEqual([]);
    expect(agentMemoryBodies().every((b) => b.flush === false)).toBe(true);

    const events = readHookEvents(stateDir);
    expect(events).toHaveLength(40);
    const claimed = events.filter((e) => e.outcome === 'claimed').length;
    expect(claimed).toBeGreaterThanOrEqual(1);
    expect(claimed + events.filter((e) => e.outcome === 'debounced').length).toBe(40);
    for (const e of events) expect(e.ms).toBeGreaterThan(0);

    // One worker per session at a time: the runs the workers recorded never overlap.
    const db = new Database(path.join(stateDir, 'everme.db'), { readonly: true });
    const runs = db.prepare("SELECT started_at_ms AS s, finished_at_ms AS f FROM runs WHERE kind = 'hook' ORDER BY id").all() as Array<{ s: number; f: number }>;
    db.close();
    expect(runs.length).toBeGreaterThanOrEqual(1);
    for (let i = 1; i < runs.length; i++) expect(runs[i]!.s).toBeGreaterThanOrEqual(runs[i - 1]!.f);
    // 40 hook processes and their workers: the time is the machine's, not what is tested.
  }, 120_000);

  it('delivers what the agent writes after the last hook: the worker looks once more after the interval', async () => {
    const { dataDir, stateDir } = dirs();
    const sessionId = newSessionId();
    const sessionDir = writeSession(dataDir, sessionId, [1]);
    // The first delivery is held at the gateway, so turn 2 is surely written while the worker's
    // first run is under way and after it read the file.
    gw.failNext({ kind: 'delay', ms: 400, path: '/mem/agent-memory' });
    const run = await runHookCli(hookStdin(sessionId), gatewayEnv(dataDir, stateDir));
    expectFailOpen(run);
    await waitFor(() => gw.requestsTo('/mem/agent-memory').some((r) => JSON.stringify(r.body).includes(sessionId)), 10_000, 'the first delivery');
    appendTurns(sessionDir, [2]);
    await waitForWorkers(stateDir);

    expect(sorted(contentsOf(sessionId))).toEqual(sorted([1, 2].flatMap(turnContents)));
    // Turn 2 came in a later request, from the same (single) worker, with no hook in between.
    const bodies = gw.requestsTo('/mem/agent-memory').map((r) => JSON.stringify(r.body)).filter((b) => b.includes(sessionId));
    expect(bodies.length).toBeGreaterThanOrEqual(2);
    expect(bodies[0]).not.toContain('question 2');
    expect(readHookEvents(stateDir).map((e) => e.outcome)).toEqual(['claimed']);
    expect(gw.flushes).toEqual([]);
    expect(agentMemoryBodies().every((b) => b.flush === false)).toBe(true);
  });

  it('after a gateway outage, the next hook delivers what was missed, and so does sync, each exactly once', async () => {
    const { dataDir, stateDir } = dirs();
    const sessionId = newSessionId();
    const sessionDir = writeSession(dataDir, sessionId, [1]);
    const env = gatewayEnv(dataDir, stateDir);

    await gw.setDown(true);
    expectFailOpen(await runHookCli(hookStdin(sessionId), env));
    await waitForWorkers(stateDir);
    await gw.setDown(false);
    expect(contentsOf(sessionId)).toEqual([]);

    const next = await runHookCli(hookStdin(sessionId), env);
    expectFailOpen(next);
    expect(next.stderr).toBe('');
    await waitForWorkers(stateDir);
    expect(sorted(contentsOf(sessionId))).toEqual(sorted(turnContents(1)));

    await gw.setDown(true);
    appendTurns(sessionDir, [2]);
    expectFailOpen(await runHookCli(hookStdin(sessionId), env));
    await waitForWorkers(stateDir);
    await gw.setDown(false);
    expect(gw.flushes).toEqual([]);

    const sync = await runCli(['sync', '--json'], '', env);
    expect(sync.code, sync.stderr).toBe(0);
    const contents = contentsOf(sessionId);
    expect(sorted(contents)).toEqual(sorted([1, 2].flatMap(turnContents)));
    expect(new Set(contents).size).toBe(contents.length);
  });

  it('prints one short redacted diagnostic, once, after a session with a malformed tool call was processed', async () => {
    const { dataDir, stateDir } = dirs();
    const sessionId = newSessionId();
    const secret = 'evt_a1b2c3d4e5f6a7b8c9d0SECRETTOKEN';
    const malformed = JSON.stringify({
      message_id: 'msg-bad',
      turn_id: 'turn-bad',
      message: {
        role: 'assistant',
        content: [{ type: 'text', text: 'trying' }, { type: 'toolCall', name: 'bash', arguments: { command: `curl -H "Authorization: Bearer ${secret}"` } }],
        stopReason: 'toolUse',
        timestamp: Date.now(),
      },
    });
    const sessionDir = makeSession(dataDir, todayUtc(), sessionId, {
      createdAtMs: Date.now(),
      files: { 'messages.jsonl': [...turnLines(1), malformed].join('\n') + '\n' },
    });
    // The local sink (no key anywhere): the diagnostic does not depend on where memories go.
    const env = hookEnv({ HOME: dataDir, MINIMAX_DATA_DIR: dataDir, EVERME_STATE_DIR: stateDir, EVERME_MINIMAX_SYNC_INTERVAL_MS: INTERVAL_MS });

    const first = await runHookCli(hookStdin(sessionId), env);
    expectFailOpen(first);
    expect(first.stderr).toBe('');
    await waitForWorkers(stateDir);

    const second = await runHookCli(hookStdin(sessionId), env);
    expectFailOpen(second);
    const lines = second.stderr.split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/tool_call_missing_id×1/);
    expect(lines[0]).toContain(sessionId);
    expect(lines[0]!.length).toBeLessThanOrEqual(200);
    expect(second.stderr).not.toContain('SECRETTOKEN');
    expect(second.stderr).not.toContain('curl');
    await waitForWorkers(stateDir);

    // New messages make the worker reread the session and meet the same record again: not news.
    appendTurns(sessionDir, [2]);
    const third = await runHookCli(hookStdin(sessionId), env);
    await waitForWorkers(stateDir);
    const fourth = await runHookCli(hookStdin(sessionId), env);
    await waitForWorkers(stateDir);
    expect(third.stderr).toBe('');
    expect(fourth.stderr).toBe('');

    // And it is in the report like any other warning.
    const report = await runCli(['report', '--json'], '', env);
    expect(report.code, report.stderr).toBe(0);
    const envelope = JSON.parse(report.stdout) as { ok: boolean };
    expect(envelope.ok).toBe(true);
    expect(report.stdout).toContain('tool_call_missing_id');
    expect(report.stdout).toContain(sessionId);
  });

  it('takes its configuration from <data>/everme.env and finds a session in an old date directory', async () => {
    const { dataDir, stateDir } = dirs();
    const sessionId = newSessionId();
    const old = new Date(Date.now() - 40 * 86_400_000);
    const date = `${old.getUTCFullYear()}/${String(old.getUTCMonth() + 1).padStart(2, '0')}/${String(old.getUTCDate()).padStart(2, '0')}`;
    const sessionDir = writeSession(dataDir, sessionId, [1], date);
    writeFileSync(
      path.join(dataDir, 'everme.env'),
      [`EVERME_API_KEY=${gw.token}`, `EVERME_API_BASE=${gw.url}`, `EVERME_STATE_DIR=${stateDir}`, `EVERME_MINIMAX_SYNC_INTERVAL_MS=${INTERVAL_MS}`].join('\n') + '\n',
    );
    // Only what the host passes a hook: no everme variable in the environment, and the data dir
    // under its older name.
    const env = hookEnv({ HOME: dataDir, MAVIS_DATA_DIR: dataDir, EVERME_API_BASE: null });
    const run = await runHookCli(hookStdin(sessionId), env);
    expectFailOpen(run);
    await waitForWorkers(stateDir);
    expect(sorted(contentsOf(sessionId))).toEqual(sorted(turnContents(1)));
    expect(readFileSync(path.join(stateDir, 'hook', `${sessionId}.dir`), 'utf8')).toBe(sessionDir);
    expect(readHookEvents(stateDir).map((e) => e.outcome)).toEqual(['claimed']);
  });

  it('follows the newest copy of a session, not a restored older copy in a later date directory', async () => {
    const { dataDir, stateDir } = dirs();
    const sessionId = newSessionId();
    // The live session in an old date directory; a restored backup (older manifest, turn 1 only)
    // in today's, which the hook's search by name finds first.
    const live = writeSession(dataDir, sessionId, [1, 2], '2026/01/05');
    makeSession(dataDir, todayUtc(), sessionId, { createdAtMs: Date.now() - 60_000, files: { 'messages.jsonl': turnLines(1).join('\n') + '\n' } });
    const env = gatewayEnv(dataDir, stateDir);
    const stored = () => storeCount(stateDir, 'SELECT count(*) FROM messages');

    expectFailOpen(await runHookCli(hookStdin(sessionId, { hook_event_name: 'Stop' }), env));
    await waitForWorkers(stateDir);
    expect(sorted(contentsOf(sessionId))).toEqual(sorted([1, 2].flatMap(turnContents)));
    expect(readFileSync(path.join(stateDir, 'hook', `${sessionId}.dir`), 'utf8')).toBe(live);

    // The live copy goes on; the next hook still reads it, and nothing stored is taken for gone.
    appendTurns(live, [3]);
    expectFailOpen(await runHookCli(hookStdin(sessionId, { hook_event_name: 'Stop' }), env));
    await waitForWorkers(stateDir);
    expect(sorted(contentsOf(sessionId))).toEqual(sorted([1, 2, 3].flatMap(turnContents)));
    expect(stored()).toBe(12);
  });

  it('fails open with one short redacted line when its state directory cannot be written', async () => {
    const { dataDir, stateDir } = dirs();
    const sessionId = newSessionId();
    writeSession(dataDir, sessionId, [1]);
    // A state "directory" that is a file, on a path that carries a token-looking name.
    const blocked = path.join(stateDir, 'evt_abcd1234deadbeefSECRET');
    writeFileSync(blocked, 'not a directory');
    const run = await runHookCli(hookStdin(sessionId), { ...gatewayEnv(dataDir, stateDir), EVERME_STATE_DIR: blocked });
    expectFailOpen(run);
    const lines = run.stderr.split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^everme hook: /);
    expect(lines[0]!.length).toBeLessThanOrEqual(200);
    expect(run.stderr).toContain('evt_abcd_REDACTED');
    expect(run.stderr).not.toContain('SECRET');
  });

  it('fails open even when the runtime it should load is missing', () => {
    const { dataDir, stateDir } = dirs();
    const bare = path.join(stateDir, 'broken-install');
    mkdirSync(path.join(bare, 'bin'), { recursive: true });
    // bin/ as installed (run.js and the package.json that makes it CommonJS), dist/ gone.
    copyFileSync(BIN, path.join(bare, 'bin', 'run.js'));
    copyFileSync(path.join(path.dirname(BIN), 'package.json'), path.join(bare, 'bin', 'package.json'));
    writeFileSync(path.join(bare, 'package.json'), '{"type":"module"}');
    const run = spawnSync(process.execPath, [path.join(bare, 'bin', 'run.js'), 'hook'], { input: hookStdin(newSessionId()), env: gatewayEnv(dataDir, stateDir), encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr.split('\n').filter(Boolean)).toEqual(['everme hook: the everme runtime could not start; run `everme install` again']);
  });

  it('gives up within the watchdog, still exiting 0, when the host never closes stdin', async () => {
    const { dataDir, stateDir } = dirs();
    mkdirSync(path.join(dataDir, 'v2', 'sessions'), { recursive: true });
    // The watchdog at its default (2.5 s). Without it the hook would wait for stdin until the
    // harness kills it at 60 s (no exit code): 15 s tells the two apart on a loaded machine too.
    const run = await runHookCli('{"session_id":', { ...gatewayEnv(dataDir, stateDir), EVERME_HOOK_WATCHDOG_MS: undefined }, { keepOpen: true });
    expectFailOpen(run);
    expect(run.ms).toBeLessThan(15_000);
  });
});
