/**
 * Spawning the built CLI as a child process without blocking this process's event loop (the fake
 * gateway answers from here), with an environment that holds only what the test gives it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cliEntry, ensureBuilt } from './cli.js';

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

/** No EVERME_* or MINIMAX_* variable of the developer's shell may leak into a test run. */
export function cliEnv(home: string, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8' };
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) env[key] = value;
  return env;
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
