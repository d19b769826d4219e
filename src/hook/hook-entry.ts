import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { hookDataDir } from './hook-data-dir.js';
import { ExclusionPolicy } from '../config/exclude.js';
import { loadSettings } from '../config/settings.js';
import { redactOutput } from '../core/redact-output.js';
import { recordHookEvent, type HookOutcome } from './hook-events.js';
import { parseHookInput, readStdinCapped } from './hook-input.js';
import { HookSlot } from './hook-slot.js';
import { findSessionDir } from './session-dir-finder.js';

/** Well inside the host's 5 s hook timeout: past this the hook gives up and exits 0. */
const WATCHDOG_MS = 2500;
/** The one stderr line the hook may print is cut to this length. */
const MAX_STDERR_CHARS = 200;

export interface HookResult {
  outcome: HookOutcome;
  reason?: string;
  diagnostic?: string;
  /** Where the outcome is recorded; unset when there is no data dir to keep state for. */
  stateDir?: string;
}

/**
 * The fail-open hook: decide in a few milliseconds whether a worker should run for this session,
 * start it detached, and get out of the agent's way. Never blocks, never prints to stdout.
 */
export async function runHook(stdin: NodeJS.ReadableStream & { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): Promise<HookResult> {
  // Run by hand in a terminal there is no hook JSON coming; waiting would only hit the watchdog.
  if (stdin.isTTY) return { outcome: 'ignored', reason: 'empty' };
  const { data, tooLarge } = await readStdinCapped(stdin);
  const dataDir = hookDataDir(env);
  if (!existsSync(dataDir)) return { outcome: 'ignored', reason: 'no_data_dir' };
  const settings = loadSettings(dataDir, {}, env);
  const stateDir = settings.stateDir;
  const parsed = parseHookInput(data, tooLarge);
  if (!parsed.ok) return { outcome: 'ignored', reason: parsed.reason, stateDir };
  // An excluded workspace (the payload's cwd is the session's workspace): nothing is looked up,
  // claimed or started for it.
  const { cwd } = parsed.input;
  if (cwd && (await ExclusionPolicy.load(settings.exclude)).ruleFor(cwd)) return { outcome: 'ignored', reason: 'excluded', stateDir };
  const slot = new HookSlot(stateDir, parsed.input.sessionId);
  const diagnostic = slot.takeDiagnostic();
  const remembered = slot.rememberedSessionDir();
  const sessionDir = findSessionDir(dataDir, parsed.input.sessionId, { remembered, searchAll: !slot.recentlyMissed() });
  if (!sessionDir) {
    slot.rememberMiss();
    return { outcome: 'ignored', reason: 'unknown_session', diagnostic, stateDir };
  }
  if (sessionDir !== remembered) slot.rememberSessionDir(sessionDir);

  // Mark first, claim second: a worker that is finishing re-checks the mark after letting go of
  // the slot, so no hook's work can fall between the two.
  slot.markPending();
  if (!slot.tryClaim()) return { outcome: 'debounced', diagnostic, stateDir };
  try {
    const worker = spawn(
      process.execPath,
      [fileURLToPath(new URL('./worker-main.js', import.meta.url)), parsed.input.sessionId, sessionDir, parsed.input.cwd ?? ''],
      // Its own process group and no inherited stdio, so the host neither waits for it nor kills it
      // with the hook; cwd away from the agent's project so the worker pins nothing there.
      { detached: true, stdio: 'ignore', cwd: dataDir, windowsHide: true, env: { ...env, MINIMAX_DATA_DIR: dataDir } },
    );
    worker.on('error', () => slot.release());
    if (worker.pid !== undefined) slot.setOwner(worker.pid);
    worker.unref();
  } catch (err) {
    slot.release();
    throw err;
  }
  return { outcome: 'claimed', diagnostic, stateDir };
}

/**
 * The watchdog's limit: EVERME_HOOK_WATCHDOG_MS when it is a positive whole number. Tests that
 * fire bursts of hooks on a loaded machine raise it, so that what they count (one event per hook)
 * does not depend on how fast the machine is; the watchdog itself is tested at its default.
 */
function watchdogMs(env: NodeJS.ProcessEnv): number {
  const ms = Number(env.EVERME_HOOK_WATCHDOG_MS);
  return Number.isSafeInteger(ms) && ms > 0 ? ms : WATCHDOG_MS;
}

function stderrLine(text: string): string {
  return `${redactOutput(text).replace(/\s+/g, ' ').trim().slice(0, MAX_STDERR_CHARS)}\n`;
}

/** Entry point used by bin/run.js: always exit 0, nothing on stdout, at most one line on stderr. */
export async function runHookFromProcess(): Promise<void> {
  const started = process.hrtime.bigint();
  const quietExit = (): never => process.exit(0);
  // A host that closed its end of a pipe must not turn into an EPIPE crash (exit 1 blocks nothing,
  // but 2 would, and a stack trace on stderr is not "one short line").
  process.stdout.on('error', () => undefined);
  process.stderr.on('error', () => undefined);
  process.on('uncaughtException', quietExit);
  process.on('unhandledRejection', quietExit);
  const watchdog = setTimeout(quietExit, watchdogMs(process.env));
  watchdog.unref();
  let result: HookResult;
  try {
    result = await runHook(process.stdin);
  } catch (err) {
    result = { outcome: 'failed', reason: err instanceof Error ? err.message : String(err) };
    try {
      const dataDir = hookDataDir();
      if (existsSync(dataDir)) result.stateDir = loadSettings(dataDir).stateDir;
    } catch {
      // no state to record into
    }
  }
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.stateDir) {
    try {
      recordHookEvent(result.stateDir, { t: Date.now(), outcome: result.outcome, ms: Math.round(ms * 10) / 10, reason: result.reason });
    } catch {
      // recording latency is best effort; the hook must not fail because of it
    }
  }
  const line = result.outcome === 'failed' ? `everme hook: ${result.reason ?? 'failed'}` : result.diagnostic;
  if (line) process.stderr.write(stderrLine(line));
  clearTimeout(watchdog);
  process.exitCode = 0;
}
