import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './support/browser.js';
import { rawRequest, startViewerProcess, type ViewerProcess } from './support/viewer-process.js';
import { buildViewerFixture, WORDS, type ViewerFixture } from './support/viewer-fixture.js';

/**
 * The launch's secret is the first segment of every path the viewer serves, never a cookie: a
 * browser sends the cookies of 127.0.0.1 to every port of it, so any other local web server the
 * user visits (a dev server, another tool's page) would receive the key to their memory.
 */
let fx: ViewerFixture;
let viewer: ViewerProcess;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const requests: string[] = [];

beforeAll(async () => {
  fx = await buildViewerFixture();
  viewer = await startViewerProcess(fx.dataDir, fx.env);
  browser = await launchChromium();
  context = await browser.newContext();
  context.on('request', (r) => requests.push(r.url()));
  page = await context.newPage();
  page.setDefaultTimeout(60_000);
}, 60_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await viewer?.stop();
  fx?.cleanup();
});

const conversation = () => `minimaxcode-${fx.sessions.alpha}`;

describe('everme ui: the secret path prefix', { timeout: 90_000 }, () => {
  it('the printed URL is the home page under a secret path, with no query', () => {
    expect(viewer.url).toBe(`${viewer.root}/`);
    expect(viewer.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new URL(viewer.url).search).toBe('');
  });

  it('the right port without the prefix, or with a wrong one, gets 401 and no memory', async () => {
    const { secret } = viewer;
    const flipped = `${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`;
    const wrong = [
      '/',
      `/search?q=${WORDS.alpha}`,
      `/search/results?q=${WORDS.alpha}`,
      `/conversation/${conversation()}`,
      '/assets/viewer.js',
      `/${'x'.repeat(secret.length)}/search?q=${WORDS.alpha}`,
      `/${flipped}/search?q=${WORDS.alpha}`,
      `/${secret}x/search?q=${WORDS.alpha}`,
      `/${secret.slice(0, -1)}/search?q=${WORDS.alpha}`,
      `/search/${secret}?q=${WORDS.alpha}`,
      // The old printed URL's form carries nothing now.
      `/?token=${secret}`,
      `/search?q=${WORDS.alpha}&token=${secret}`,
    ];
    // The right secret anywhere but the path opens nothing.
    const elsewhere: Array<Record<string, string>> = [{}, { 'x-everme-secret': secret }, { Cookie: `everme_ui_${viewer.port}=${secret}` }];
    for (const path of wrong) {
      for (const headers of elsewhere) {
        const r = await rawRequest({ port: viewer.port, path, headers });
        expect(r.status, `${path} ${JSON.stringify(headers)}`).toBe(401);
        expect(r.body).not.toContain(WORDS.alpha);
        expect(r.body).not.toContain(fx.sessions.alpha);
        expect(r.body.length).toBeLessThan(200);
      }
    }
    // The same requests under the prefix are served.
    const served = await rawRequest({ port: viewer.port, path: `${viewer.prefix}/search?q=${WORDS.alpha}` });
    expect(served.status).toBe(200);
    expect(served.body).toContain(`<mark>${WORDS.alpha}</mark>`);
    expect((await rawRequest({ port: viewer.port, path: viewer.prefix })).status).toBe(200);
  });

  it('after the viewer was used, another local web server the browser visits receives no cookie', async () => {
    // As a user would: the printed URL, then the viewer's own links.
    await page.goto(viewer.url);
    await page.waitForSelector('#projects');
    await page.getByRole('link', { name: 'Search', exact: true }).click();
    await page.waitForSelector('#search-form');
    const seen: Array<string | undefined> = [];
    const other: Server = createServer((req, res) => {
      seen.push(req.headers.cookie);
      res.setHeader('Content-Type', 'text/html; charset=utf-8');
      res.end('<!doctype html><title>another local tool</title><p id="other">another local tool</p><img src="/pixel.png" alt="">');
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = other.address() as AddressInfo;
      expect(port).not.toBe(viewer.port);
      await page.goto(`http://127.0.0.1:${port}/`);
      await page.waitForSelector('#other');
      await page.waitForLoadState('networkidle');
      expect(seen.length).toBeGreaterThanOrEqual(1);
      expect(seen.filter((cookie) => cookie !== undefined)).toEqual([]);
      expect(await context.cookies()).toEqual([]);
    } finally {
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });

  it('every link, form, asset and fetch of the home, search, session and forget pages stays under the prefix', async () => {
    const under = `${viewer.root}/`;
    const pages = [
      viewer.url,
      `${viewer.root}/search?q=${WORDS.alpha}`,
      `${viewer.root}/conversation/${conversation()}`,
      `${viewer.root}/forget?c=${conversation()}`,
      `${viewer.root}/forgotten`,
    ];
    const gets = new Set<string>();
    let targets = 0;
    for (const url of pages) {
      await page.goto(url);
      // Every address the page names, resolved as the browser resolves it (a string: the tests'
      // TypeScript program has no DOM types).
      const named = await page.evaluate<Array<{ url: string; get: boolean }>>(`Array.from(document.querySelectorAll('a[href], link[href], script[src], form, [data-results]')).flatMap((el) => {
        const out = [];
        if (el.tagName === 'FORM') out.push({ url: new URL(el.getAttribute('action') ?? '', location.href).href, get: (el.getAttribute('method') ?? 'get').toLowerCase() === 'get' });
        else if (el.tagName === 'SCRIPT') out.push({ url: el.src, get: true });
        else if (el.href) out.push({ url: el.href, get: true });
        if (el.dataset.results) out.push({ url: new URL(el.dataset.results, location.href).href, get: true });
        return out;
      })`);
      expect(named.length, url).toBeGreaterThan(5);
      for (const target of named) {
        expect(target.url, `on ${url}`).toMatch(new RegExp(`^${under.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
        if (target.get) gets.add(target.url.split('#')[0]!);
      }
      targets += named.length;
    }
    expect(targets).toBeGreaterThan(40);
    // Crawl one step: every address a GET reaches is served, none is refused for a missing secret.
    for (const url of gets) {
      const u = new URL(url);
      const r = await rawRequest({ port: viewer.port, path: `${u.pathname}${u.search}` });
      // 204: the favicon, which the viewer has none of.
      expect([200, 204, 303], url).toContain(r.status);
    }
    // Search as you type: the script's fetch and its address-bar update stay under the prefix too.
    requests.length = 0;
    await page.goto(`${viewer.root}/search`);
    await page.getByLabel('Words to find').pressSequentially(WORDS.beta, { delay: 25 });
    await page.waitForSelector(`#results[data-query="${WORDS.beta}"]`, { timeout: 10_000 });
    expect(page.url()).toBe(`${viewer.root}/search?q=${WORDS.beta}`);
    expect(requests.some((url) => url.startsWith(`${viewer.root}/search/results?`))).toBe(true);
    expect(requests.filter((url) => !url.startsWith(under))).toEqual([]);
  });
});
