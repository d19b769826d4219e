import type { SinkName } from '../config/settings.js';
import type { RunSummary } from '../engine/run-pipeline.js';
import { runSync } from '../engine/sync-run.js';
import type { FlowContext } from './base-command.js';
import { sinkFrom, type SinceDay } from './flag-values.js';
import { createProgress } from './progress.js';
import { finishRun } from './run-output.js';

/** What `everme sync` was asked (its flags, parsed by oclif or by `sync-entry.ts`). */
export interface SyncRequest {
  session?: string;
  since?: SinceDay;
  sink?: SinkName;
  concurrency?: number;
}

/**
 * `everme sync`: what is new since the horizon, with progress on stderr; the summary once the run
 * succeeded (see `finishRun` for a failed one). Both entries to the command run this.
 */
export async function runSyncFlow(request: SyncRequest, context: FlowContext): Promise<RunSummary> {
  const settings = context.settings();
  const progress = createProgress('sync', { json: context.json });
  const summary = await runSync({
    dataDir: settings.dataDir,
    settings,
    sink: sinkFrom(request.sink, settings),
    session: request.session,
    sinceMs: request.since?.ms,
    concurrency: request.concurrency,
    signal: context.signal,
    onProgress: (p) => progress.update(p),
  }).finally(() => progress.stop());
  return finishRun(summary, context.json);
}
