import type { Context } from 'hono';
import { Forgetter } from '../forget/forget.js';
import type { Html } from './html.js';
import { layout, type PageFrame } from './layout.js';
import type { ViewerPaths } from './paths.js';
import type { ViewerData } from './viewer-data.js';
import { redactOutput } from '../core/redact-output.js';
import { isDatabaseMissing } from '../store/database-reader.js';

/** What every group of the viewer's routes shares: the data, the launch secret and its paths, the clock, and the page frame. */
export interface RouteContext {
  data: ViewerData;
  secret: string;
  paths: ViewerPaths;
  now: () => number;
  frame(title: string, nav?: PageFrame['nav']): PageFrame;
  page(c: Context, frame: PageFrame, body: Html, status?: 200 | 400 | 404): Response | Promise<Response>;
  /**
   * A forget or undo with the same `Forgetter` the CLI uses, closed after each request. The store
   * must exist: a page never creates one (a missing store is `database_missing`).
   */
  withForgetter<T>(use: (f: Forgetter) => Promise<T> | T): Promise<T>;
  /** A plan, preview or list through a read-only `Forgetter`; `absent` when there is no store. */
  readForgetter<T>(use: (f: Forgetter) => T, absent: T): T;
}

export function routeContext(data: ViewerData, secret: string, paths: ViewerPaths, now: () => number): RouteContext {
  return {
    data,
    secret,
    paths,
    now,
    frame: (title, nav) => ({
      title,
      paths,
      ...(nav ? { nav } : {}),
      ...(data.gateway ? { gatewayBase: redactOutput(data.settings.apiBase) } : {}),
    }),
    page: (c, frame, body, status = 200) => c.html(layout(frame, body), status),
    withForgetter: async (use) => {
      const forgetter = Forgetter.open(data.settings, { mustExist: true });
      try {
        return await use(forgetter);
      } finally {
        forgetter.close();
      }
    },
    readForgetter: (use, absent) => {
      let forgetter: Forgetter;
      try {
        forgetter = Forgetter.open(data.settings, { readonly: true });
      } catch (err) {
        if (isDatabaseMissing(err)) return absent;
        throw err;
      }
      try {
        return use(forgetter);
      } finally {
        forgetter.close();
      }
    },
  };
}
