import path from 'node:path';
import { Args, Flags } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { EvermeError } from '../src/core/errors.js';
import { writeStderr } from '../src/cli/output.js';
import { resolveDataDir } from '../src/config/data-dir.js';
import { defaultSink, loadSettings, type SinkName } from '../src/config/settings.js';
import { MAX_RECALL_LIMIT, openRecall, type RecallHit, type RecallSearch } from '../src/recall/recall.js';
import { formatHits, quoteQuery } from '../src/recall/recall-markdown.js';

/** Exactly the documented result shape: nothing store-specific leaks into the JSON contract. */
function jsonResult(hit: RecallHit) {
  return {
    conversationId: hit.conversationId,
    sessionId: hit.sessionId,
    role: hit.role,
    timestamp: hit.timestamp,
    snippet: hit.snippet,
    score: hit.score,
  };
}

const DEFAULT_LIMIT = 10;

function parseLimit(value: string): number {
  const limit = /^\s*\d{1,3}\s*$/.test(value) ? Number(value) : Number.NaN;
  if (!(limit >= 1 && limit <= MAX_RECALL_LIMIT)) {
    throw new EvermeError('invalid_args', `--limit must be a whole number from 1 to ${MAX_RECALL_LIMIT} (got ${JSON.stringify(value)})`, {
      code: 'invalid_limit',
      hint: 'See `everme search --help`.',
    });
  }
  return limit;
}

export default class Search extends EvermeCommand {
  static override summary = 'Search your memories (full text, ranked by relevance)';
  static override description =
    'Searches the embedded store (BM25 ranking, snippets; Chinese, Japanese and Korean substrings of any length), or the EverMe gateway when an API key is configured or --sink everme is given. The query is plain text: quotes, *, :, parentheses, NEAR, OR and - are searched for as text.';
  static override examples = [
    '<%= config.bin %> search "retry backoff"',
    '<%= config.bin %> search 优先级 --limit 5',
    '<%= config.bin %> search migration --project ~/src/widget --json',
  ];
  static override args = {
    query: Args.string({ description: 'what to look for', required: true }),
  };
  static override flags = {
    // A string parsed here: oclif's own integer parsing fails with a plain Error, not an invalid_args one.
    limit: Flags.string({ description: `how many results, ${MAX_RECALL_LIMIT} at most`, default: String(DEFAULT_LIMIT) }),
    project: Flags.string({ description: 'only conversations whose workspace is this directory or lies under it (embedded store)' }),
    sink: Flags.string({ description: 'where to search (default: everme when an API key is configured, else local)', options: ['local', 'everme'] }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Search);
    const limit = parseLimit(flags.limit);
    if (args.query.trim() === '') {
      throw new EvermeError('invalid_args', 'The search query is empty', { code: 'empty_query', hint: 'Pass the words to look for.' });
    }
    const settings = loadSettings(resolveDataDir(flags['data-dir']));
    const sink = (flags.sink as SinkName | undefined) ?? defaultSink(settings);
    const project = flags.project === undefined ? undefined : path.resolve(flags.project);
    if (project !== undefined && sink === 'everme' && !this.jsonMode) {
      writeStderr('note: --project filters the embedded store only; the EverMe gateway searches all your memories');
    }
    const recall = openRecall(settings, sink);
    let result: RecallSearch;
    try {
      result = await recall.search(args.query, { limit, project, signal: this.abort.signal });
    } finally {
      recall.close();
    }
    if (!this.jsonMode && result.hits.length === 0) {
      writeStderr(
        result.storeEmpty
          ? 'no memories yet; run `everme import --since YYYY-MM-DD` (or `everme sync`) first'
          : `no memories match ${quoteQuery(args.query)}${project ? ` in ${project}` : ''}`,
      );
    }
    this.emit({ results: result.hits.map(jsonResult) }, () => formatHits(result.hits), { sink, count: result.hits.length });
  }
}
