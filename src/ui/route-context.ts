import type { Context } from 'hono';
import { Forgetter } from '../forget/forget.js';
import type { Html } from './html.js';
import { layout, type PageFrame } from './layout.js';
import type { ViewerData } from './viewer-data.js';
import { redactOutput } from '../core/redact-output.js';

/** What every group of the viewer's routes shares: the data, the launch secret, the clock, and the page frame. */
export interface RouteContext {
  data: ViewerData;
  secret: string;
  now: () => number;
  frame(title: string, nav?: PageFrame['nav']): PageFrame;
  page(c: Context, frame: PageFrame, body: Html, status?: 200 | 400 | 404): Response | Promise<Response>;
  /** A forget, undo or plan with the same `Forgetter` the CLI uses, closed after each request. */
  withForgetter<T>(use: (f: Forgetter) => Promise<T> | T): Promise<T>;
}

export function routeContext(data: ViewerData, secret: string, now: () => number): RouteContext {
  return {
    data,
    secret,
    now,
    frame: (title, nav) => ({
      title,
      ...(nav ? { nav } : {}),
      ...(data.gateway ? { gatewayBase: redactOutput(data.settings.apiBase) } : {}),
    }),
    page: (c, frame, body, status = 200) => c.html(layout(frame, body), status),
    withForgetter: async (use) => {
      const forgetter = Forgetter.open(data.settings);
      try {
        return await use(forgetter);
      } finally {
        forgetter.close();
      }
    },
  };
}
