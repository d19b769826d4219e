/**
 * Runs the real `everme hook` (bin/run.js, built dist/) the way MiniMax Code does: JSON on stdin,
 * a reduced environment, nothing awaited but the hook process itself. The detached workers it
 * starts are waited for through their slot files, so no test leaks a worker into the next.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, appendFileSync } from 'node:fs';
import path from 'node:path';
import { makeSession, repoRoot, tempDir } from '../transcript-helpers.js';
import { ensureBuilt } from './cli.js';
import { hermeticEnv, type EnvExtra } from './hermetic-env.js';

export const BIN = path.join(repoRoot, 'bin', 'run.js');

export { ensureBuilt };

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * The reduced environment the host gives a hook, plus what a test points at temp dirs: the
 * hermetic env (support/hermetic-env.ts), HOME a fresh temp dir unless `vars` names one.
 */
export function hookEnv(vars: EnvExtra): NodeJS.ProcessEnv {
  return hermeticEnv(vars.HOME ?? tempDir(), vars);
}

/** Spawns `node bin/run.js <args>` with `input` on stdin (closed after writing, unless `keepOpen`). */
export function runCli(args: string[], input: string | Buffer, env: NodeJS.ProcessEnv, opts: { keepOpen?: boolean; timeoutMs?: number } = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    // The hook may stop reading early (oversized input): a broken pipe here is expected.
    child.stdin.on('error', () => undefined);
    // A hang detector: 20 s killed hooks that a machine at load 28 was merely slow to run.
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), ms: performance.now() - started });
    });
    if (opts.keepOpen) child.stdin.write(input);
    else child.stdin.end(input);
  });
}

export function runHookCli(input: string | Buffer, env: NodeJS.ProcessEnv, opts: { keepOpen?: boolean } = {}): Promise<CliRun> {
  return runCli(['hook'], input, env, opts);
}

/** The slot files of workers that still hold a session (`<state>/hook/<session>.worker`). */
export function activeWorkerSlots(stateDir: string): string[] {
  try {
    return readdirSync(path.join(stateDir, 'hook')).filter((n) => n.endsWith('.worker'));
  } catch {
    return [];
  }
}

/** Polls until every detached worker let go of its slot; throws when one outlives `timeoutMs`. */
export async function waitForWorkers(stateDir: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (activeWorkerSlots(stateDir).length > 0) {
    if (Date.now() > deadline) throw new Error(`hook workers still running after ${timeoutMs} ms: ${activeWorkerSlots(stateDir).join(', ')}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  // The slot goes before the process ends: give it a moment to exit.
  await new Promise((r) => setTimeout(r, 50));
}

export async function waitFor(check: () => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export function newSessionId(): string {
  return `mvs_${randomBytes(16).toString('hex')}`;
}

/** Today's UTC date directory, where the current runtime puts a session being written now. */
export function todayUtc(now = Date.now()): string {
  const d = new Date(now);
  return `${d.getUTCFullYear()}/${String(d.getUTCMonth() + 1).padStart(2, '0')}/${String(d.getUTCDate()).padStart(2, '0')}`;
}

export function hookStdin(sessionId: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    tool_name: 'bash',
    tool_input: { command: 'ls -1' },
    tool_use_id: 'call_fx_01',
    hook_event_name: 'PostToolUse',
    session_id: sessionId,
    turn_id: 'turn_x',
    transcript_path: null,
    cwd: '/home/demo/projects/widget',
    model: 'MiniMax-M3',
    permission_mode: 'default',
    ...extra,
  });
}

/**
 * One tool round of a `messages.jsonl` session, every message's text unique to `n`, so a test can
 * tell each delivered message apart: user → assistant calling bash → tool result → final answer.
 */
export function turnLines(n: number, base = Date.now()): string[] {
  const t = base + n * 10;
  const env = (id: string, message: unknown) => JSON.stringify({ message_id: `msg-${n}-${id}`, turn_id: `turn-${n}`, message });
  return [
    env('u', { role: 'user', content: [{ type: 'text', text: `question ${n}` }], timestamp: t }),
    env('a1', {
      role: 'assistant',
      content: [
        { type: 'text', text: `calling tool ${n}` },
        { type: 'toolCall', id: `call_${n}`, name: 'bash', arguments: { command: `echo ${n}` } },
      ],
      stopReason: 'toolUse',
      timestamp: t + 1,
    }),
    env('r', { role: 'toolResult', toolCallId: `call_${n}`, toolName: 'bash', content: [{ type: 'text', text: `output ${n}` }], isError: false, timestamp: t + 2 }),
    env('a2', { role: 'assistant', content: [{ type: 'text', text: `answer ${n}` }], stopReason: 'stop', timestamp: t + 3 }),
  ];
}

/** What `turnLines(n)` turns into on the gateway, by content. */
export function turnContents(n: number): string[] {
  return [`question ${n}`, `calling tool ${n}`, `output ${n}`, `answer ${n}`];
}

/** A current-era session in today's UTC directory with the given turns. */
export function writeSession(dataDir: string, sessionId: string, turns: number[], date = todayUtc()): string {
  return makeSession(dataDir, date, sessionId, {
    createdAtMs: Date.now(),
    files: { 'messages.jsonl': turns.flatMap((n) => turnLines(n)).join('\n') + (turns.length ? '\n' : '') },
  });
}

export function appendTurns(sessionDir: string, turns: number[]): void {
  appendFileSync(path.join(sessionDir, 'messages.jsonl'), turns.flatMap((n) => turnLines(n)).join('\n') + '\n');
}
