import pLimit from 'p-limit';
import type { Settings, SinkName } from '../config/settings.js';
import type { WarningEntry } from '../core/warnings.js';
import { dirListable, discoverSessions } from '../transcript/discover.js';
import { readSessionIndex, type SessionIndexRead } from '../transcript/session-index.js';
import type { SessionRef } from '../transcript/types.js';
import { openEngine, type Engine } from './engine-context.js';
import { defaultPoolSize, PlanPool, planWorkerUrl } from './plan-pool.js';
import { inlinePlanner, type Planner } from './planner.js';
import { deliverSession, startDelivery, StartedDelivery, type DeliveryContext, type DeliveryMode, type RunSnapshot } from './session-delivery.js';
import type { SessionOutcome } from './session-outcome.js';
import { RunTally, type RunSummary, type SessionIndexSummary } from './run-summary.js';

export type { RunSummary, SessionIndexSummary };

export interface RunOptions {
  mode: DeliveryMode;
  settings: Settings;
  /** The sink the run is named for; the gateway brings the embedded store along (see `deliverySinks`). */
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
  /** Where sessions are planned; by default on this thread. */
  planner?: Planner;
  /** The session index as the caller read it (a hook worker reads it once); read here when unset. */
  sessionIndex?: SessionIndexRead;
}

export interface RunProgress {
  sessionsTotal: number;
  sessionsDone: number;
  messages: number;
  bytesDone: number;
  bytesTotal: number;
}

/**
 * Sessions in flight at once. The embedded store's files are read synchronously, so sessions
 * planned on this thread do not read in parallel; they only interleave at awaits, and each one's
 * objects live that much longer. With 8, most of a session's objects outlived two scavenges and
 * were promoted: on the 3x import the main thread ran 51 full GCs, against 9 with 2, which took 10%
 * less CPU. Two still let one session's commit wait overlap the next one's reading. The gateway
 * waits on the network: 4 at once.
 */
export function defaultConcurrency(sink: SinkName): number {
  return sink === 'local' ? 2 : 4;
}

export async function runPipeline(options: RunOptions): Promise<RunSummary> {
  const dryRun = options.dryRun ?? false;
  const engine = options.engine ?? openEngine(options.settings, options.sink, { dryRun });
  const tally = new RunTally({ mode: options.mode, sinks: engine.sinks.map((sink) => sink.name), dryRun, ...(options.since === undefined ? {} : { since: options.since }) });
  // A refused EVERME_EXCLUDE pattern fails the run before anything is read or recorded.
  await engine.privacy.ready().catch((err: unknown) => {
    if (!options.engine) engine.close();
    throw err;
  });
  // A run over named sessions records them: it covered those alone (status tells it from a full sync).
  const only = options.sessions && { sessions: options.sessions.map((s) => s.sessionId) };
  const runId = dryRun ? undefined : engine.runs.start(options.mode, { since: options.since, sink: options.sink, ...only });
  let pool: PlanPool | undefined;
  try {
    const sessions = options.sessions ?? (await collectSessions(options, engine, dryRun, tally));
    const index = options.sessionIndex ?? readIndexFor(options.settings.dataDir, sessions);
    engine.privacy.useSessionIndex(index);
    tally.summary.sessionIndex = indexSummary(index, sessions);
    engine.privacy.noteSessions(sessions);
    pool = options.planner ? undefined : poolFor(sessions.length);
    await deliverAll(sessions, engine, tally, { ...options, planner: options.planner ?? pool ?? inlinePlanner }, pool ? 2 * pool.size : undefined);
    const summary = tally.finish(sessions.length, options.signal?.aborted ?? false);
    await engine.privacy.settled();
    engine.privacy.commit();
    engine.privacy.endRun();
    if (runId !== undefined) {
      engine.runs.finish(runId, summary, summary.cancelled ? 'cancelled' : summary.sessions.failed > 0 ? 'partial' : 'ok');
      // Hook workers record a run per interval per active session: keep the recent ones only.
      if (options.mode === 'hook') engine.runs.prune('hook', 500);
    }
    return summary;
  } catch (err) {
    await engine.privacy.settled();
    engine.privacy.commit();
    engine.privacy.endRun();
    if (runId !== undefined) engine.runs.finish(runId, tally.summary, 'failed');
    throw err;
  } finally {
    await pool?.close();
    if (!options.engine) engine.close();
  }
}

/** Below this many sessions the index is asked for the run's sessions only; above, every row is read at once. */
const INDEX_BY_ID_BELOW = 1000;

function readIndexFor(dataDir: string, sessions: readonly SessionRef[]): SessionIndexRead {
  return readSessionIndex(dataDir, sessions.length < INDEX_BY_ID_BELOW ? { sessionIds: sessions.map((s) => s.sessionId) } : {});
}

function indexSummary(read: SessionIndexRead, sessions: readonly SessionRef[]): SessionIndexSummary {
  if (read.status === 'unavailable') return { status: 'unavailable', path: read.path, reason: read.reason, message: read.message };
  const matched = sessions.filter((s) => read.sessions.has(s.sessionId)).length;
  return { status: 'ok', path: read.path, schema: read.schema.name, known: read.known, matched };
}

/** Below this many sessions (a hook's one, a small sync) planning on this thread costs less than starting workers. */
const POOL_AFTER_SESSIONS = 16;

/** Workers for a bulk run, started as sessions need them (a no-op sync starts none). */
function poolFor(sessions: number): PlanPool | undefined {
  const url = planWorkerUrl();
  return url && sessions >= POOL_AFTER_SESSIONS ? new PlanPool(url, defaultPoolSize()) : undefined;
}

/**
 * Every session through `deliverSession`, `concurrency` at a time (p-limit). A session holds its
 * slot until every sink holds its end, not until it is committed: waiting for a commit (which the
 * writer thread groups with others) must not keep the next session from being planned. Sessions
 * are started as slots free up, never all at once: a suspended call per session of the run held
 * ~100 MB of the heap at the start of a 30,000-session import.
 */
async function deliverAll(sessions: SessionRef[], engine: Engine, tally: RunTally, options: RunOptions, pooled?: number): Promise<void> {
  const concurrency = Math.max(1, options.concurrency ?? Math.max(pooled ?? 0, defaultConcurrency(options.sink)));
  const limit = pLimit(concurrency);
  const progress: RunProgress = { sessionsTotal: sessions.length, sessionsDone: 0, messages: 0, bytesDone: 0, bytesTotal: 0 };
  engine.locks.expect(sessions.map((s) => s.sessionId));
  const base = deliveryContext(engine, options, sessions.length, tally, (n) => {
    progress.messages += n;
    options.onProgress?.(progress);
  });
  const slots = new Set<Promise<void>>();
  const running = new Set<Promise<void>>();
  // A session's failure is its outcome; this is for a defect outside it (a progress callback that
  // throws): kept, so no rejection goes unhandled, and thrown once the sessions in flight end.
  let defect: { error: unknown } | undefined;
  const record = (outcome: SessionOutcome): void => {
    tally.add(outcome);
    progress.sessionsDone += 1;
    progress.bytesDone += outcome.bytes;
    options.onProgress?.(progress);
  };
  const start = (session: SessionRef, started: StartedDelivery): Promise<void> =>
    new Promise<void>((handedOff) => {
      const done = deliverSession(session, { ...base, onHandedOff: handedOff }, started)
        .then(record)
        .catch((error: unknown) => {
          defect ??= { error };
        })
        .finally(() => {
          handedOff();
          running.delete(done);
        });
      running.add(done);
    });
  let atOnce = 0;
  for (const session of sessions) {
    while (slots.size >= concurrency) await Promise.race(slots);
    if (defect || tally.allStopped || options.signal?.aborted) break;
    // Started once a slot is free, as the session's first checks must see what the sessions before it
    // did (a sink stopped by a rejected key); one they end takes no slot.
    const started = startDelivery(session, base);
    if (!(started instanceof StartedDelivery)) {
      try {
        record(started);
      } catch (error) {
        defect ??= { error };
      }
      // Still a turn of the event loop now and then, so that Ctrl-C is heard in a long no-op run.
      if (++atOnce % YIELD_EVERY === 0) await new Promise<void>((resolve) => setImmediate(resolve));
      continue;
    }
    const slot = limit(start, session, started);
    slots.add(slot);
    void slot.finally(() => slots.delete(slot));
  }
  await Promise.all(slots);
  await Promise.all(running);
  if (defect) throw defect.error;
}

/** Sessions passed at once (see `startDelivery`) between two turns of the event loop. */
const YIELD_EVERY = 256;

function deliveryContext(engine: Engine, options: RunOptions, sessions: number, tally: RunTally, onDelivered: (n: number) => void): DeliveryContext {
  const snapshot = sessions >= SNAPSHOT_AFTER_SESSIONS ? takeSnapshot(engine) : undefined;
  return {
    mode: options.mode,
    sinks: engine.sinks,
    marks: engine.marks,
    planner: options.planner ?? inlinePlanner,
    locks: engine.locks,
    privacy: engine.privacy,
    dryRun: options.dryRun ?? false,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.boundary ? { boundary: true } : {}),
    ...(snapshot ? { snapshot } : {}),
    stopped: tally.stopped,
    onSinkFailure: (sink, error) => tally.sinkFailed(sink, error),
    onDelivered,
  };
}

/** Below this many sessions (a hook worker's one, a small sync) two lookups each cost less than reading every row. */
const SNAPSHOT_AFTER_SESSIONS = 64;

function takeSnapshot(engine: Engine): RunSnapshot {
  const fingerprints = new Map(engine.sinks.map((sink) => [sink.name, engine.marks.fingerprints.allOf(sink.name)]));
  const forgotten = engine.privacy.forgottenIds();
  return {
    fingerprint: (sink, sessionId) => fingerprints.get(sink)?.get(sessionId),
    forgotten: (conversationId) => forgotten.has(conversationId),
  };
}

async function collectSessions(options: RunOptions, engine: Engine, dryRun: boolean, tally: RunTally): Promise<SessionRef[]> {
  const sessions: SessionRef[] = [];
  const record = (dir: string, entry: WarningEntry, source = 'manifest'): void => {
    tally.addWarnings([entry]);
    if (dryRun) return;
    engine.warnings.replace({ conversationId: null, sessionId: null, source, sessionDir: dir }, [entry]);
  };
  const unreadable = new Set<string>();
  for await (const session of discoverSessions(options.settings.dataDir, {
    sinceMs: options.sinceMs,
    onInvalidManifest: (dir, _reason, symlink) => record(dir, { code: symlink ? 'symlinked_file' : 'invalid_manifest', count: 1, samples: [{ file: 'manifest.json', line: 0 }] }),
    // A restored copy of a session: only the newest is read; the other is named in the report.
    onDuplicateSession: (ignored) => record(ignored, { code: 'duplicate_session_dir', count: 1, samples: [{ file: 'manifest.json', line: 0 }] }),
    // A date directory that cannot be listed hides its sessions: named in the summary and the report.
    onUnreadableDir: (dir) => {
      unreadable.add(dir);
      record(dir, { code: 'unreadable_dir', count: 1, samples: [{ file: '.', line: 0 }] }, UNREADABLE_DIR_SOURCE);
    },
    manifests: engine.manifests,
  })) {
    if (options.signal?.aborted) break;
    sessions.push(session);
  }
  // What the walk found of each manifest (it reads them all before it yields the first session).
  engine.manifests.flush();
  if (!dryRun && !options.signal?.aborted) clearReadableDirs(engine, unreadable);
  return sessions;
}

/** The warning source of a directory the walk could not list. */
const UNREADABLE_DIR_SOURCE = 'directory';

/**
 * An `unreadable_dir` warning an earlier walk recorded goes once its directory can be listed again
 * (or is gone); one that this walk did not reach (older than its horizon) and still cannot be listed
 * stays. Costs a query per run and a look only at the directories such warnings name.
 */
function clearReadableDirs(engine: Engine, unreadableNow: ReadonlySet<string>): void {
  for (const dir of engine.warnings.dirsOf(UNREADABLE_DIR_SOURCE)) {
    if (unreadableNow.has(dir) || !dirListable(dir)) continue;
    engine.warnings.replace({ conversationId: null, sessionId: null, source: UNREADABLE_DIR_SOURCE, sessionDir: dir }, []);
  }
}
