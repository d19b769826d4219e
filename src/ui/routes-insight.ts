import type { Hono } from 'hono';
import { WARNING_CODES, type WarningCode } from '../core/warnings.js';
import { sessionStartRecall } from '../recall/session-recall.js';
import { buildReport } from '../report/warning-report.js';
import { collectStatus } from '../status/status.js';
import { agentPage, type AgentPreview } from './pages/agent.js';
import { healthPage } from './pages/health.js';
import { warningsPage } from './pages/warnings.js';
import type { RouteContext } from './route-context.js';

/** What the user checks about capture and recall: the warnings, what the agent is told at session start, capture health. */
export function insightRoutes(app: Hono, r: RouteContext): void {
  const { data, paths } = r;
  app.get('/warnings', (c) => {
    const code = c.req.query('code') ?? '';
    const known = (WARNING_CODES as readonly string[]).includes(code) ? (code as WarningCode) : undefined;
    const report = buildReport(data.settings, known === undefined ? {} : { code: known }, { readonly: true });
    return r.page(c, r.frame('Warnings', 'warnings'), warningsPage(paths, report, known ?? ''));
  });

  app.get('/agent', async (c) => {
    const project = (c.req.query('project') ?? '').trim();
    const workspaces = data.local()?.workspaces() ?? [];
    let preview: AgentPreview | undefined;
    if (project !== '') {
      const budget = data.settings.recallChars;
      // The hook's own function and budget; a new session has no id yet, so none is left out.
      const { text, gatewayFailure } = await sessionStartRecall(data.settings, { project, sessionId: '', maxChars: budget });
      preview = {
        project,
        budget,
        ...(text === undefined ? { silence: budget <= 0 ? 'recall is off (EVERME_RECALL_CHARS=0)' : 'the store holds no conversation of this project' } : { text }),
        // The hook prints the store's part alone then: the page says so rather than pass it off as the whole block.
        ...(gatewayFailure ? { gatewayFailure: { type: gatewayFailure.type, message: gatewayFailure.message } } : {}),
      };
    }
    return r.page(c, r.frame('What the agent sees', 'agent'), agentPage(paths, workspaces, preview, data.gateway));
  });

  app.get('/health', async (c) => r.page(c, r.frame('Capture health', 'health'), healthPage(paths, await collectStatus(data.settings, { readonly: true }))));
}
