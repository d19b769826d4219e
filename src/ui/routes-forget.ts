import type { Context, Hono } from 'hono';
import { EvermeError } from '../core/errors.js';
import type { ForgetCandidate, ForgetResult } from '../forget/forget.js';
import { withSessionOnDisk } from '../forget/undone.js';
import { h } from './html.js';
import { forgetDonePage, forgetPreviewPage, forgottenPage } from './pages/forget.js';
import type { RouteContext } from './route-context.js';

/** At most this many conversations in one forget from the viewer (a search selection is at most 50). */
const MAX_FORGET = 100;

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

/** Curating: the forget preview, the forget itself, its undo, and the list of what is forgotten. */
export function forgetRoutes(app: Hono, r: RouteContext): void {
  const { secret, paths } = r;
  app.get('/forget', (c) => {
    const ids = conversationIds(c.req.queries('c') ?? []);
    // A preview only reads; a conversation forgotten already is said to be, not offered again.
    const { preview, already } = r.readForgetter<{ preview: ForgetResult | undefined; already: string[] }>(
      (f) => {
        const planned = ids.flatMap((id): ForgetCandidate[] => f.plan({ kind: 'conversation', conversationId: id }));
        const forgotten = planned.filter((p) => f.isForgotten(p.conversationId));
        return { preview: f.dryRun(planned.filter((p) => !forgotten.includes(p))), already: forgotten.map((p) => p.conversationId) };
      },
      { preview: undefined, already: [] },
    );
    return r.page(c, r.frame('Forget'), forgetPreviewPage(paths, preview, already, secret));
  });

  app.post('/forget', async (c) => {
    const ids = conversationIds(await formValues(c, 'c'));
    if (ids.length === 0) return r.page(c, r.frame('Forget'), h`<h1>Forget</h1><p>Nothing was selected, so nothing was forgotten.</p>`, 400);
    const result = await r.withForgetter((f) => f.apply(ids.flatMap((id) => f.plan({ kind: 'conversation', conversationId: id }))));
    return r.page(c, r.frame('Forgotten'), forgetDonePage(paths, result, secret));
  });

  app.post('/forget/undo', async (c) => {
    const [id] = conversationIds(await formValues(c, 'c'));
    if (id === undefined) return r.page(c, r.frame('Forgotten'), h`<h1>Undo</h1><p>No conversation was named.</p>`, 400);
    const { lifted, tombstones } = await r.withForgetter((f) => ({ lifted: f.undo(id), tombstones: f.forgotten() }));
    // As `everme forget --undo`: a sync brings it back only when its session's files are here.
    const { dataDir } = r.data.settings;
    const undone = await withSessionOnDisk(dataDir, lifted);
    return r.page(c, r.frame('Forgotten', 'forgotten'), forgottenPage(paths, tombstones, secret, { undone, dataDir }));
  });

  app.get('/forgotten', (c) => r.page(c, r.frame('Forgotten', 'forgotten'), forgottenPage(paths, r.readForgetter((f) => f.forgotten(), []), secret)));
}
