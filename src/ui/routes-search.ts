import type { Context, Hono } from 'hono';
import { toEvermeError } from '../core/errors.js';
import { redactOutput } from '../core/redact-output.js';
import type { RecallSearchOptions } from '../recall/recall.js';
import { MORE_RESULTS, ROLES, SEARCH_RESULTS, searchPage, searchResults, type SearchFilters, type SearchOutcome } from './pages/search.js';
import type { RouteContext } from './route-context.js';


const DATE = /^\d{4}-\d{2}-\d{2}$/;

function dayStart(text: string): number | undefined {
  if (!DATE.test(text)) return undefined;
  const ms = Date.parse(`${text}T00:00:00Z`);
  return Number.isNaN(ms) ? undefined : ms;
}

function filtersFrom(c: Context): SearchFilters {
  const pick = (name: string) => (c.req.query(name) ?? '').trim();
  const role = pick('role');
  return {
    limit: pick('limit') === String(MORE_RESULTS) ? MORE_RESULTS : SEARCH_RESULTS,
    q: c.req.query('q') ?? '',
    project: pick('project'),
    role: (ROLES as readonly string[]).includes(role) ? role : '',
    from: DATE.test(pick('from')) ? pick('from') : '',
    to: DATE.test(pick('to')) ? pick('to') : '',
  };
}

/** The recall options the filters name: project, role and a UTC date range (inclusive days). */
function recallFilters(f: SearchFilters): Omit<RecallSearchOptions, 'limit' | 'marks'> {
  const from = dayStart(f.from);
  const to = dayStart(f.to);
  return {
    ...(f.project === '' ? {} : { project: f.project }),
    ...(f.role === '' ? {} : { role: f.role as (typeof ROLES)[number] }),
    ...(from === undefined ? {} : { since: from }),
    ...(to === undefined ? {} : { until: to + 86_400_000 }),
  };
}

/** Search as you type: the page with its filters, and the results fragment the page script fetches. */
export function searchRoutes(app: Hono, r: RouteContext): void {
  const { data, paths } = r;
  const search = async (filters: SearchFilters): Promise<SearchOutcome | undefined> => {
    if (filters.q.trim() === '') return undefined;
    try {
      // The same call `mem_search` and `everme search` make: same ranking, same snippets (their marks
      // as sentinels, which a `**` in the stored text cannot fake). The filters
      // apply inside its ranking query, so they rank every match that passes, however low overall.
      const result = await data.recall.search(filters.q, { limit: filters.limit, ...recallFilters(filters), marks: 'sentinels' });
      return { filters, hits: result.hits, storeEmpty: result.storeEmpty, ...(result.gatewayFailure ? { gatewayFailure: result.gatewayFailure } : {}) };
    } catch (err) {
      const e = toEvermeError(err);
      return { filters, hits: [], storeEmpty: false, error: redactOutput(`Search failed (${e.type}): ${e.message}`) };
    }
  };

  app.get('/search', async (c) => {
    const filters = filtersFrom(c);
    const workspaces = data.local()?.workspaces() ?? [];
    return r.page(c, r.frame('Search', 'search'), searchPage(paths, filters, workspaces, await search(filters)));
  });

  app.get('/search/results', async (c) => c.html(searchResults(paths, await search(filtersFrom(c)))));
}
