import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { hookDataDir } from './hook-data-dir.js';
import { describeRule, ExclusionPolicy } from '../config/exclude.js';
import { exclusionSource, loadSettings, type Settings } from '../config/settings.js';
import { toEvermeError } from '../core/errors.js';
import { HEAP_CAP_FLAGS, heapCappedEnv } from '../core/heap-cap.js';
import { admitWorkspace, type Admission } from '../memory/admission.js';
import { recordHookWorkspace } from '../store/hook-workspace.js';
import { redactOutput } from '../core/redact-output.js';
import { recordHookEvent, type HookOutcome } from './hook-events.js';
import { hookEventKind, hookRouteFromArgv, parseHookInput, readStdinCapped, recordedEventName, type HookInput, type HookRoute } from './hook-input.js';
import { DeliveryMarks } from './delivery-marks.js';
import { HookSlot } from './hook-slot.js';
import { findSessionDir } from './session-dir-finder.js';
import type { SessionStartRecall } from '../recall/session-recall.js';

/** Well inside the host's 5 s hook timeout: past this the hook gives up and exits 0. */
const WATCHDOG_MS = 2500;
/** SessionStart recall failures that pass by themselves: nothing is said about them. */
const TRANSIENT_RECALL_FAILURES = new Set(['network', 'upstream', 'rate_limit', 'cancelled']);
/** The one stderr line the hook may print is cut to this length. */
const MAX_STDERR_CHARS = 200;

export interface HookResult {
  outcome: HookOutcome;
  reason?: string;
  diagnostic?: string;
  /** Where the outcome is recorded; unset when there is no data dir to keep state for, or nothing worth recording. */
  stateDir?: string;
  /** The host's event name, when it is one of ours. */
  event?: string;
  /** SessionStart only: the context block for the model, printed on stdout. */
  stdout?: string;
}

/**
 * The fail-open hook: one entry for every host event, dispatched on `hook_event_name`. Capture
 * events decide in a few milliseconds whether a worker should run for this session, start it
 * detached, and get out of the agent's way; SessionStart answers with recalled memory on stdout.
 * Never blocks, never prints to stdout otherwise.
 */
export async function runHook(stdin: NodeJS.ReadableStream & { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): Promise<HookResult> {
  // Run by hand in a terminal there is no hook JSON coming; waiting would only hit the watchdog.
  if (stdin.isTTY) return { outcome: 'ignored', reason: 'empty' };
  const { data, tooLarge } = await readStdinCapped(stdin);
  const parsed = parseHookInput(data, tooLarge);
  const kind = parsed.ok ? hookEventKind(parsed.input.event) : undefined;
  // Events that are not ours cost nothing: no settings read, no state touched, nothing recorded.
  if (kind === 'unknown') return { outcome: 'ignored', reason: 'unknown_event' };
  const event = parsed.ok ? recordedEventName(parsed.input.event) : undefined;
  const named = event === undefined ? {} : { event };
  const dataDir = hookDataDir(env);
  if (!existsSync(dataDir)) return { ...named, outcome: 'ignored', reason: 'no_data_dir' };
  const settings = loadSettings(dataDir, {}, env);
  const stateDir = settings.stateDir;
  if (!parsed.ok) return { outcome: 'ignored', reason: parsed.reason, stateDir };
  const { input } = parsed;
  if (input.cwd && !(await admitCwd(settings, input.sessionId, input.cwd))) return { ...named, outcome: 'ignored', reason: 'excluded', stateDir };

  if (kind === 'session_start') return sessionStart(settings, input, named);

  const slot = new HookSlot(stateDir, input.sessionId);
  const diagnostic = slot.takeDiagnostic();
  const remembered = slot.rememberedSessionDir();
  let unreadable: string | undefined;
  const onUnreadableDir = (dir: string, code: string): void => {
    unreadable ??= `${dir} (${code})`;
  };
  const sessionDir = findSessionDir(dataDir, input.sessionId, { remembered, searchAll: !slot.recentlyMissed(), onUnreadableDir });
  if (!sessionDir) {
    slot.rememberMiss();
    // The event log says which directory may hide the session, not that the session is unknown.
    const reason = unreadable === undefined ? 'unknown_session' : `unreadable_dir: ${unreadable}`;
    return { ...named, outcome: 'ignored', reason, diagnostic, stateDir };
  }
  if (sessionDir !== remembered) slot.rememberSessionDir(sessionDir);

  // What the worker must do beyond a debounced run, marked before the pending mark: a worker that
  // sees the pending mark sees this too.
  if (kind === 'turn_end') new DeliveryMarks(stateDir, input.sessionId).set('turn');
  if (kind === 'boundary') new DeliveryMarks(stateDir, input.sessionId).set('boundary');
  // Mark first, claim second: a worker that is finishing re-checks the mark after letting go of
  // the slot, so no hook's work can fall between the two.
  slot.markPending();
  if (!slot.tryClaim()) return { ...named, outcome: 'debounced', diagnostic, stateDir };
  try {
    // Loaded only here: most events are debounced, and child_process pulls in some ten of node's
    // own modules (dgram among them) that nothing else in the hook needs.
    const { spawn } = await import('node:child_process');
    const worker = spawn(
      process.execPath,
      // Capped like `import`: a worker may read a whole long session.
      [...HEAP_CAP_FLAGS, fileURLToPath(new URL('./worker-main.js', import.meta.url)), input.sessionId, sessionDir, input.cwd ?? ''],
      // Its own process group and no inherited stdio, so the host neither waits for it nor kills it
      // with the hook; cwd away from the agent's project so the worker pins nothing there.
      { detached: true, stdio: 'ignore', cwd: dataDir, windowsHide: true, env: { ...heapCappedEnv(env), MINIMAX_DATA_DIR: dataDir } },
    );
    worker.on('error', () => slot.release());
    if (worker.pid !== undefined) slot.setOwner(worker.pid);
    worker.unref();
  } catch (err) {
    slot.release();
    throw err;
  }
  return { ...named, outcome: 'claimed', diagnostic, stateDir };
}

/**
 * Whether the payload's workspace may be captured (the cwd is the session's workspace, or a
 * directory in it): an excluded one has nothing looked up, recalled, claimed or started for it. A
 * pattern the policy refuses keeps everything out too, and says why. Checked on the cwd as the host
 * wrote it, not as recorded (masked): a pattern or an `.everme-ignore` is about the real directory.
 */
async function admitCwd(settings: Settings, sessionId: string, cwd: string): Promise<boolean> {
  // Asked once, by the record below too when masking changes the cwd.
  let asked: Promise<Admission> | undefined;
  const admission = (): Promise<Admission> => (asked ??= ExclusionPolicy.load(settings.exclude, undefined, exclusionSource(settings)).then((policy) => admitWorkspace(policy, cwd)));
  // Written down before the hook acts on it: current sessions name their workspace nowhere else.
  // With the verdict when the recorded path is masked (a later run could not check that path), so
  // a session kept out here is known to be excluded by every later import and sync.
  await recordHookWorkspace(settings.stateDir, sessionId, cwd, async () => {
    const found = await admission();
    return found.admitted ? undefined : describeRule(found.rule);
  });
  return (await admission()).admitted;
}

/**
 * SessionStart: the recalled block on stdout, or nothing. A failed gateway part does not cost the
 * local part: the block is printed without it and the log says which part failed.
 */
async function sessionStart(settings: Settings, input: HookInput, named: { event?: string }): Promise<HookResult> {
  const stateDir = settings.stateDir;
  // Loaded only for this event: the store's reader is startup time the capture events never pay.
  const { sessionStartRecall } = await import('../recall/session-recall.js');
  let found: SessionStartRecall;
  try {
    found = await sessionStartRecall(settings, { project: input.cwd ?? '', sessionId: input.sessionId, maxChars: settings.recallChars });
  } catch (err) {
    // No context either way. A gateway that did not answer in time is weather, not news; a store
    // that cannot be read (corrupt, too new) or a refused key gets the one stderr line.
    const e = toEvermeError(err);
    if (TRANSIENT_RECALL_FAILURES.has(e.type)) return { ...named, outcome: 'ignored', reason: `recall_${e.type}`, stateDir };
    return { ...named, outcome: 'failed', reason: `recall failed: ${e.message}`, stateDir };
  }
  if (found.text === undefined) return { ...named, outcome: 'ignored', reason: settings.recallChars <= 0 ? 'recall_off' : 'no_memories', stateDir };
  const recalled: HookResult = { ...named, outcome: 'recalled', stdout: found.text, stateDir };
  if (!found.gatewayFailure) return recalled;
  // Recalled all the same (the local block is printed), and the reason says what the block lacks.
  // The bundled hook has its own copy of EvermeError: the failure is read through toEvermeError.
  const e = toEvermeError(found.gatewayFailure);
  const reason = `gateway_${e.type}`;
  // Same rule as above: weather (down, slow, a 5xx, a garbled answer) passes silently; a refused
  // key will not pass by itself, so it gets the one stderr line even though the block was printed.
  return TRANSIENT_RECALL_FAILURES.has(e.type) ? { ...recalled, reason } : { ...recalled, reason, diagnostic: `everme hook: gateway recall failed, local memory only: ${e.message}` };
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

function writeIgnoringErrors(stream: NodeJS.WriteStream, text: string): void {
  stream.on('error', () => undefined);
  stream.write(text);
}

function stderrLine(text: string): string {
  return `${redactOutput(text).replace(/\s+/g, ' ').trim().slice(0, MAX_STDERR_CHARS)}\n`;
}

/**
 * Entry point used by bin/run.js: always exit 0, at most one line on stderr, nothing on stdout but
 * a SessionStart context block.
 */
export async function runHookFromProcess(): Promise<void> {
  const started = process.hrtime.bigint();
  const quietExit = (): never => process.exit(0);
  process.on('uncaughtException', quietExit);
  process.on('unhandledRejection', quietExit);
  const watchdog = setTimeout(quietExit, watchdogMs(process.env));
  watchdog.unref();
  const route: HookRoute | undefined = hookRouteFromArgv(process.argv.slice(3));
  let result: HookResult;
  try {
    result = await runHook(process.stdin);
  } catch (err) {
    result = { outcome: 'failed', reason: toEvermeError(err).message };
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
      recordHookEvent(result.stateDir, {
        t: Date.now(),
        outcome: result.outcome,
        ms: Math.round(ms * 10) / 10,
        reason: result.reason,
        ...(result.event === undefined ? {} : { event: result.event }),
        ...(route === undefined ? {} : { route }),
      });
    } catch {
      // recording latency is best effort; the hook must not fail because of it
    }
  }
  // The host hands SessionStart's stdout to the model as context: plain text, written once. Each
  // stream is made only to write (most calls print nothing). A host that closed its end of a pipe
  // must not turn into an EPIPE crash (exit 1 blocks nothing, but 2 would, and a stack trace on
  // stderr is not "one short line").
  if (result.stdout) writeIgnoringErrors(process.stdout, `${result.stdout}\n`);
  const line = result.outcome === 'failed' ? `everme hook: ${result.reason ?? 'failed'}` : result.diagnostic;
  if (line) writeIgnoringErrors(process.stderr, stderrLine(line));
  clearTimeout(watchdog);
  process.exitCode = 0;
}
