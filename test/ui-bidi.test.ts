/**
 * A bidi control in stored text (U+202E, RIGHT-TO-LEFT OVERRIDE) reverses what follows it on its
 * line unless that text is isolated: a workspace path holding one must not flip the id and score
 * a search result shows after it. Checked where it shows, in Chromium's layout.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from './support/browser.js';
import { cliEnv } from './support/cli-process.js';
import { startViewerProcess, type ViewerProcess } from './support/viewer-process.js';
import { buildStore, conversationIdFor } from './recall-store-fixture.js';
import { tempDir } from './transcript-helpers.js';

const WORD = 'kestrelbidiword';
const WORKSPACE = '/srv/projects/\u202Eevil';

let root: string;
let viewer: ViewerProcess;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  root = tempDir();
  const store = await buildStore([{ n: 1, workspace: WORKSPACE, createdAtMs: Date.UTC(2026, 8, 10, 8), texts: [`Where is the ${WORD}?`, `The \u202E${WORD} is here.`] }], root);
  viewer = await startViewerProcess(store.dataDir, cliEnv(root, { EVERME_STATE_DIR: store.stateDir }));
  browser = await launchChromium();
  page = await browser.newPage();
  page.setDefaultTimeout(60_000);
  await page.goto(viewer.url);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await viewer?.stop();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

/**
 * Where on screen (x of its left edge) the first occurrence of `text` inside `selector` is drawn.
 * A script string: the tests compile without the DOM's types.
 */
async function leftOf(p: Page, selector: string, text: string): Promise<number> {
  const script = `(() => {
    const root = document.querySelector(${JSON.stringify(selector)});
    const needle = ${JSON.stringify(text)};
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const at = node.textContent.indexOf(needle);
      if (at < 0) continue;
      const range = document.createRange();
      range.setStart(node, at);
      range.setEnd(node, at + needle.length);
      return range.getBoundingClientRect().left;
    }
    return null;
  })()`;
  const left = await p.evaluate<number | null>(script);
  if (left === null) throw new Error(`${text} is not in ${selector}`);
  return left;
}

describe('everme ui with bidi controls in stored text', { timeout: 120_000 }, () => {
  it('a search result shows its role, id and score left to right after a workspace holding U+202E', async () => {
    await page.goto(`${viewer.root}/search?q=${WORD}`);
    const meta = 'li.hit .meta';
    await page.locator(meta).first().waitFor();
    const role = await leftOf(page, meta, 'user');
    const id = await leftOf(page, meta, conversationIdFor(1));
    const score = await leftOf(page, meta, 'score');
    expect(role).toBeLessThan(id);
    expect(id).toBeLessThan(score);
  });
});
