import { resolveUserPath } from '../config/exclude.js';
import type { SinkName } from '../config/settings.js';
import { EvermeError } from '../core/errors.js';
import { openRecall, type RecallSearch } from '../recall/recall.js';
import { sinkFrom } from './flag-values.js';
import { writeStderr } from './output.js';
import type { FlowContext } from './base-command.js';

/** What `everme search` was asked. */
export interface SearchRequest {
  query: string;
  limit: number;
  project?: string;
  sink?: SinkName;
}

export interface SearchOutcome {
  result: RecallSearch;
  sink: SinkName;
  /** The --project directory, resolved (`~` expanded, as export and forget do). */
  project?: string;
}

/** `everme search`: one query against the embedded store or the gateway, whichever the sink names. */
export async function runSearch(request: SearchRequest, context: FlowContext): Promise<SearchOutcome> {
  if (request.query.trim() === '') {
    throw new EvermeError('invalid_args', 'The search query is empty', { code: 'empty_query', hint: 'Pass the words to look for.' });
  }
  const settings = context.settings();
  const sink = sinkFrom(request.sink, settings);
  const project = request.project === undefined ? undefined : resolveUserPath(request.project);
  if (project !== undefined && sink === 'everme' && !context.json) {
    writeStderr('note: --project filters the embedded store only; the EverMe gateway searches all your memories');
  }
  const recall = openRecall(settings, sink);
  try {
    const result = await recall.search(request.query, { limit: request.limit, project, signal: context.signal });
    return { result, sink, ...(project === undefined ? {} : { project }) };
  } finally {
    recall.close();
  }
}
