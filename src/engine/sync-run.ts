import type { Settings, SinkName } from '../config/settings.js';
import type { SessionRef } from '../transcript/types.js';
import { locateNamedSession } from '../transcript/session-locate.js';
import { openEngine, type Engine } from './engine-context.js';
import { runPipeline, type RunProgress, type RunSummary } from './run-pipeline.js';
import { syncHorizon } from './sync-horizon.js';

export interface SyncRequest {
  dataDir: string;
  settings: Settings;
  sink: SinkName;
  /** Only this session (`--session`): found where it was last seen, else by the session finder. */
  session?: string;
  /** `--since`; otherwise the horizon the earliest import set (see `syncHorizon`). */
  sinceMs?: number;
  concurrency?: number;
  signal?: AbortSignal;
  onProgress?: (progress: RunProgress) => void;
}

/** `everme sync`: what is new in changed sessions since the horizon, to every sink of the setup. */
export async function runSync(request: SyncRequest): Promise<RunSummary> {
  const { settings, sink } = request;
  const engine = openEngine(settings, sink);
  try {
    const sessions = request.session === undefined ? undefined : [await findSession(engine, request.dataDir, request.session)];
    const horizon = syncHorizon(engine.runs, request.sinceMs);
    return await runPipeline({
      mode: 'sync',
      settings,
      sink,
      engine,
      sessions,
      sinceMs: horizon.sinceMs,
      since: horizon.since,
      concurrency: request.concurrency,
      signal: request.signal,
      onProgress: request.onProgress,
    });
  } finally {
    engine.close();
  }
}

async function findSession(engine: Engine, dataDir: string, sessionId: string): Promise<SessionRef> {
  const found = await locateNamedSession(dataDir, sessionId, {
    remembered: engine.marks.sessions.dirFor(sessionId),
    hint: 'Session ids look like mvs_ followed by 32 hex digits; `everme status` shows the data dir in use.',
  });
  engine.marks.sessions.rememberDir(found.sessionId, found.dir);
  return found;
}
