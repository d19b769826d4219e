import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Hono, type Context } from 'hono';
import { EvermeError, toEvermeError } from '../core/errors.js';
import { findPackageRoot } from '../core/package-root.js';
import { redactOutput } from '../core/redact-output.js';
import { WARNING_CODES, type WarningCode } from '../core/warnings.js';
import { Forgetter, type ForgetCandidate } from '../forget/forget.js';
import { conversationIdCandidates } from '../core/conversation-id.js';
import type { RecallSearchOptions } from '../recall/recall.js';
import { sessionStartContext } from '../recall/session-recall.js';
import { buildReport } from '../report/warning-report.js';
import { collectStatus } from '../status/status.js';
import { guard, securityHeaders } from './guard.js';
import { h, type Html } from './html.js';
import { layout, type PageFrame } from './layout.js';
import { agentPage, type AgentPreview } from './pages/agent.js';
import { conversationPage } from './pages/conversation.js';
import { forgetDonePage, forgetPreviewPage, forgottenPage } from './pages/forget.js';
import { healthPage } from './pages/health.js';
import { projectPage, projectsPage } from './pages/projects.js';
import { ROLES, searchPage, searchResults, type SearchFilters, type SearchOutcome } from './pages/search.js';
import { warningsPage } from './pages/warnings.js';
import { VIEWER_CSS } from './style.js';
import type { ViewerData } from './viewer-data.js';

export interface ViewerAppOptions {
  data: ViewerData;
  secret: string;
  port: number;
  /** The clock the activity chart ends at (tests pin it). */
  now?: () => number;
}

/** Days the activity chart covers. */
export const CHART_DAYS = 90;
/** Messages a conversation page shows at once. */
export const PAGE_MESSAGES = 200;
/** Conversations a project page lists. */
export const PROJECT_CONVERSATIONS = 500;
/** Results shown as you type, filtered or not. */
export const SEARCH_RESULTS = 20;
/** At most this many conversations in one forget from the viewer (a search selection is at most 50). */
const MAX_FORGET = 100;

/** The browser script, built by `npm run build` (tsconfig.client.json) next to this module's build. */
function clientScript(): string | undefined {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const root = findPackageRoot(here);
  const candidates = [path.join(here, 'client', 'viewer.js'), ...(root ? [path.join(root, 'dist', 'src', 'ui', 'client', 'viewer.js')] : [])];
  const found = candidates.find((file) => existsSync(file));
  return found === undefined ? undefined : readFileSync(found, 'utf8');
}

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
    q: c.req.query('q') ?? '',
    project: pick('project'),
    role: (ROLES as readonly string[]).includes(role) ? role : '',
    from: DATE.test(pick('from')) ? pick('from') : '',
    to: DATE.test(pick('to')) ? pick('to') : '',
  };
}

/** The recall options the filters name: project, role and a UTC date range (inclusive days). */
function recallFilters(f: SearchFilters): Omit<RecallSearchOptions, 'limit'> {
  const from = dayStart(f.from);
  const to = dayStart(f.to);
  return {
    ...(f.project === '' ? {} : { project: f.project }),
    ...(f.role === '' ? {} : { role: f.role as (typeof ROLES)[number] }),
    ...(from === undefined ? {} : { since: from }),
    ...(to === undefined ? {} : { until: to + 86_400_000 }),
  };
}

/**
 * The conversation ids a form or query names (`c`, repeated), as the pages listed them; `Forgetter`
 * resolves each as `everme forget --conversation` does (the id as shown, else a session id's).
 */
function conversationIds(values: string[]): string[] {
  const ids = [...new Set(values.map((v) => v.trim()).filter((v) => v !== ''))];
  if (ids.length > MAX_FORGET) throw new EvermeError('invalid_args', `At most ${MAX_FORGET} conversations at once`);
  return ids;
}

async function formValues(c: Context, name: string): Promise<string[]> {
  const body = await c.req.parseBody({ all: true });
  const value = body[name];
  const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return values.filter((v): v is string => typeof v === 'string');
}

export function createViewerApp(opts: ViewerAppOptions): Hono {
  const { data, secret } = opts;
  const now = opts.now ?? (() => Date.now());
  const script = clientScript();
  const app = new Hono();
  const frame = (title: string, nav?: PageFrame['nav']): PageFrame => ({
    title,
    ...(nav ? { nav } : {}),
    ...(data.gateway ? { gatewayBase: data.settings.apiBase } : {}),
  });
  const page = (c: Context, f: PageFrame, body: Html, status: 200 | 400 | 404 = 200) => c.html(layout(f, body), status);
  const withForgetter = async <T>(use: (f: Forgetter) => Promise<T> | T): Promise<T> => {
    const forgetter = Forgetter.open(data.settings);
    try {
      return await use(forgetter);
    } finally {
      forgetter.close();
    }
  };

  app.use('*', securityHeaders());
  app.use('*', guard({ secret, port: opts.port }));

  app.onError((err, c) => {
    const e = toEvermeError(err);
    const status = e.type === 'invalid_args' ? 400 : e.type === 'not_found' ? 404 : 500;
    return c.html(layout(frame('Error'), h`<h1>Something went wrong</h1><p role="alert">${redactOutput(e.message)}</p>${e.hint ? h`<p>${redactOutput(e.hint)}</p>` : ''}`), status);
  });
  app.notFound((c) => page(c, frame('Not found'), h`<h1>Not found</h1><p><a href="/">Back to the projects</a></p>`, 404));

  // Fetched by every page: cached for the browser session (still behind the secret), not per page.
  const ASSET_CACHE = 'private, max-age=3600';
  app.get('/assets/viewer.css', (c) => c.body(VIEWER_CSS, 200, { 'Content-Type': 'text/css; charset=utf-8', 'Cache-Control': ASSET_CACHE }));
  app.get('/assets/viewer.js', (c) =>
    script === undefined
      ? c.body('// the viewer script is not built: run `npm run build`\n', 404, { 'Content-Type': 'text/javascript; charset=utf-8' })
      : c.body(script, 200, { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': ASSET_CACHE }),
  );
  app.get('/favicon.ico', (c) => c.body(null, 204));

  app.get('/', (c) => {
    const store = data.local();
    const workspaces = store?.workspaces() ?? [];
    const days = store?.messagesPerDay(now(), CHART_DAYS) ?? [];
    return page(c, frame('Projects', 'projects'), projectsPage(workspaces, days, store === undefined));
  });

  app.get('/project', (c) => {
    const dir = c.req.query('dir');
    const unknown = c.req.query('unknown') === '1';
    if ((dir === undefined || dir === '') && !unknown) return c.redirect('/', 303);
    const store = data.local();
    const workspace = unknown ? undefined : dir;
    const list = store?.conversations(workspace, PROJECT_CONVERSATIONS) ?? [];
    return page(c, frame(workspace ?? 'Workspace unknown', 'projects'), projectPage(workspace, list, PROJECT_CONVERSATIONS));
  });

  app.get('/conversation/:id', async (c) => {
    const store = data.local();
    // The id as listed; a session id typed by hand finds its conversation too.
    const candidates = conversationIdCandidates(c.req.param('id'));
    const id = candidates.find((candidate) => store?.conversation(candidate)) ?? candidates.at(-1)!;
    const conversation = store?.conversation(id);
    if (!store || !conversation) {
      return page(c, frame('Not found'), h`<h1>Not in the store</h1><p><code>${id}</code> is not held on this machine (forgotten, or never imported).</p><p><a href="/forgotten">Forgotten conversations</a></p>`, 404);
    }
    const m = Number(c.req.query('m'));
    const offset = Number(c.req.query('offset'));
    const targetId = Number.isSafeInteger(m) && m > 0 ? m : undefined;
    const window = store.messages(id, { size: PAGE_MESSAGES, ...(targetId !== undefined ? { aroundId: targetId } : Number.isSafeInteger(offset) ? { offset } : {}) });
    const report = buildReport(data.settings, { conversation: id });
    const sent = await withForgetter((f) => f.plan({ kind: 'conversation', conversationId: id })[0]?.sentToGateway ?? false);
    return page(
      c,
      frame(conversation.firstUserText ?? id),
      conversationPage({ conversation, window, pageSize: PAGE_MESSAGES, ...(targetId === undefined ? {} : { targetId }), warnings: report.conversations, sentToGateway: sent }),
    );
  });

  const search = async (filters: SearchFilters): Promise<SearchOutcome | undefined> => {
    if (filters.q.trim() === '') return undefined;
    try {
      // The same call `mem_search` and `everme search` make: same ranking, same snippets. The filters
      // apply inside its ranking query, so they rank every match that passes, however low overall.
      const result = await data.recall.search(filters.q, { limit: SEARCH_RESULTS, ...recallFilters(filters) });
      return { filters, hits: result.hits, storeEmpty: result.storeEmpty };
    } catch (err) {
      const e = toEvermeError(err);
      return { filters, hits: [], storeEmpty: false, error: redactOutput(`Search failed (${e.type}): ${e.message}`) };
    }
  };

  app.get('/search', async (c) => {
    const filters = filtersFrom(c);
    const workspaces = data.local()?.workspaces() ?? [];
    return page(c, frame('Search', 'search'), searchPage(filters, workspaces, await search(filters)));
  });

  app.get('/search/results', async (c) => c.html(searchResults(await search(filtersFrom(c)))));

  app.get('/warnings', (c) => {
    const code = c.req.query('code') ?? '';
    const known = (WARNING_CODES as readonly string[]).includes(code) ? (code as WarningCode) : undefined;
    const report = buildReport(data.settings, known === undefined ? {} : { code: known });
    return page(c, frame('Warnings', 'warnings'), warningsPage(report, known ?? ''));
  });

  app.get('/agent', async (c) => {
    const project = (c.req.query('project') ?? '').trim();
    const workspaces = data.local()?.workspaces() ?? [];
    let preview: AgentPreview | undefined;
    if (project !== '') {
      const budget = data.settings.recallChars;
      // The hook's own function and budget; a new session has no id yet, so none is left out.
      const text = await sessionStartContext(data.settings, { project, sessionId: '', maxChars: budget });
      preview = {
        project,
        budget,
        ...(text === undefined ? { silence: budget <= 0 ? 'recall is off (EVERME_RECALL_CHARS=0)' : 'the store holds no conversation of this project' } : { text }),
      };
    }
    return page(c, frame('What the agent sees', 'agent'), agentPage(workspaces, preview, data.gateway));
  });

  app.get('/health', async (c) => page(c, frame('Capture health', 'health'), healthPage(await collectStatus(data.settings))));

  app.get('/forget', async (c) => {
    const ids = conversationIds(c.req.queries('c') ?? []);
    const preview = await withForgetter((f) => f.dryRun(ids.flatMap((id): ForgetCandidate[] => f.plan({ kind: 'conversation', conversationId: id }))));
    return page(c, frame('Forget'), forgetPreviewPage(preview, secret));
  });

  app.post('/forget', async (c) => {
    const ids = conversationIds(await formValues(c, 'c'));
    if (ids.length === 0) return page(c, frame('Forget'), h`<h1>Forget</h1><p>Nothing was selected, so nothing was forgotten.</p>`, 400);
    const result = await withForgetter((f) => f.apply(ids.flatMap((id) => f.plan({ kind: 'conversation', conversationId: id }))));
    return page(c, frame('Forgotten'), forgetDonePage(result, secret));
  });

  app.post('/forget/undo', async (c) => {
    const [id] = conversationIds(await formValues(c, 'c'));
    if (id === undefined) return page(c, frame('Forgotten'), h`<h1>Undo</h1><p>No conversation was named.</p>`, 400);
    const { undone, tombstones } = await withForgetter((f) => ({ undone: f.undo(id), tombstones: f.forgotten() }));
    return page(c, frame('Forgotten', 'forgotten'), forgottenPage(tombstones, secret, undone));
  });

  app.get('/forgotten', async (c) => page(c, frame('Forgotten', 'forgotten'), forgottenPage(await withForgetter((f) => f.forgotten()), secret)));

  return app;
}
