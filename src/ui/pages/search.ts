import { MAX_RECALL_LIMIT, parseMessageId, type RecallHit } from '../../recall/recall.js';
import type { WorkspaceSummary } from '../../store/viewer-store.js';
import { EMPTY, h, isolated, plural, snippetMarks, when, type Html } from '../html.js';
import { gatewayNotice, type GatewayFailure } from './gateway-notice.js';
import type { ViewerPaths } from '../paths.js';

/** Results shown as you type, filtered or not. */
export const SEARCH_RESULTS = 20;
/** What "show more" asks for: recall's own cap (a count of every match is not cheap to know). */
export const MORE_RESULTS = MAX_RECALL_LIMIT;

export const ROLES = ['user', 'assistant', 'tool'] as const;

export interface SearchFilters {
  /** How many results to show: 20 as you type, recall's cap of 50 after "show more". */
  limit: number;
  q: string;
  project: string;
  role: string;
  /** YYYY-MM-DD, UTC, inclusive. */
  from: string;
  to: string;
}

export interface SearchOutcome {
  filters: SearchFilters;
  hits: RecallHit[];
  storeEmpty: boolean;
  error?: string;
  /** With a key: the gateway could not be searched, so `hits` are the embedded store's alone. */
  gatewayFailure?: GatewayFailure;
}

function filtered(f: SearchFilters): boolean {
  return f.project !== '' || f.role !== '' || f.from !== '' || f.to !== '';
}

function filtersQuery(f: SearchFilters, limit?: number): string {
  const params = new URLSearchParams();
  // Named, not Object.entries: an interface has no index signature, so its values would be `any`.
  for (const k of ['q', 'project', 'role', 'from', 'to'] as const satisfies ReadonlyArray<keyof SearchFilters>) if (f[k] !== '') params.set(k, f[k]);
  if (limit !== undefined) params.set('limit', String(limit));
  return params.toString();
}

/**
 * What the count means. Fewer hits than asked for: that is every match. As many: there may be more
 * (counting them all is not cheap), so it says "the best N" and offers the best 50, then filters.
 */
function countLine(paths: ViewerPaths, filters: SearchFilters, n: number, more: number): Html {
  const among = filtered(filters) ? ' among the messages that pass the filters' : '';
  if (n < filters.limit) return h`<p class="muted" id="result-count">${plural(n, 'result')}, best first${among}.</p>`;
  const next =
    filters.limit < more
      ? h` <a href="${paths.to('/search', filtersQuery(filters, more))}" id="more-results">Show the best ${more}</a>`
      : h` More may match: add words or filters to reach them.`;
  return h`<p class="muted" id="result-count">The best ${n} matches${among}, best first.${next}</p>`;
}

/** The results block: the same markup for the whole page and for the fragment typing fetches. */
export function searchResults(paths: ViewerPaths, outcome: SearchOutcome | undefined): Html {
  if (!outcome) return h`<div id="results" aria-live="polite"><p class="muted">Type to search every stored message.</p></div>`;
  const { filters, hits } = outcome;
  const attrs = h`data-query="${filters.q}" data-count="${hits.length}"`;
  if (outcome.error) return h`<div id="results" aria-live="polite" ${attrs}><p class="banner" role="alert">${outcome.error}</p></div>`;
  if (outcome.storeEmpty) {
    return h`<div id="results" aria-live="polite" ${attrs}><p>No memories yet: run <code>everme import --since YYYY-MM-DD</code> (or <code>everme sync</code>) first.</p></div>`;
  }
  // Inside #results, so search-as-you-type brings it with the results it qualifies and takes it away with them.
  const partial = outcome.gatewayFailure
    ? gatewayNotice(paths, outcome.gatewayFailure, 'These results are from this machine only.', 'The EverMe gateway could not be searched, so memories only it holds are not among them.')
    : EMPTY;
  if (hits.length === 0) return h`<div id="results" aria-live="polite" ${attrs}>${partial}<p>No memories match <q>${filters.q}</q>${filtered(filters) ? ' with these filters' : ''}.</p></div>`;
  const items = hits.map((hit, i) => {
    // A local hit's id (`m<row id>`) opens its conversation at the message; a gateway memory has none.
    const messageId = hit.source === 'local' && hit.id !== null ? parseMessageId(hit.id) : undefined;
    const open = hit.conversationId !== null && messageId !== undefined ? paths.conversation(hit.conversationId, messageId) : undefined;
    const select =
      hit.conversationId === null
        ? EMPTY
        : h`<input type="checkbox" name="c" value="${hit.conversationId}" id="pick-${i}"><label class="visually-hidden" for="pick-${i}">Select conversation ${hit.conversationId} to forget</label>`;
    const head = h`${hit.role ?? 'message'} · ${when(hit.timestamp)} · ${isolated(hit.workspaceDir ?? '')}`;
    return h`<li class="hit" data-conversation="${hit.conversationId ?? ''}" data-message="${messageId ?? ''}">
${select}
<div><div class="meta">${i + 1}. ${open ? h`<a href="${open}">${head}</a>` : head} <span class="muted">${hit.conversationId === null ? 'from the EverMe gateway' : isolated(hit.conversationId)}${hit.score === null ? '' : ` · score ${hit.score.toFixed(2)}`}</span></div>
<div class="snippet">${snippetMarks(hit.snippet)}</div></div>
</li>`;
  });
  return h`<div id="results" aria-live="polite" ${attrs}>
${partial}
${countLine(paths, filters, hits.length, MORE_RESULTS)}
<form method="get" action="${paths.to('/forget')}" aria-label="Forget selected conversations">
<ol class="hits">${items}</ol>
<div class="actions"><button type="submit" class="danger">Forget the selected conversations…</button></div>
</form>
<p class="muted"><a href="${paths.to('/search', filtersQuery(filters, filters.limit === SEARCH_RESULTS ? undefined : filters.limit))}">Link to these results</a></p>
</div>`;
}

export function searchPage(paths: ViewerPaths, filters: SearchFilters, workspaces: WorkspaceSummary[], outcome: SearchOutcome | undefined): Html {
  const projects = workspaces.flatMap((w) => (w.workspaceDir === undefined ? [] : [w.workspaceDir]));
  if (filters.project !== '' && !projects.includes(filters.project)) projects.unshift(filters.project);
  const option = (value: string, label: string, selected: boolean) => h`<option value="${value}"${selected ? h` selected` : ''}>${label}</option>`;
  return h`<h1>Search</h1>
<form class="filters" id="search-form" method="get" action="${paths.to('/search')}" data-results="${paths.to('/search/results')}" role="search">
<label for="q">Words to find<input type="search" id="q" name="q" value="${filters.q}" autocomplete="off" autofocus></label>
<label for="project">Project<select id="project" name="project">${option('', 'All projects', filters.project === '')}${projects.map((p) => option(p, p, p === filters.project))}</select></label>
<label for="role">Role<select id="role" name="role">${option('', 'Any role', filters.role === '')}${ROLES.map((r) => option(r, r, r === filters.role))}</select></label>
<label for="from">From (UTC)<input type="date" id="from" name="from" value="${filters.from}"></label>
<label for="to">To (UTC)<input type="date" id="to" name="to" value="${filters.to}"></label>
<button type="submit">Search</button>
</form>
${searchResults(paths, outcome)}`;
}
