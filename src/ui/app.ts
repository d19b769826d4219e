import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Hono } from 'hono';
import { toEvermeError } from '../core/errors.js';
import { findPackageRoot } from '../core/package-root.js';
import { redactOutput } from '../core/redact-output.js';
import { guard, securityHeaders } from './guard.js';
import { h } from './html.js';
import { layout } from './layout.js';
import { viewerPaths } from './paths.js';
import { routeContext } from './route-context.js';
import { browseRoutes } from './routes-browse.js';
import { forgetRoutes } from './routes-forget.js';
import { insightRoutes } from './routes-insight.js';
import { searchRoutes } from './routes-search.js';
import { VIEWER_CSS } from './style.js';
import type { ViewerData } from './viewer-data.js';

export interface ViewerAppOptions {
  data: ViewerData;
  secret: string;
  port: number;
  /** The clock the activity chart ends at (tests pin it). */
  now?: () => number;
}

/** The browser script, built by `npm run build` (tsconfig.client.json) next to this module's build. */
function clientScript(): string | undefined {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const root = findPackageRoot(here);
  const candidates = [path.join(here, 'client', 'viewer.js'), ...(root ? [path.join(root, 'dist', 'src', 'ui', 'client', 'viewer.js')] : [])];
  const found = candidates.find((file) => existsSync(file));
  return found === undefined ? undefined : readFileSync(found, 'utf8');
}

/** The viewer: its guard in front of everything, the static assets, then each group of routes. */
export function createViewerApp(opts: ViewerAppOptions): Hono {
  const { data, secret } = opts;
  const paths = viewerPaths(secret);
  const r = routeContext(data, secret, paths, opts.now ?? (() => Date.now()));
  const script = clientScript();
  // Not strict: the printed `/<secret>/` and a typed `/<secret>` are both the home page.
  const app = new Hono({ strict: false });

  app.use('*', securityHeaders());
  app.use('*', guard({ secret, port: opts.port }));

  app.onError((err, c) => {
    const e = toEvermeError(err);
    // Busy: another process holds the store's write lock; the page works again once it lets go.
    const status = e.type === 'invalid_args' ? 400 : e.type === 'not_found' || e.code === 'database_missing' ? 404 : e.code === 'database_busy' ? 503 : 500;
    return c.html(layout(r.frame('Error'), h`<h1>Something went wrong</h1><p role="alert">${redactOutput(e.message)}</p>${e.hint ? h`<p>${redactOutput(e.hint)}</p>` : ''}`), status);
  });
  app.notFound((c) => r.page(c, r.frame('Not found'), h`<h1>Not found</h1><p><a href="${paths.to('/')}">Back to the projects</a></p>`, 404));

  // Every route under the launch's secret prefix (the guard answers anything else with 401).
  const under = app.basePath(paths.base);

  // Fetched by every page: cached for the browser session (still behind the secret), not per page.
  const ASSET_CACHE = 'private, max-age=3600';
  under.get('/assets/viewer.css', (c) => c.body(VIEWER_CSS, 200, { 'Content-Type': 'text/css; charset=utf-8', 'Cache-Control': ASSET_CACHE }));
  under.get('/assets/viewer.js', (c) =>
    script === undefined
      ? c.body('// the viewer script is not built: run `npm run build`\n', 404, { 'Content-Type': 'text/javascript; charset=utf-8' })
      : c.body(script, 200, { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': ASSET_CACHE }),
  );
  under.get('/favicon.ico', (c) => c.body(null, 204));

  browseRoutes(under, r);
  searchRoutes(under, r);
  insightRoutes(under, r);
  forgetRoutes(under, r);
  return app;
}
