import type { RunSummary } from '../engine/run-pipeline.js';
import { writeStderr } from './output.js';
import { invalidResponseLines, renderRunSummary, runOutcomeError, sessionIndexWarning } from './render-run.js';

/**
 * How import and sync end: the summary on success; on failure stdout stays empty, the summary of
 * what was done goes in front of the error on stderr, and the error decides the exit code.
 */
export function finishRun(summary: RunSummary, jsonMode: boolean): RunSummary {
  const indexWarning = sessionIndexWarning(summary);
  if (!jsonMode && indexWarning) writeStderr(indexWarning);
  if (!jsonMode) for (const line of invalidResponseLines(summary)) writeStderr(line);
  const failure = runOutcomeError(summary);
  if (failure) {
    if (!jsonMode) writeStderr(renderRunSummary(summary));
    throw failure;
  }
  return summary;
}
