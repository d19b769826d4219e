import type { Hono } from 'hono';
import { conversationIdCandidates } from '../core/conversation-id.js';
import { buildReport } from '../report/warning-report.js';
import { h } from './html.js';
import { conversationPage } from './pages/conversation.js';
import { conversationLabel, projectPage, projectsPage } from './pages/projects.js';
import type { RouteContext } from './route-context.js';

/** Days the activity chart covers. */
export const CHART_DAYS = 90;
/** Messages a conversation page shows at once. */
export const PAGE_MESSAGES = 200;
/** Conversations a project page lists. */
export const PROJECT_CONVERSATIONS = 500;

/** Browsing the store: the projects with their activity, one project's conversations, one conversation. */
export function browseRoutes(app: Hono, r: RouteContext): void {
  const { data, paths } = r;
  app.get('/', (c) => {
    const store = data.local();
    const workspaces = store?.workspaces() ?? [];
    const days = store?.messagesPerDay(r.now(), CHART_DAYS) ?? [];
    return r.page(c, r.frame('Projects', 'projects'), projectsPage(paths, workspaces, days, store === undefined));
  });

  app.get('/project', (c) => {
    const dir = c.req.query('dir');
    const unknown = c.req.query('unknown') === '1';
    if ((dir === undefined || dir === '') && !unknown) return c.redirect(paths.to('/'), 303);
    const store = data.local();
    const workspace = unknown ? undefined : dir;
    const asked = Number(c.req.query('offset'));
    const offset = Number.isSafeInteger(asked) && asked > 0 ? asked : 0;
    // One past the page tells whether an older page follows; a page deep in a large project reads
    // the newer ones too, which costs milliseconds.
    const list = store?.conversations(workspace, offset + PROJECT_CONVERSATIONS + 1) ?? [];
    const page = { offset, size: PROJECT_CONVERSATIONS, older: list.length > offset + PROJECT_CONVERSATIONS };
    return r.page(c, r.frame(workspace ?? 'Workspace unknown', 'projects'), projectPage(paths, workspace, list.slice(offset, offset + PROJECT_CONVERSATIONS), page));
  });

  app.get('/conversation/:id', (c) => {
    const store = data.local();
    // The id as listed; a session id typed by hand finds its conversation too.
    const candidates = conversationIdCandidates(c.req.param('id'));
    const id = candidates.find((candidate) => store?.conversation(candidate)) ?? candidates.at(-1)!;
    const conversation = store?.conversation(id);
    if (!store || !conversation) {
      return r.page(c, r.frame('Not found'), h`<h1>Not in the store</h1><p><code>${id}</code> is not held on this machine (forgotten, or never imported).</p><p><a href="${paths.to('/forgotten')}">Forgotten conversations</a></p>`, 404);
    }
    const m = Number(c.req.query('m'));
    const offset = Number(c.req.query('offset'));
    const targetId = Number.isSafeInteger(m) && m > 0 ? m : undefined;
    const window = store.messages(id, { size: PAGE_MESSAGES, ...(targetId !== undefined ? { aroundId: targetId } : Number.isSafeInteger(offset) ? { offset } : {}) });
    // Read-only, as the page itself: a busy store is no reason to wait, a missing one is not created.
    const report = buildReport(data.settings, { conversation: id }, { readonly: true });
    const sent = r.readForgetter((f) => f.plan({ kind: 'conversation', conversationId: id })[0]?.sentToGateway ?? false, false);
    return r.page(
      c,
      // The tab says what the heading says.
      r.frame(conversationLabel(conversation)),
      conversationPage(paths, { conversation, window, pageSize: PAGE_MESSAGES, ...(targetId === undefined ? {} : { targetId }), warnings: report.conversations, sentToGateway: sent }),
    );
  });
}
