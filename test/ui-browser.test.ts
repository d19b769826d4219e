import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { cliEntry } from './support/cli.js';
import { envelopeOf, runCli } from './support/cli-process.js';
import { launchChromium } from './support/browser.js';
import { startFakeGateway, type FakeGateway } from './support/fake-gateway.js';
import { startViewerProcess, type ViewerProcess } from './support/viewer-process.js';
import { writeLaunchFile } from '../src/ui/open-browser.js';
import { ALPHA, AWS_KEY, BETA, buildViewerFixture, RECALL_CHARS, WORDS, type ViewerFixture } from './support/viewer-fixture.js';

/**
 * What the page-side callbacks touch of an element: the tests' program has Node's types, not the
 * DOM's, so Playwright's element type does not resolve here.
 */
interface PageElement {
  getAttribute(name: string): string | null;
  querySelector(selector: string): { textContent: string | null } | null;
  classList: ArrayLike<string>;
}

/**
 * `everme ui` in a real browser: Debian's Chromium, headless, driven by playwright-core, against
 * the viewer spawned as a process over a store the real import built. Every request the browser
 * makes is recorded: none may leave 127.0.0.1.
 */
let fx: ViewerFixture;
let viewer: ViewerProcess;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const requests: string[] = [];
const pageErrors: string[] = [];

beforeAll(async () => {
  fx = await buildViewerFixture();
  viewer = await startViewerProcess(fx.dataDir, fx.env);
  browser = await launchChromium();
  context = await browser.newContext();
  context.on('request', (r) => requests.push(r.url()));
  page = await context.newPage();
  // Actions wait longer than Playwright's 30 s default: on a loaded two-core machine a page that
  // spawns nothing can still take seconds.
  page.setDefaultTimeout(60_000);
  page.on('pageerror', (err) => pageErrors.push(err.message));
  // The URL as printed: the home page, under the launch's secret path (every page lives under it).
  await page.goto(viewer.url);
}, 60_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await viewer?.stop();
  fx?.cleanup();
});

function cli(args: string[]) {
  return runCli([...args, '--data-dir', fx.dataDir], fx.env);
}

async function cliSearch(word: string, limit = 20): Promise<Array<{ id: string; conversationId: string; snippet: string; role: string }>> {
  const r = await cli(['search', word, '--limit', String(limit), '--json']);
  expect(r.code, r.stderr).toBe(0);
  return (envelopeOf(r).data as { results: Array<{ id: string; conversationId: string; snippet: string; role: string }> }).results;
}

/** Types `word` into a fresh search page (of this file's viewer unless told) and waits for its results. */
async function typeSearch(word: string, on: { page: Page; root: string } = { page, root: viewer.root }): Promise<void> {
  await on.page.goto(`${on.root}/search`);
  await on.page.getByLabel('Words to find').pressSequentially(word, { delay: 25 });
  await on.page.waitForSelector(`#results[data-query="${word}"]`, { timeout: 10_000 });
}

describe('everme ui in Chromium', { timeout: 90_000 }, () => {
  it('opens on the project list: every workspace with counts and last activity, the unknown ones grouped', async () => {
    await page.goto(`${viewer.root}/`);
    expect(new URL(page.url()).pathname).toBe(`${viewer.prefix}/`);
    expect(page.url()).not.toContain('token=');
    // A row's innerText is its cells, tab-separated.
    const rows = (await page.locator('#projects tbody tr').allInnerTexts()).map((row) => row.split('\t').map((cell) => cell.trim()));
    expect(rows.map((r) => r[0])).toEqual([ALPHA, BETA, expect.stringContaining('Workspace unknown')]);
    // alpha: the tool-call session (4 messages; the malformed line is skipped) and the hostile one (2).
    expect(rows[0]!.slice(1, 3)).toEqual(['2', '6']);
    expect(rows[1]!.slice(1, 3)).toEqual(['1', '2']);
    expect(rows[2]!.slice(1, 3)).toEqual(['1', '2']);
    expect(rows[0]![3]).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);
  });

  it('draws messages per day for the last 90 days as SVG, each day its own bar', async () => {
    await page.goto(`${viewer.root}/`);
    const bars = page.locator('#activity-chart rect.bar');
    expect(await bars.count()).toBe(90);
    const byDay = Object.fromEntries(
      await bars.evaluateAll((rects: PageElement[]) => rects.map((r) => [r.getAttribute('data-day') ?? '', Number(r.getAttribute('data-messages'))] as const)),
    ) as Record<string, number>;
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    expect(byDay[day(fx.days.alpha)]).toBe(4);
    expect(byDay[day(fx.days.beta)]).toBe(2);
    expect(byDay[day(fx.days.unknown)]).toBe(2);
    expect(byDay[day(fx.days.hostile)]).toBe(2);
    expect(Object.values(byDay).reduce((a, b) => a + b, 0)).toBe(10);
    // The tallest bar is the alpha day; an empty day has no height.
    const heights = await bars.evaluateAll((rects: PageElement[]) => rects.map((r) => Number(r.getAttribute('height'))));
    expect(Math.max(...heights)).toBe(heights[Object.keys(byDay).indexOf(day(fx.days.alpha))]);
    expect(await page.locator('#activity-chart').getAttribute('aria-label')).toContain('10 messages');
  });

  it('lists a project’s conversations, and the warnings report filtered by code', async () => {
    await page.goto(`${viewer.root}/`);
    await page.getByRole('link', { name: ALPHA, exact: true }).click();
    expect(await page.locator('h1').textContent()).toBe(ALPHA);
    const links = await page.locator('#conversations tbody th a').allTextContents();
    expect(links).toHaveLength(2);
    expect(links.some((l) => l.includes(WORDS.alpha))).toBe(true);
    await page.goto(`${viewer.root}/warnings`);
    await page.getByLabel('Warning code').selectOption('invalid_json');
    await page.getByRole('button', { name: 'Filter' }).click();
    expect(await page.locator('#warnings').textContent()).toContain(fx.sessions.alpha);
    expect(await page.locator('#warnings').textContent()).toContain('messages.jsonl:4');
    await page.getByLabel('Warning code').selectOption('oversized_line');
    await page.getByRole('button', { name: 'Filter' }).click();
    expect(await page.locator('#no-warnings').textContent()).toContain('oversized_line');
  });

  it('searches as you type: marked results, ranked exactly as everme search / mem_search rank them', async () => {
    await typeSearch(WORDS.alpha);
    const shown = await page.locator('#results li.hit').evaluateAll((lis: PageElement[]) =>
      lis.map((li) => ({ conversationId: li.getAttribute('data-conversation'), snippet: li.querySelector('.snippet')?.textContent ?? '' })),
    );
    const expected = await cliSearch(WORDS.alpha);
    expect(expected.length).toBeGreaterThan(1);
    // Same hits in the same order; the page shows the snippet with its marks as <mark>.
    expect(shown).toEqual(expected.map((hit) => ({ conversationId: hit.conversationId, snippet: hit.snippet.replaceAll('**', '') })));
    const marks = await page.locator('#results mark').allTextContents();
    expect(marks.length).toBeGreaterThan(0);
    for (const m of marks) expect(m.toLowerCase()).toBe(WORDS.alpha);
    // The address now links these results.
    expect(new URL(page.url()).searchParams.get('q')).toBe(WORDS.alpha);
  });

  it('filters by role and by date', async () => {
    await typeSearch(WORDS.alpha);
    await page.getByLabel('Role').selectOption('tool');
    await page.waitForSelector('#results[data-count="1"]');
    expect(await page.locator('#results li.hit .meta').first().textContent()).toMatch(/^1\. tool/);
    await page.getByLabel('Role').selectOption('');
    const day = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel('From (UTC)').fill(day);
    await page.waitForSelector('#results[data-count="0"]');
    expect(await page.locator('#results').textContent()).toContain('with these filters');
  });

  it('opens a result at its message', async () => {
    await typeSearch(WORDS.alpha);
    const first = page.locator('#results li.hit').first();
    const messageId = await first.getAttribute('data-message');
    await first.locator('.meta a').click();
    await page.waitForSelector('.message.target');
    expect(page.url()).toContain(`m=${messageId}`);
    const target = page.locator('.message.target');
    expect(await target.getAttribute('id')).toBe(`m${messageId}`);
    expect((await target.textContent())?.toLowerCase()).toContain(WORDS.alpha);
    // Focused and in view, so the keyboard continues from it.
    expect(await page.evaluate('document.activeElement?.id')).toBe(`m${messageId}`);
  });

  it('opens a result found in a tool output with that output unfolded, so the match is on screen', async () => {
    const hit = (await cliSearch(WORDS.alpha)).find((h) => h.role === 'tool');
    expect(hit?.id).toMatch(/^m\d+$/);
    await typeSearch(WORDS.alpha);
    await page.locator(`#results li.hit[data-message="${hit!.id.slice(1)}"] .meta a`).click();
    await page.waitForSelector('.message.target');
    const output = page.locator('.message.target details.tool-result');
    expect(await output.getAttribute('open')).not.toBeNull();
    expect(await output.locator('pre').isVisible()).toBe(true);
    expect(await output.locator('pre').textContent()).toContain(WORDS.alpha);
    // The other messages' tools stay folded.
    expect(await page.locator('article.message:not(.target) details[open]').count()).toBe(0);
  });

  it('shows a conversation: roles distinct, tools collapsed under their names, masks visible, warnings inline', async () => {
    await page.goto(`${viewer.root}/conversation/minimaxcode-${fx.sessions.alpha}`);
    const roles = await page.locator('article.message').evaluateAll((as: PageElement[]) => as.map((a) => a.classList[1]));
    expect(roles).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const call = page.locator('details.tool-call');
    expect(await call.locator('summary').textContent()).toBe('tool call: bash');
    expect(await call.getAttribute('open')).toBeNull();
    expect(await page.locator('details.tool-result summary').textContent()).toContain('tool result: bash');
    await call.locator('summary').click();
    expect(await call.locator('pre').textContent()).toContain(`grep -r ${WORDS.alpha}`);
    expect(await page.locator('.placeholder.redacted').first().textContent()).toMatch(/^\[REDACTED:[\w.-]+\]$/);
    expect(await page.locator('.placeholder.private').textContent()).toBe('[PRIVATE]');
    const body = await page.locator('main').textContent();
    expect(body).not.toContain(AWS_KEY);
    expect(body).not.toContain('hunter2-secret');
    const warnings = page.locator('.warnings');
    expect(await warnings.textContent()).toContain('invalid_json');
    expect(await warnings.textContent()).toContain(fx.sessions.alpha);
    expect(await warnings.textContent()).toMatch(/started \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
    expect(await warnings.textContent()).toContain('messages.jsonl:4');
  });

  it('shows stored markup as text: nothing of it runs or loads', async () => {
    await page.goto(`${viewer.root}/conversation/minimaxcode-${fx.sessions.hostile}`);
    expect(await page.title()).not.toBe('pwned');
    expect(await page.locator('main img, main iframe, main script, main link').count()).toBe(0);
    expect(await page.locator('article.message.user .text').textContent()).toContain('<script>document.title=');
  });

  it('forgets a conversation after a preview with counts, then undoes it', { timeout: 120_000 }, async () => {
    await page.goto(`${viewer.root}/conversation/minimaxcode-${fx.sessions.beta}`);
    await page.getByRole('button', { name: 'Forget this conversation…' }).click();
    expect(await page.locator('#forget-summary').textContent()).toContain('1 conversation, 2 stored messages');
    await page.locator('#confirm-forget').click();
    expect(await page.locator('#forget-done').textContent()).toContain('2 messages removed');
    // Gone from the viewer's search, the CLI's search and the export.
    await typeSearch(WORDS.beta);
    expect(await page.locator('#results li.hit').count()).toBe(0);
    expect(await cliSearch(WORDS.beta)).toEqual([]);
    const exported = await cli(['export']);
    expect(exported.code).toBe(0);
    expect(exported.stdout).not.toContain(WORDS.beta);
    expect(exported.stdout).toContain(WORDS.alpha);

    await page.goto(`${viewer.root}/forgotten`);
    await page.getByRole('button', { name: `Undo forgetting minimaxcode-${fx.sessions.beta}` }).click();
    expect(await page.locator('#undo-done').textContent()).toContain('is no longer forgotten');
    expect(await page.locator('#no-tombstones').count()).toBe(1);
    // As after `everme forget --undo`: the next sync reads the session again.
    const synced = await cli(['sync', '--json']);
    expect(synced.code, synced.stderr).toBe(0);
    await typeSearch(WORDS.beta);
    expect(await page.locator('#results li.hit').count()).toBe(2);
  });

  it('forgets from a search selection, then undoes it', { timeout: 120_000 }, async () => {
    const before = await cliSearch(WORDS.unknown);
    expect(before.length).toBeGreaterThan(0);
    await typeSearch(WORDS.unknown);
    const box = page.locator('#results li.hit input[type="checkbox"]').first();
    await box.check();
    // Leaving the search box fires its `change`: the results must not reload and lose the tick.
    await page.waitForTimeout(1000);
    expect(await box.isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Forget the selected conversations…' }).click();
    await page.waitForURL(/\/forget\?c=/);
    expect(await page.locator('#forget-summary').textContent()).toContain('1 conversation, 2 stored messages');
    await page.locator('#confirm-forget').click();
    await page.waitForSelector('#forget-done');
    expect(await cliSearch(WORDS.unknown)).toEqual([]);
    // Undone, so the other tests see the fixture whole whatever order they run in.
    await page.goto(`${viewer.root}/forgotten`);
    await page.getByRole('button', { name: `Undo forgetting minimaxcode-${fx.sessions.unknown}` }).click();
    expect(await page.locator('#undo-done').textContent()).toContain('is no longer forgotten');
    const synced = await cli(['sync', '--json']);
    expect(synced.code, synced.stderr).toBe(0);
    expect((await cliSearch(WORDS.unknown)).map((hit) => hit.snippet)).toEqual(before.map((hit) => hit.snippet));
  });

  it('capture health: says what is wrong and the command that fixes it, before and after install with no hook events yet', async () => {
    await page.goto(`${viewer.root}/health`);
    expect(await page.locator('#health-problems').textContent()).toContain('Run `everme install`');
    const installed = await cli(['install', '--json']);
    expect(installed.code, installed.stderr).toBe(0);
    await page.goto(`${viewer.root}/health`);
    const problems = await page.locator('#health-problems').textContent();
    expect(problems).toContain('has not run one yet');
    expect(problems).toContain('Start a MiniMax Code session');
    expect(await page.locator('#arrivals').textContent()).toContain('none received');
    expect(await page.locator('#facts').textContent()).toContain('no hook runs yet');
  });

  it('shows what the agent sees at session start: byte for byte the hook’s output for the workspace', async () => {
    await page.goto(`${viewer.root}/agent`);
    await page.getByLabel('Project').selectOption(ALPHA);
    await page.getByRole('button', { name: 'Show' }).click();
    const shown = await page.locator('#agent-context').textContent();
    // The hook runs over a copy of the viewer's state: a hook run is an event received, and capture
    // health must still see none, whichever test runs first.
    const hook = await runHook({ hook_event_name: 'SessionStart', session_id: `mvs_${'f'.repeat(32)}`, cwd: ALPHA, source: 'startup' });
    expect(hook.code).toBe(0);
    expect(hook.stdout.length).toBeGreaterThan(100);
    expect(`${shown}\n`).toBe(hook.stdout);
    // The budget bit: a conversation was left out to fit it.
    expect(shown).toContain('1 more conversations not shown');
    expect(shown!.length).toBeLessThanOrEqual(RECALL_CHARS);
    expect(await page.locator('#agent-count').textContent()).toContain(`${shown!.length.toLocaleString('en-US')} characters of the ${RECALL_CHARS}-character budget`);
  });

  it('every control has a label, and the keyboard reaches the search box', async () => {
    for (const pathname of ['/', '/search', '/warnings', '/agent', '/forgotten', `/conversation/minimaxcode-${fx.sessions.alpha}`]) {
      await page.goto(`${viewer.root}${pathname}`);
      // Runs in the page (a string: the tests' TypeScript program has no DOM types).
      const unlabelled = await page.evaluate(`Array.from(document.querySelectorAll('input:not([type="hidden"]), select, button, textarea'))
        .filter((el) => el.labels.length === 0 && !el.getAttribute('aria-label') && !el.textContent.trim()).map((el) => el.outerHTML)`);
      expect(unlabelled, pathname).toEqual([]);
    }
    await page.goto(`${viewer.root}/`);
    let reached = false;
    for (let i = 0; i < 10 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = (await page.evaluate('document.activeElement?.textContent')) === 'Search';
    }
    expect(reached).toBe(true);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/search$/);
    expect(await page.evaluate('document.activeElement?.id')).toBe('q');
  });

  it('the launch file `everme ui` opens a browser with (file://, no secret in argv) lands on the viewer', async () => {
    // A fresh profile, as when the browser is started for the first time.
    const fresh = await browser.newContext();
    const launch = writeLaunchFile(viewer.url);
    try {
      const p = await fresh.newPage();
      await p.goto(pathToFileURL(launch.file).href);
      await p.waitForURL(`${viewer.root}/`);
      await p.waitForSelector('#projects');
      expect(await p.locator('#projects').textContent()).toContain(ALPHA);
    } finally {
      launch.remove();
      await fresh.close();
    }
  });

  it('made no request outside 127.0.0.1 and the secret path, and no script error', async () => {
    // Every page at least once, whatever ran before: the check covers them all.
    for (const pathname of ['/', '/search', '/warnings', '/agent', '/forgotten', '/health', `/conversation/minimaxcode-${fx.sessions.hostile}`]) {
      await page.goto(`${viewer.root}${pathname}`);
    }
    expect(requests.length).toBeGreaterThan(20);
    expect(requests.filter((url) => !url.startsWith(`${viewer.root}/`))).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});

/**
 * The same store with a gateway key: a second viewer, its own browser profile, and the loopback
 * gateway, taken down while the user types. Last, so the file's own viewer is left as it was.
 */
describe('everme ui in Chromium with a gateway key', { timeout: 90_000 }, () => {
  let gateway: FakeGateway;
  let keyed: ViewerProcess;
  let keyedContext: BrowserContext;
  let keyedPage: Page;

  beforeAll(async () => {
    gateway = await startFakeGateway();
    keyed = await startViewerProcess(fx.dataDir, { ...fx.env, EVERME_API_KEY: gateway.token, EVERME_API_BASE: gateway.url });
    keyedContext = await browser.newContext();
    keyedPage = await keyedContext.newPage();
    keyedPage.setDefaultTimeout(60_000);
    keyedPage.on('pageerror', (err) => pageErrors.push(err.message));
    await keyedPage.goto(keyed.url);
  }, 60_000);

  afterAll(async () => {
    await keyedContext?.close();
    await keyed?.stop();
    await gateway?.close();
  });

  it('says, as you type, when the gateway could not be searched and the results are this machine’s alone; nothing once it answers', async () => {
    const on = { page: keyedPage, root: keyed.root };
    await typeSearch(WORDS.alpha, on);
    expect(gateway.requestsTo('/mem/search').length).toBeGreaterThan(0);
    expect(await keyedPage.locator('#results li.hit').count()).toBeGreaterThan(0);
    expect(await keyedPage.locator('#gateway-failure').count()).toBe(0);

    await gateway.setDown(true);
    try {
      await typeSearch(WORDS.alpha, on);
      const notice = keyedPage.locator('#results #gateway-failure');
      expect(await notice.isVisible()).toBe(true);
      // A status the screen reader reads when it can, not an alert; the store's hits are still shown under it.
      expect(await notice.getAttribute('role')).toBe('status');
      const text = (await notice.innerText()).replace(/\s+/g, ' ');
      expect(text).toContain('These results are from this machine only.');
      expect(text).toContain('What failed: The EverMe gateway refused the connection.');
      expect(await keyedPage.locator('#results li.hit').count()).toBeGreaterThan(0);
      expect(await keyedPage.locator('main').innerText()).not.toContain(gateway.token);
    } finally {
      await gateway.setDown(false);
    }

    // Typing on with the gateway back: the fragment that replaces the results carries no notice.
    const box = keyedPage.getByLabel('Words to find');
    await box.fill('');
    await box.pressSequentially(WORDS.unknown, { delay: 25 });
    await keyedPage.waitForSelector(`#results[data-query="${WORDS.unknown}"]`, { timeout: 10_000 });
    expect(await keyedPage.locator('#results li.hit').count()).toBeGreaterThan(0);
    expect(await keyedPage.locator('#gateway-failure').count()).toBe(0);
    expect(pageErrors).toEqual([]);
  });
  it('what the agent sees says when the gateway’s context could not be fetched; nothing when it was', async () => {
    const agent = `${keyed.root}/agent?project=${encodeURIComponent(ALPHA)}`;
    await keyedPage.goto(agent);
    expect(await keyedPage.locator('#agent-context').isVisible()).toBe(true);
    expect(await keyedPage.locator('#gateway-failure').count()).toBe(0);

    gateway.failNext({ kind: 'http', status: 401, path: '/mem/context' });
    await keyedPage.goto(agent);
    const notice = keyedPage.locator('#gateway-failure');
    expect(await notice.isVisible()).toBe(true);
    expect(await notice.getAttribute('role')).toBe('status');
    const text = (await notice.innerText()).replace(/\s+/g, ' ');
    expect(text).toContain('This is this machine’s part alone.');
    expect(text).toContain('What failed: The EverMe gateway rejected the API key (HTTP 401');
    // The block the hook would print without the gateway: the project's conversations.
    expect(await keyedPage.locator('#agent-context').textContent()).toContain(WORDS.alpha);
    expect(await keyedPage.locator('main').innerText()).not.toContain(gateway.token);
    expect(pageErrors).toEqual([]);
  });
});


function runHook(payload: Record<string, unknown>): Promise<{ code: number | null; stdout: string }> {
  const stateCopy = fs.mkdtempSync(path.join(fx.root, 'state-copy-'));
  // The database with its -wal: what the viewer reads, nothing it has not committed.
  fs.cpSync(fx.stateDir, stateCopy, { recursive: true });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliEntry, 'hook'], { env: { ...fx.env, MINIMAX_DATA_DIR: fx.dataDir, EVERME_STATE_DIR: stateCopy }, stdio: ['pipe', 'pipe', 'ignore'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout }));
    child.stdin.end(JSON.stringify(payload));
  });
}
