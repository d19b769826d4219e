import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readHookEvents } from '../src/hook/hook-events.js';
import { conversationIdFor } from '../src/core/conversation-id.js';
import { percentile } from './stats.js';

/**
 * The plugin route's two latency-critical paths, on the bench store the cold import built:
 * SessionStart (recall printed before the session's first turn) and Stop (the finished turn
 * delivered without waiting for the debounce interval).
 */

const fmt = (n: number) => n.toFixed(1);

/** A bench env: the local store, never a key the developer's shell may hold. */
function benchEnv(dataDir: string, stateDir: string): NodeJS.ProcessEnv {
  return { ...process.env, MINIMAX_DATA_DIR: dataDir, EVERME_STATE_DIR: stateDir, EVERME_API_KEY: '', EVERME_RECALL_CHARS: '' };
}

/**
 * SessionStart for a workspace the corpus has conversations in, interleaved with bare node starts.
 * Reported: the hook's own time (the event log's `ms`, from entry to exit) and the process wall time.
 */
export function benchSessionStart(repo: string, corpusRoot: string, stateDir: string, runs = 40): string[] {
  const env = benchEnv(corpusRoot, stateDir);
  const input = JSON.stringify({
    hook_event_name: 'SessionStart',
    source: 'startup',
    session_id: 'mvs_5e55105ea7a7a7a7a7a7a7a7a7a7a7a7',
    turn_id: 'turn_bench',
    cwd: '/home/dev/project-3',
    transcript_path: '/tmp/minimax-plugin-hooks/transcripts/bench.compatible.jsonl',
    model: 'MiniMax-M3',
    permission_mode: 'default',
  });
  const seenBefore = readHookEvents(stateDir).length;
  const bare: number[] = [];
  const wall: number[] = [];
  let printed = 0;
  for (let i = 0; i < runs; i++) {
    let t0 = performance.now();
    spawnSync(process.execPath, ['-e', '0']);
    bare.push(performance.now() - t0);
    t0 = performance.now();
    const run = spawnSync(process.execPath, [path.join(repo, 'bin', 'run.js'), 'hook', '--route=plugin'], { input, env, encoding: 'utf8' });
    wall.push(performance.now() - t0);
    printed = run.stdout.length;
  }
  const inside = readHookEvents(stateDir)
    .slice(seenBefore)
    .filter((e) => e.event === 'SessionStart')
    .map((e) => e.ms);
  const ratio = percentile(wall, 50) / percentile(bare, 50);
  return [
    `SessionStart recall (${runs} runs, ${printed} chars printed): in hook p50 ${fmt(percentile(inside, 50))} ms  p95 ${fmt(percentile(inside, 95))} ms (target p95 ≤ 150 ms)`,
    `SessionStart wall time:     p50 ${fmt(percentile(wall, 50))} ms  p95 ${fmt(percentile(wall, 95))} ms vs node -e 0 p50 ${fmt(percentile(bare, 50))} ms  p95 ${fmt(percentile(bare, 95))} ms  ratio ${ratio.toFixed(2)}x (target ≤ 2x)`,
  ];
}

/**
 * Whether this session's worker still holds its slot. Only this session's: a worker left waiting
 * out its interval by an earlier bench step (the PreToolUse timing) must not stall every turn here.
 */
function workerRunning(stateDir: string, sessionId: string): boolean {
  try {
    return readdirSync(path.join(stateDir, 'hook')).includes(`${sessionId}.worker`);
  } catch {
    return false;
  }
}

async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 5));
  }
  return true;
}

/**
 * Stop to delivered: a session grows by one turn without tool calls, Stop fires, and the clock runs
 * until the turn is committed in the store (polled on a read-only connection). The worker of one
 * turn exits before the next turn, as when the user reads the answer before typing again.
 */
export async function benchStopToDelivered(repo: string, stateDir: string, turns = 10): Promise<string[]> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'everme-bench-stop-'));
  try {
    const sessionId = 'mvs_5705705705705705705705705705705a';
    const now = new Date();
    const day = `${now.getUTCFullYear()}/${String(now.getUTCMonth() + 1).padStart(2, '0')}/${String(now.getUTCDate()).padStart(2, '0')}`;
    const dir = path.join(dataDir, 'v2', 'sessions', ...day.split('/'), `10-00-00-000-session_${Buffer.from(sessionId).toString('base64url')}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      path.join(dir, 'manifest.json'),
      JSON.stringify({ schemaVersion: 1, sessionId, createdAtMs: Date.now(), updatedAtMs: Date.now(), source: 'local-runtime', layout: 'v2-final-dated-session', paths: { sessionDir: dir } }),
    );
    writeFileSync(path.join(dir, 'messages.jsonl'), '');
    // The default 60 s interval: Stop must not wait for it.
    const env = { ...benchEnv(dataDir, stateDir), EVERME_MINIMAX_SYNC_INTERVAL_MS: '' };
    const db = new Database(path.join(stateDir, 'everme.db'), { readonly: true });
    const count = db.prepare<[string], number>('SELECT count(*) FROM messages WHERE conversation_id = ?').pluck();
    const times: number[] = [];
    let missed = 0;
    try {
      for (let n = 1; n <= turns; n++) {
        const t = Date.now();
        const line = (id: string, message: unknown) => JSON.stringify({ message_id: `msg-${n}-${id}`, turn_id: `turn-${n}`, message });
        appendFileSync(
          path.join(dir, 'messages.jsonl'),
          `${line('u', { role: 'user', content: [{ type: 'text', text: `bench question ${n}` }], timestamp: t })}\n${line('a', { role: 'assistant', content: [{ type: 'text', text: `bench answer ${n}` }], stopReason: 'stop', timestamp: t + 1 })}\n`,
        );
        const input = JSON.stringify({ hook_event_name: 'Stop', session_id: sessionId, turn_id: `turn-${n}`, stop_hook_active: false, last_assistant_message: `bench answer ${n}`, cwd: '/home/dev/bench', transcript_path: null, model: 'MiniMax-M3', permission_mode: 'default' });
        const t0 = performance.now();
        spawnSync(process.execPath, [path.join(repo, 'bin', 'run.js'), 'hook', '--route=plugin'], { input, env });
        if (await until(() => count.get(conversationIdFor(sessionId)) === n * 2, 30_000)) times.push(performance.now() - t0);
        else missed++;
        await until(() => !workerRunning(stateDir, sessionId), 30_000);
      }
    } finally {
      db.close();
    }
    return [
      `Stop to delivered (${turns} turns, local store): p50 ${fmt(percentile(times, 50))} ms  p95 ${fmt(percentile(times, 95))} ms  max ${fmt(Math.max(...times))} ms (target ≤ 5000 ms)${missed ? `  MISSED ${missed}` : ''}`,
    ];
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
