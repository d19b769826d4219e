import { Args } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { limitFlag, namingFlag, PROJECT_HINT, sinkFlag } from '../src/cli/flags.js';
import { writeStderr } from '../src/cli/output.js';
import { runSearch } from '../src/cli/search-flow.js';
import { formatHits, localOnlyNote } from '../src/recall/recall-markdown.js';
import { noHitsNote, searchResultJson, type SearchResultJson } from '../src/recall/search-output.js';

export default class Search extends EvermeCommand<typeof Search> {
  static override summary = 'Search your memories (full text, ranked by relevance)';
  static override description =
    "Searches the embedded store (BM25 ranking, snippets; Chinese, Japanese and Korean substrings of any length); when an API key is configured or --sink everme is given, the EverMe gateway too, its results next to the store's. The query is plain text: quotes, *, :, parentheses, NEAR, OR and - are searched for as text.";
  static override examples = [
    '<%= config.bin %> search "retry backoff"',
    '<%= config.bin %> search 优先级 --limit 5',
    '<%= config.bin %> search migration --project ~/src/widget --json',
  ];
  static override args = {
    query: Args.string({ description: 'what to look for', required: true }),
  };
  static override flags = {
    limit: limitFlag,
    project: namingFlag('only conversations whose workspace is this directory or lies under it (embedded store)', PROJECT_HINT),
    sink: sinkFlag('where to search (default: everme when an API key is configured, else local)'),
  };

  async run(): Promise<{ results: SearchResultJson[] }> {
    const { args, flags } = this;
    const request = { query: args.query, limit: flags.limit, project: flags.project, sink: flags.sink };
    const { result, sink, project } = await runSearch(request, this.flowContext());
    if (!this.jsonMode && result.gatewayFailure) writeStderr(`warning: ${localOnlyNote(result.gatewayFailure)} ${result.gatewayFailure.message}`);
    if (!this.jsonMode && result.hits.length === 0) writeStderr(noHitsNote(result, args.query, project));
    const meta = { sink, count: result.hits.length, ...(result.gatewayFailure ? { gatewayFailure: result.gatewayFailure } : {}) };
    return this.result({ results: result.hits.map(searchResultJson) }, () => formatHits(result.hits), meta);
  }
}
