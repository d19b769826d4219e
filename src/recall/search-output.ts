import type { RecallHit, RecallSearch } from './recall.js';
import { quoteQuery } from './recall-markdown.js';

export type SearchResultJson = Pick<RecallHit, 'id' | 'source' | 'conversationId' | 'sessionId' | 'role' | 'timestamp' | 'snippet' | 'score'>;

/** One `everme search --json` result: exactly the documented shape, nothing store-specific leaks. */
export function searchResultJson(hit: RecallHit): SearchResultJson {
  return {
    id: hit.id,
    source: hit.source,
    conversationId: hit.conversationId,
    sessionId: hit.sessionId,
    role: hit.role,
    timestamp: hit.timestamp,
    snippet: hit.snippet,
    score: hit.score,
  };
}

/** The stderr note for a search that found nothing: an empty store says how to fill it. */
export function noHitsNote(result: RecallSearch, query: string, project: string | undefined): string {
  return result.storeEmpty
    ? 'no memories yet; run `everme import --since YYYY-MM-DD` (or `everme sync`) first'
    : `no memories match ${quoteQuery(query)}${project ? ` in ${project}` : ''}`;
}
