/**
 * Spawning the built CLI as a child process without blocking this process's event loop (the fake
 * gateway answers from here), with an environment that holds only what the test gives it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cliEntry, ensureBuilt } from './cli.js';
import { hermeticEnv, type EnvExtra } from './hermetic-env.js';

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliProcess {
  child: ChildProcess;
  done: Promise<CliResult>;
}

/** The hermetic environment (support/hermetic-env.ts) with `home` as HOME. */
export function cliEnv(home: string, extra: EnvExtra = {}): NodeJS.ProcessEnv {
  return hermeticEnv(home, extra);
}

export function startCli(args: string[], env: NodeJS.ProcessEnv): CliProcess {
  ensureBuilt();
  const child = spawn(process.execPath, [cliEntry, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const done = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, done };
}

/**
 * `spawnSync`'s result without blocking this process: a test file that runs many commands in a row
 * with spawnSync blocks vitest's worker long enough, on a loaded machine, for its calls to the main
 * process to time out (`Timeout calling "onTaskUpdate"`), which fails the file.
 */
export function spawnAsync(
  command: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; input?: string | Buffer; cwd?: string; timeoutMs?: number },
): Promise<{ status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: options.env, cwd: options.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdin.on('error', () => undefined);
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', reject);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

export function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return startCli(args, env).done;
}

/** The one JSON envelope a `--json` run prints; fails when stdout holds anything else. */
export function envelopeOf(result: CliResult): { ok: boolean; data?: Record<string, unknown>; error?: Record<string, unknown> } {
  const lines = result.stdout.split('\n').filter((line) => line.length > 0);
  if (lines.length !== 1) throw new Error(`expected exactly one line on stdout, got ${lines.length}:\n${result.stdout}\nstderr:\n${result.stderr}`);
  return JSON.parse(lines[0]!) as { ok: boolean; data?: Record<string, unknown>; error?: Record<string, unknown> };
}

export async function waitFor(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
