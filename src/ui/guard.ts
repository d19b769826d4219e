import { timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { secureHeaders } from 'hono/secure-headers';

/**
 * The viewer serves memory to one browser on this machine and to nothing else:
 *
 * - **Host.** Only `127.0.0.1:<port>` (the address it serves). A page on another site that gets a
 *   DNS name pointed at 127.0.0.1 (DNS rebinding) sends its own name as Host and gets 403.
 * - **Secret.** Every request, pages and data alike, carries the per-launch secret as the first
 *   segment of its path (`/<secret>/…`, see `paths.ts`). Not a cookie: a browser sends the cookies
 *   of 127.0.0.1 to every port of it, so any other local web server the user visits would get it.
 *   Without the prefix: 401, no content.
 * - **Changes.** Only POST and DELETE change anything, and only with a same-origin `Origin` and the
 *   secret in the request itself too (form field `_secret` or header `x-everme-secret`). Other
 *   methods: 405.
 * - **Headers.** A strict Content-Security-Policy (this origin only, no inline script or style),
 *   no CORS headers at all, no caching, a referrer (it holds the secret) only to this viewer itself,
 *   no framing.
 */
export interface GuardOptions {
  secret: string;
  port: number;
}

export const SECRET_HEADER = 'x-everme-secret';
export const SECRET_FIELD = '_secret';
const READ_METHODS = new Set(['GET', 'HEAD']);
const CHANGE_METHODS = new Set(['POST', 'DELETE']);

function same(given: string | undefined, secret: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(secret);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Whether the path is `/<secret>` or under it: its first segment compared in constant time. */
function underPrefix(pathname: string, secret: string): boolean {
  const end = pathname.indexOf('/', 1);
  return pathname.startsWith('/') && same(end < 0 ? pathname.slice(1) : pathname.slice(1, end), secret);
}

function deny(c: Context, status: 401 | 403 | 405, message: string): Response {
  c.header('Content-Type', 'text/plain; charset=utf-8');
  return c.body(`${message}\n`, status);
}

/** The secret a state-changing request carries itself: a header, or the form field. */
async function explicitSecret(c: Context): Promise<string | undefined> {
  const header = c.req.header(SECRET_HEADER);
  if (header !== undefined) return header;
  const type = c.req.header('content-type') ?? '';
  if (!type.startsWith('application/x-www-form-urlencoded') && !type.startsWith('multipart/form-data')) return undefined;
  const body = await c.req.parseBody({ all: true });
  const field = body[SECRET_FIELD];
  return typeof field === 'string' ? field : undefined;
}

export function securityHeaders(): MiddlewareHandler {
  const secure = secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'"],
      connectSrc: ["'self'"],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
      baseUri: ["'none'"],
    },
    // Not no-referrer: with it Chromium sends `Origin: null` on a form POST, and same-origin changes
    // could not be told from cross-origin ones. Same-origin sends a referrer only to this viewer.
    referrerPolicy: 'same-origin',
    xFrameOptions: 'DENY',
    crossOriginResourcePolicy: 'same-origin',
    crossOriginOpenerPolicy: 'same-origin',
    // Plain http on loopback: HSTS would mean nothing here (browsers ignore it for IP addresses).
    strictTransportSecurity: false,
  });
  return async (c, next) => {
    await secure(c, async () => {
      await next();
      // Memory is never cached; the stylesheet and script (no memory in them) say otherwise.
      if (!c.res.headers.has('Cache-Control')) c.header('Cache-Control', 'no-store');
    });
  };
}

export function guard(opts: GuardOptions): MiddlewareHandler {
  const host = `127.0.0.1:${opts.port}`;
  const origin = `http://${host}`;
  return async (c, next) => {
    if (c.req.header('host') !== host) return deny(c, 403, `everme ui answers only to Host ${host}.`);
    const method = c.req.method;
    if (!READ_METHODS.has(method) && !CHANGE_METHODS.has(method)) {
      c.header('Allow', 'GET, HEAD, POST, DELETE');
      return deny(c, 405, `${method} is not allowed.`);
    }
    if (!underPrefix(c.req.path, opts.secret)) return deny(c, 401, 'everme ui: open the URL that `everme ui` printed; its path carries this launch’s secret.');
    if (CHANGE_METHODS.has(method)) {
      if (c.req.header('origin') !== origin) return deny(c, 403, `A change must come from ${origin} (same-origin Origin header).`);
      if (!same(await explicitSecret(c), opts.secret)) return deny(c, 403, `A change must carry the secret in the request itself (${SECRET_FIELD} field or ${SECRET_HEADER} header).`);
    }
    await next();
  };
}
