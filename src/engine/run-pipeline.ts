import { EvermeError, toEvermeError } from '../core/errors.js';
import type { Settings, SinkName } from '../config/settings.js';
import { totalsByCode, type WarningCode, type WarningEntry } from '../core/warnings.js';
import { discoverSessions } from '../transcript/discover.js';
import type { SessionRef } from '../transcript/types.js';
import { openEngine, type Engine } from './engine-context.js';
import { ReadGate } from './read-gate.js';
import { blankOutcome, deliverSession, type DeliveryMode, type RunSnapshot, type SessionOutcome } from './session-delivery.js';

export interface RunOptions {
  mode: DeliveryMode;
  settings: Settings;
  sink: SinkName;
  /** UTC midnight of the --since date, epoch ms. */
  sinceMs?: number;
  /** The --since date as the user gave it (recorded on import runs: it sets sync's horizon). */
  since?: string;
  /** Only these sessions (already located). */
  sessions?: SessionRef[];
  concurrency?: number;
  dryRun?: boolean;
  signal?: AbortSignal;
  onProgress?: (progress: RunProgress) => void;
  /** A conversation boundary (PreCompact, SessionEnd): flush what is delivered (see DeliveryContext). */
  boundary?: boolean;
  /** An engine already opened by the caller (the hook worker keeps one across runs). */
  engine?: Engine;
}

export interface RunProgress {
  sessionsTotal: number;
  sessionsDone: number;
  messages: number;
  bytesDone: number;
  bytesTotal: number;
}

export interface RunSummary {
  mode: DeliveryMode;
  sink: SinkName;
  dryRun: boolean;
  since?: string;
  sessions: { scanned: number; delivered: number; unchanged: number; empty: number; excluded: number; forgotten: number; failed: number };
  /** Sessions read whose workspace nobody knows: no exclusion could be checked for them. */
  workspaceUnknown: number;
  messages: number;
  removed: number;
  requests: number;
  bytes: number;
  warnings: Partial<Record<WarningCode, number>>;
  failures: Array<{ sessionId: string; type: string; message: string }>;
  /** `gateway_response_invalid`: acknowledged (2xx) with an unreadable body, counted as delivered. */
  invalidResponses: Array<{ sessionId: string; requestId: string; reason: string }>;
  cancelled: boolean;
}

/** Errors that will fail every remaining session the same way: stop scheduling more work. */
const FATAL_TYPES = new Set(['auth', 'not_logged_in', 'cancelled']);

/**
 * The embedded store's files are read synchronously, so sessions in flight do not read in
 * parallel; they only interleave at awaits, and each one's objects live that much longer. With 8,
 * most of a session's objects outlived two scavenges and were promoted: on the 3x import the main
 * thread ran 51 full GCs, against 9 with 2, which took 10% less CPU (28.6 s against 32.6 s wall;
 * 1x and 10x interleaved runs 4–7% faster, peak RSS a little lower). Two still let one session's
 * commit wait overlap the next one's reading. The gateway waits on the network: 4 at once.
 */
export function defaultConcurrency(sink: SinkName): number {
  return sink === 'local' ? 2 : 4;
}

export async function runPipeline(options: RunOptions): Promise<RunSummary> {
  const dryRun = options.dryRun ?? false;
  const engine = options.engine ?? openEngine(options.settings, options.sink, { dryRun });
  const summary: RunSummary = {
    mode: options.mode,
    sink: options.sink,
    dryRun,
    since: options.since,
    sessions: { scanned: 0, delivered: 0, unchanged: 0, empty: 0, excluded: 0, forgotten: 0, failed: 0 },
    workspaceUnknown: 0,
    messages: 0,
    removed: 0,
    requests: 0,
    bytes: 0,
    warnings: {},
    failures: [],
    invalidResponses: [],
    cancelled: false,
  };
  // A refused EVERME_EXCLUDE pattern fails the run before anything is read or recorded.
  await engine.privacy.ready().catch((err: unknown) => {
    if (!options.engine) engine.close();
    throw err;
  });
  const runId = dryRun ? undefined : engine.state.startRun(options.mode, { since: options.since, sink: options.sink });
  try {
    const allWarnings: WarningEntry[] = [];
    const sessions = options.sessions ?? (await collectSessions(options, engine, dryRun, allWarnings));
    summary.sessions.scanned = sessions.length;
    const progress: RunProgress = { sessionsTotal: sessions.length, sessionsDone: 0, messages: 0, bytesDone: 0, bytesTotal: 0 };
    let stop: EvermeError | undefined;
    engine.locks.expect(sessions.map((s) => s.sessionId));
    // Ctrl-C: a session read but not yet committed is given up whole, not waited for.
    const cancelPending = (): void => engine.sink.cancelPending?.();
    options.signal?.addEventListener('abort', cancelPending, { once: true });
    const readers = new ReadGate(Math.max(1, options.concurrency ?? defaultConcurrency(options.sink)));
    const snapshot = sessions.length >= SNAPSHOT_AFTER_SESSIONS ? takeSnapshot(engine, options.sink) : undefined;

    const deliverOne = async (session: SessionRef, readDone: () => void): Promise<void> => {
      if (stop || options.signal?.aborted) return;
      // A sink that buffers (the embedded store's commit backlog) says when to read on.
      await engine.sink.readyForMore?.();
      if (stop || options.signal?.aborted) return;
      let outcome: SessionOutcome;
      try {
        outcome = await deliverSession(session, {
          onReadDone: readDone,
          ...(snapshot ? { snapshot } : {}),
          mode: options.mode,
          sink: engine.sink,
          state: engine.state,
          locks: engine.locks,
          privacy: engine.privacy,
          dryRun,
          signal: options.signal,
          ...(options.boundary ? { boundary: true } : {}),
          onDelivered: (n) => {
            progress.messages += n;
            options.onProgress?.(progress);
          },
        });
      } catch (err) {
        outcome = failedOutcome(session, toEvermeError(err));
      }
      summary.messages += outcome.messages;
      summary.requests += outcome.requests;
      summary.removed += outcome.removed;
      summary.bytes += outcome.bytes;
      if (outcome.workspaceUnknown) summary.workspaceUnknown += 1;
      allWarnings.push(...outcome.warnings);
      for (const r of outcome.invalidResponses) summary.invalidResponses.push({ sessionId: session.sessionId, ...r });
      if (outcome.status === 'failed') {
        const error = outcome.error ?? new EvermeError('internal', 'unknown failure');
        if (error.type === 'cancelled') {
          summary.cancelled = true;
        } else {
          summary.sessions.failed += 1;
          summary.failures.push({ sessionId: session.sessionId, type: error.type, message: error.message });
        }
        if (FATAL_TYPES.has(error.type)) stop ??= error;
      } else {
        summary.sessions[outcome.status] += 1;
      }
      progress.sessionsDone += 1;
      progress.bytesDone += outcome.bytes;
      options.onProgress?.(progress);
    };

    // Sessions are started as read slots free up, never all at once: a suspended call per session
    // of the run held ~100 MB of the heap at the start of a 30,000-session import.
    const inFlight = new Set<Promise<void>>();
    // A session's failure is its outcome; this is for a defect outside it (a progress callback
    // that throws): kept, so no rejection goes unhandled, and thrown once the sessions in flight end.
    let defect: { error: unknown } | undefined;
    for (const session of sessions) {
      const leave = await readers.enter();
      if (defect) {
        leave();
        break;
      }
      const task: Promise<void> = deliverOne(session, leave)
        .catch((error: unknown) => {
          defect ??= { error };
        })
        .finally(() => {
          leave();
          inFlight.delete(task);
        });
      inFlight.add(task);
    }
    await Promise.all(inFlight);
    if (defect) throw defect.error;
    options.signal?.removeEventListener('abort', cancelPending);
    if (options.signal?.aborted) summary.cancelled = true;
    // Sessions never started because of a fatal error count as failed, so the totals add up.
    const notStarted = sessions.length - progress.sessionsDone;
    if (stop && !summary.cancelled && notStarted > 0) summary.sessions.failed += notStarted;
    summary.warnings = totalsByCode(allWarnings);
    await engine.privacy.settled();
    engine.privacy.commit();
    if (runId !== undefined) {
      const status = summary.cancelled ? 'cancelled' : summary.sessions.failed > 0 ? 'partial' : 'ok';
      engine.state.finishRun(runId, summary, status);
      // Hook workers record a run per interval per active session: keep the recent ones only.
      if (options.mode === 'hook') engine.state.pruneRuns('hook', 500);
    }
    return summary;
  } catch (err) {
    await engine.privacy.settled();
    engine.privacy.commit();
    if (runId !== undefined) engine.state.finishRun(runId, summary, 'failed');
    throw err;
  } finally {
    if (!options.engine) engine.close();
  }
}

/** Below this many sessions (a hook worker's one, a small sync) two lookups each cost less than reading every row. */
const SNAPSHOT_AFTER_SESSIONS = 64;

function takeSnapshot(engine: Engine, sink: SinkName): RunSnapshot {
  const fingerprints = engine.state.fingerprintsOf(sink);
  const forgotten = engine.privacy.forgottenIds();
  return { fingerprint: (sessionId) => fingerprints.get(sessionId), forgotten: (conversationId) => forgotten.has(conversationId) };
}

async function collectSessions(
  options: RunOptions,
  engine: Engine,
  dryRun: boolean,
  warnings: WarningEntry[],
): Promise<SessionRef[]> {
  const sessions: SessionRef[] = [];
  for await (const session of discoverSessions(options.settings.dataDir, {
    sinceMs: options.sinceMs,
    onInvalidManifest: (dir, _reason, symlink) => {
      const code = symlink ? 'symlinked_file' : 'invalid_manifest';
      const entry: WarningEntry = { code, count: 1, samples: [{ file: 'manifest.json', line: 0 }] };
      warnings.push(entry);
      if (dryRun) return;
      engine.state.replaceWarnings({ conversationId: null, sessionId: null, source: 'manifest', sessionDir: dir }, [entry]);
    },
    // A restored copy of a session: only the newest is read; the other is named in the report.
    onDuplicateSession: (ignored) => {
      const entry: WarningEntry = { code: 'duplicate_session_dir', count: 1, samples: [{ file: 'manifest.json', line: 0 }] };
      warnings.push(entry);
      if (dryRun) return;
      engine.state.replaceWarnings({ conversationId: null, sessionId: null, source: 'manifest', sessionDir: ignored }, [entry]);
    },
  })) {
    if (options.signal?.aborted) break;
    sessions.push(session);
  }
  return sessions;
}

function failedOutcome(session: SessionRef, error: EvermeError): SessionOutcome {
  return { ...blankOutcome(session, 'failed'), error };
}
