import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { toEvermeError } from '../core/errors.js';
import { resolveDataDir } from '../config/data-dir.js';
import { defaultSink, loadSettings, type Settings } from '../config/settings.js';
import { openEngine, type Engine } from '../engine/engine-context.js';
import { runPipeline, type RunSummary } from '../engine/run-pipeline.js';
import { SessionMetaStore } from '../store/session-meta.js';
import { readSessionIndex } from '../transcript/session-index.js';
import { locateSession } from '../transcript/session-locate.js';
import { DeliveryMarks } from './delivery-marks.js';
import { HookSlot, WORKER_HARD_STOP_MS, WORKER_MAX_LIFETIME_MS } from './hook-slot.js';

/**
 * After a Stop, PreCompact or SessionEnd the worker runs this soon after its last run rather than a
 * whole interval later: the finished turn arrives within seconds, and a burst of short turns still
 * makes one run per window (coalesced), not one request per turn.
 */
export const URGENT_GAP_MS = 1500;
/**
 * Runs after one that answered a Stop or a boundary, `URGENT_GAP_MS` apart, found news or not: the
 * host may fire Stop a moment before the final answer reaches the file. Bounded, so a worker whose
 * session went quiet still exits within seconds.
 */
const LATE_LOOKS = 2;
/** How often a worker waiting out the interval looks for such a mark. */
const MARK_POLL_MS = 200;
/** Failures the user must act on; transient ones (network, upstream) are simply retried later. */
const REPORTED_FAILURES = new Set(['auth', 'not_logged_in', 'permission', 'io']);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** A bounded reason/count line: codes and counts only, never content. */
/**
 * Not malformed records: a last line still being written is normal while the agent works, and a
 * rewritten history would otherwise be announced again after every tool call.
 */
const NOT_MALFORMED = new Set(['incomplete_tail', 'history_rewritten']);

export function diagnosticFor(summary: RunSummary, sessionId: string): string | undefined {
  const parts = Object.entries(summary.warnings)
    // A last line still being written is normal while the agent works.
    .filter(([code, count]) => (count ?? 0) > 0 && !NOT_MALFORMED.has(code))
    .map(([code, count]) => `${code}×${count}`);
  const failure = summary.failures.find((f) => REPORTED_FAILURES.has(f.type));
  if (failure) parts.unshift(`delivery failed (${failure.type})`);
  return parts.length === 0 ? undefined : `everme: ${parts.join(', ')} in ${sessionId} (see \`everme report\`)`;
}

type BusyEnd = 'idle' | 'failed' | 'expired' | 'gone';

/**
 * Waits until the next run is due: one interval after the last run, or only `URGENT_GAP_MS` after
 * it when a hook marked the end of a turn or a boundary (looked for while waiting) or a recent run
 * answered such a mark (`followUp`, see `LATE_LOOKS`).
 */
async function waitForNextRun(settings: Settings, slot: HookSlot, marks: DeliveryMarks, followUp: boolean): Promise<void> {
  for (;;) {
    const urgent = followUp || marks.any();
    const gap = urgent ? Math.min(URGENT_GAP_MS, settings.syncIntervalMs) : settings.syncIntervalMs;
    const last = slot.lastRunMs();
    // Capped so a clock that jumped back cannot park the worker for longer than one interval.
    const due = last === undefined ? 0 : Math.min(gap, last + gap - Date.now());
    if (due <= 0) return;
    await sleep(urgent ? due : Math.min(due, MARK_POLL_MS));
  }
}

/**
 * Runs the engine for the session until a run finds nothing new and no hook asked for more,
 * at most once per interval (or per urgent gap, see `waitForNextRun`). The engine stays open across
 * runs and is closed before returning.
 */
async function runWhileBusy(settings: Settings, slot: HookSlot, sessionDir: string, cwd: string | undefined, deadline: number): Promise<BusyEnd> {
  let engine: Engine | undefined;
  const marks = new DeliveryMarks(settings.stateDir, slot.sessionId);
  try {
    engine = openEngine(settings, defaultSink(settings));
    const session = await locateSession(settings.dataDir, slot.sessionId, { remembered: sessionDir });
    if (!session) return 'gone';
    // The hook remembers the first copy it found by name; the next hooks hand over the one chosen here.
    if (session.dir !== sessionDir) slot.rememberSessionDir(session.dir);
    engine.marks.sessions.rememberDir(slot.sessionId, session.dir);
    // The payload's cwd is one claim about the workspace; each run decides among the claims.
    if (cwd) new SessionMetaStore(engine.db).recordCwd(slot.sessionId, cwd);
    // Read once per worker: the host writes its row at the session's start, a title after a turn or so.
    const sessionIndex = readSessionIndex(settings.dataDir, { sessionIds: [slot.sessionId] });
    let followUp = false;
    let lateLooks = 0;
    for (;;) {
      await waitForNextRun(settings, slot, marks, followUp);
      const taken = marks.take();
      slot.takePending();
      slot.markRunStart();
      const summary = await runPipeline({ mode: 'hook', settings, sink: engine.sinks[0]!.name, engine, sessions: [session], boundary: taken.boundary, sessionIndex });
      const diagnostic = diagnosticFor(summary, slot.sessionId);
      if (diagnostic) slot.writeDiagnostic(diagnostic);
      // A failed run (gateway down) is left to the next hook or sync rather than retried in a loop;
      // a boundary's flush is owed to the next worker, so its mark goes back.
      if (summary.sessions.failed > 0 || summary.cancelled) {
        if (taken.boundary) marks.set('boundary');
        return 'failed';
      }
      if (Date.now() > deadline) return 'expired';
      // After a turn's end, look again soon (LATE_LOOKS times) whatever this run found. Otherwise
      // progress means the agent is writing: look once more, an interval later, so what it writes
      // after the last hook still arrives without another one.
      if (taken.turn || taken.boundary) lateLooks = LATE_LOOKS;
      followUp = lateLooks > 0;
      if (followUp) {
        lateLooks -= 1;
        continue;
      }
      const progressed = summary.messages > 0 || summary.removed > 0;
      if (!progressed && !slot.hasPending()) return 'idle';
    }
  } finally {
    engine?.close();
  }
}

/**
 * The detached worker behind `everme hook`: the same engine as `sync`, for one session, never
 * flushing. It runs at most once per interval, runs once more after the last change so a final
 * answer written after the last hook still arrives, and exits when a run finds nothing new.
 */
export async function runWorker(sessionId: string, sessionDir: string, cwd: string | undefined): Promise<void> {
  const settings = loadSettings(resolveDataDir(undefined));
  const slot = new HookSlot(settings.stateDir, sessionId);
  slot.setOwner(process.pid);
  const deadline = Date.now() + WORKER_MAX_LIFETIME_MS;
  try {
    for (;;) {
      const end = await runWhileBusy(settings, slot, sessionDir, cwd, deadline);
      if (end !== 'idle') return;
      // The engine is closed before letting go, so a worker without the slot holds nothing.
      slot.release();
      // A hook that marked work after our last look, and lost the claim to us, must not be stranded.
      if (!(slot.hasPending() && slot.tryClaim())) return;
    }
  } catch (err) {
    // Nobody waits on a detached worker: the next hook is the only way to tell the user.
    slot.writeDiagnostic(`everme: hook worker failed (${toEvermeError(err).type}) for ${sessionId}; try \`everme sync\``);
  } finally {
    slot.release();
  }
}

function isMainModule(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    // Both sides resolved: a data dir or install path behind a symlink must still start the worker.
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMainModule()) {
  const [sessionId, sessionDir, cwd] = process.argv.slice(2);
  if (sessionId && sessionDir) {
    setTimeout(() => process.exit(0), WORKER_HARD_STOP_MS).unref();
    runWorker(sessionId, sessionDir, cwd || undefined).then(
      () => process.exit(0),
      () => process.exit(0),
    );
  }
}
