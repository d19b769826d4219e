/**
 * A project's page lists its conversations a page at a time, newest first: every conversation the
 * home page counts can be reached by browsing, however many there are.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv } from './support/cli-process.js';
import { rawRequest, startViewerProcess, type ViewerProcess } from './support/viewer-process.js';
import { buildStore, conversationIdFor, type BuiltStore } from './recall-store-fixture.js';
import { tempDir } from './transcript-helpers.js';
import { PROJECT_CONVERSATIONS } from '../src/ui/routes-browse.js';

const PROJECT = '/srv/projects/bulk';
const SESSIONS = PROJECT_CONVERSATIONS + 7;
const HOUR = 3_600_000;

let root: string;
let store: BuiltStore;
let viewer: ViewerProcess;

beforeAll(async () => {
  root = tempDir();
  const sessions = Array.from({ length: SESSIONS }, (_, i) => ({ n: i + 1, workspace: PROJECT, createdAtMs: Date.UTC(2026, 5, 1) + i * HOUR, texts: [`question ${i + 1}`, `answer ${i + 1}`] }));
  store = await buildStore(sessions, root);
  viewer = await startViewerProcess(store.dataDir, cliEnv(root, { EVERME_STATE_DIR: store.stateDir }));
}, 300_000);

afterAll(async () => {
  await viewer?.stop();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

async function page(query: string): Promise<{ ids: string[]; body: string }> {
  const r = await rawRequest({ port: viewer.port, path: `${viewer.prefix}/project?dir=${encodeURIComponent(PROJECT)}${query}` });
  expect(r.status).toBe(200);
  return { ids: [...r.body.matchAll(/<span class="muted"><bdi>(minimaxcode-mvs_[0-9a-f]+)<\/bdi>/g)].map((m) => m[1]!), body: r.body };
}

describe('a project with more conversations than one page', () => {
  it('pages through every one of them, newest first, with links both ways', async () => {
    const first = await page('');
    expect(first.ids).toHaveLength(PROJECT_CONVERSATIONS);
    expect(first.ids[0]).toBe(conversationIdFor(SESSIONS));
    expect(first.body).toContain(`Conversations 1–${PROJECT_CONVERSATIONS}`);
    const older = /href="([^"]+)" rel="next">Older conversations/.exec(first.body)?.[1]?.replaceAll('&amp;', '&');
    expect(older).toBe(`${viewer.prefix}/project?dir=${encodeURIComponent(PROJECT)}&offset=${PROJECT_CONVERSATIONS}`);
    expect(first.body).not.toContain('rel="prev"');

    const second = await page(`&offset=${PROJECT_CONVERSATIONS}`);
    expect(second.ids).toEqual(Array.from({ length: 7 }, (_, i) => conversationIdFor(7 - i)));
    expect(second.body).toContain(`Conversations ${PROJECT_CONVERSATIONS + 1}–${SESSIONS}`);
    expect(second.body).toContain('rel="prev">Newer conversations');
    expect(second.body).not.toContain('rel="next"');
    // Every conversation once, across the two pages.
    expect(new Set([...first.ids, ...second.ids]).size).toBe(SESSIONS);
  });

  it('treats an offset that is no count as the first page', async () => {
    expect((await page('&offset=-3')).ids[0]).toBe(conversationIdFor(SESSIONS));
    expect((await page('&offset=abc')).ids).toHaveLength(PROJECT_CONVERSATIONS);
  });
});
