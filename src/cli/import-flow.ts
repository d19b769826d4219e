import type { SinkName } from '../config/settings.js';
import { EvermeError } from '../core/errors.js';
import { runPipeline, type RunSummary } from '../engine/run-pipeline.js';
import { importExport, type ImportExportSummary } from '../export/import-export.js';
import { sinkFrom, type SinceDay } from './flag-values.js';
import { createProgress } from './progress.js';
import type { FlowContext } from './base-command.js';

/** What `everme import` was asked: sessions since a day, or an export file into the local store. */
export interface ImportRequest {
  since?: SinceDay;
  fromExport?: string;
  sink?: SinkName;
  concurrency?: number;
  dryRun: boolean;
  /** With fromExport: load the file even if it was loaded before. */
  again?: boolean;
}

export type ImportOutcome = { kind: 'export'; loaded: ImportExportSummary } | { kind: 'sessions'; summary: RunSummary };

function checkImportRequest(request: ImportRequest): void {
  if (request.fromExport !== undefined && (request.since !== undefined || request.dryRun || request.sink === 'everme')) {
    throw new EvermeError('invalid_args', '--from-export loads a file into the local store and takes no --since, --dry-run or --sink everme', {
      hint: 'Run `everme import --from-export FILE` on its own.',
    });
  }
  if (request.again && request.fromExport === undefined) {
    throw new EvermeError('invalid_args', '--again loads an export file again, and takes --from-export FILE', { hint: 'Run `everme import --from-export FILE --again`.' });
  }
  if (request.fromExport === undefined && request.since === undefined) {
    throw new EvermeError('invalid_args', 'Missing required flag since (the first day to import), or --from-export FILE', {
      hint: 'Pass --since YYYY-MM-DD (the first day to import), or --from-export FILE.',
    });
  }
}

/** `everme import`: the cold start over the sessions since a day, or the re-import of an export file. */
export async function runImport(request: ImportRequest, context: FlowContext): Promise<ImportOutcome> {
  checkImportRequest(request);
  const settings = context.settings();
  const { since } = request;
  if (since === undefined) return { kind: 'export', loaded: await importExport(settings, request.fromExport!, { again: request.again, signal: context.signal }) };
  const progress = createProgress('import', { json: context.json });
  const summary = await runPipeline({
    mode: 'import',
    settings,
    sink: sinkFrom(request.sink, settings),
    since: since.text,
    sinceMs: since.ms,
    concurrency: request.concurrency,
    dryRun: request.dryRun,
    signal: context.signal,
    onProgress: (p) => progress.update(p),
  }).finally(() => progress.stop());
  return { kind: 'sessions', summary };
}
