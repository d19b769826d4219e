import { timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { secureHeaders } from 'hono/secure-headers';
import { h } from './html.js';

/**
 * The viewer serves memory to one browser on this machine and to nothing else:
 *
 * - **Host.** Only `127.0.0.1:<port>` (the address it serves). A page on another site that gets a
 *   DNS name pointed at 127.0.0.1 (DNS rebinding) sends its own name as Host and gets 403.
 * - **Secret.** Every request, pages and data alike, carries the per-launch secret: the URL printed
 *   at start has it as `?token=`, which the first visit trades for an HttpOnly, SameSite=Strict
 *   cookie (and a refresh that takes it out of the address bar). Without it: 401, no content.
 * - **Changes.** Only POST and DELETE change anything, and only with a same-origin `Origin` and the
 *   secret in the request itself (form field `_secret` or header `x-everme-secret`), not just in
 *   the cookie a browser attaches on its own. Other methods: 405.
 * - **Headers.** A strict Content-Security-Policy (this origin only, no inline script or style),
 *   no CORS headers at all, no caching, no referrer, no framing.
 */
export interface GuardOptions {
  secret: string;
  port: number;
}

export const SECRET_HEADER = 'x-everme-secret';
export const SECRET_FIELD = '_secret';
export const TOKEN_PARAM = 'token';
const READ_METHODS = new Set(['GET', 'HEAD']);
const CHANGE_METHODS = new Set(['POST', 'DELETE']);

export function cookieName(port: number): string {
  // Cookies ignore ports: two viewers on one machine must not overwrite each other's.
  return `everme_ui_${port}`;
}

function same(given: string | undefined, secret: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(secret);
  return a.length === b.length && timingSafeEqual(a, b);
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
  const cookie = cookieName(opts.port);
  return async (c, next) => {
    if (c.req.header('host') !== host) return deny(c, 403, `everme ui answers only to Host ${host}.`);
    const method = c.req.method;
    if (!READ_METHODS.has(method) && !CHANGE_METHODS.has(method)) {
      c.header('Allow', 'GET, HEAD, POST, DELETE');
      return deny(c, 405, `${method} is not allowed.`);
    }
    const query = READ_METHODS.has(method) ? c.req.query(TOKEN_PARAM) : undefined;
    const change = CHANGE_METHODS.has(method);
    const carried = change ? await explicitSecret(c) : undefined;
    const authorised = same(getCookie(c, cookie), opts.secret) || same(c.req.header(SECRET_HEADER), opts.secret) || same(query, opts.secret) || same(carried, opts.secret);
    if (!authorised) return deny(c, 401, 'everme ui: open the URL that `everme ui` printed; it carries this launch’s secret.');
    if (change) {
      if (c.req.header('origin') !== origin) return deny(c, 403, `A change must come from ${origin} (same-origin Origin header).`);
      if (!same(carried, opts.secret)) return deny(c, 403, `A change must carry the secret in the request itself (${SECRET_FIELD} field or ${SECRET_HEADER} header).`);
    }
    if (query !== undefined) {
      // Trade the URL's secret for the cookie, and take it out of the address bar and history. Not
      // by a redirect: when the visit came from another site (the launch file `everme ui` opens the
      // browser with is file://, a link in a mail), the browser would not send a Strict cookie along
      // the redirect it follows. A refresh from this page is a navigation of this site's own.
      setCookie(c, cookie, opts.secret, { httpOnly: true, sameSite: 'Strict', path: '/' });
      const url = new URL(c.req.url);
      url.searchParams.delete(TOKEN_PARAM);
      // A path that opens with `//` (or `/\`) would be a protocol-relative URL, another site: one slash.
      const target = `${url.pathname.replace(/^[/\\]+/, '/')}${url.search}`;
      return c.html(h`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${target}"><title>everme ui</title></head><body><p><a href="${target}">Open everme ui</a></p></body></html>`);
    }
    await next();
  };
}
