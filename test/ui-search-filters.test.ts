import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalRecall, MAX_RECALL_LIMIT } from '../src/recall/recall.js';
import { startViewer, type RunningViewer } from '../src/ui/viewer.js';
import { buildStore, conversationIdFor, type BuiltStore } from './recall-store-fixture.js';
import { rawRequest } from './support/viewer-process.js';
import { tempDir } from './transcript-helpers.js';

/**
 * Search filters apply inside recall's ranking, not to its top hits: a match that ranks far below
 * MAX_RECALL_LIMIT overall is still found when the filters name it. One store where the only match
 * in project /w/quiet is also the only assistant match and the only one in March, under 60 user
 * messages elsewhere that each outrank it (the word three times in a short message, user weight).
 */
const WORD = 'kiwifilterword';
const BUSY = '/w/busy';
const QUIET = '/w/quiet';
const BUSY_AT = Date.UTC(2026, 8, 10, 8);
const QUIET_AT = Date.UTC(2026, 2, 1, 8);
const BUSY_MATCHES = 60;

let root: string;
let store: BuiltStore;
let recall: LocalRecall;
let viewer: RunningViewer;

beforeAll(async () => {
  root = tempDir();
  const busy = Array.from({ length: BUSY_MATCHES }, (_, i) => [`${WORD} ${WORD} ${WORD} note ${i}`, `noted ${i}`]).flat();
  const padding = Array.from({ length: 80 }, (_, i) => `filler${i}`).join(' ');
  store = await buildStore(
    [
      { n: 1, workspace: BUSY, createdAtMs: BUSY_AT, texts: busy },
      { n: 2, workspace: QUIET, createdAtMs: QUIET_AT, texts: ['what did we decide about the release?', `${padding} and the ${WORD} once ${padding}`] },
    ],
    root,
  );
  recall = new LocalRecall(store.stateDir);
  viewer = await startViewer({ settings: store.settings, port: 0 });
});

afterAll(async () => {
  recall?.close();
  await viewer?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const QUIET_CONVERSATION = conversationIdFor(2);

describe('search filters (recall, as mem_search searches)', () => {
  it('the quiet match ranks below the top 50 of an unfiltered search', async () => {
    const all = await recall.search(WORD, { limit: MAX_RECALL_LIMIT });
    expect(all.hits).toHaveLength(MAX_RECALL_LIMIT);
    expect(all.hits.map((h) => h.conversationId)).not.toContain(QUIET_CONVERSATION);
  });

  it.each([
    ['project', { project: QUIET }],
    ['role', { role: 'assistant' as const }],
    ['date', { since: Date.UTC(2026, 2, 1), until: Date.UTC(2026, 2, 2) }],
  ])('a %s filter finds it: the one match that passes', async (_name, filter) => {
    const { hits } = await recall.search(WORD, { limit: 20, ...filter });
    expect(hits.map((h) => [h.conversationId, h.role])).toEqual([[QUIET_CONVERSATION, 'assistant']]);
  });

  it('filtered hits keep the unfiltered ranking among themselves', async () => {
    const all = await recall.search(WORD, { limit: MAX_RECALL_LIMIT });
    const user = await recall.search(WORD, { limit: MAX_RECALL_LIMIT, role: 'user', since: BUSY_AT });
    expect(user.hits.map((h) => h.id)).toEqual(all.hits.filter((h) => h.role === 'user').map((h) => h.id));
    expect(user.hits.map((h) => h.score)).toEqual(all.hits.filter((h) => h.role === 'user').map((h) => h.score));
  });
});

describe('search filters (the viewer)', () => {
  const results = (query: string) =>
    rawRequest({ port: viewer.port, path: `${new URL(viewer.url).pathname}search/results?q=${WORD}&${query}` });

  it.each([
    ['project', `project=${encodeURIComponent(QUIET)}`],
    ['role', 'role=assistant'],
    ['date', 'from=2026-03-01&to=2026-03-01'],
  ])('the %s filter shows the match that ranks below 50 overall', async (_name, query) => {
    const res = await results(query);
    expect(res.status).toBe(200);
    expect(res.body).toContain('data-count="1"');
    expect(res.body).toContain(`data-conversation="${QUIET_CONVERSATION}"`);
    expect(res.body).toContain(`<mark>${WORD}</mark>`);
  });

  it('a date range that holds none of the matches says so', async () => {
    const res = await results('from=2026-04-01&to=2026-04-30');
    expect(res.body).toContain('data-count="0"');
    expect(res.body).toContain('with these filters');
  });
});

describe('more matches than the viewer shows (the viewer)', () => {
  const search = (query: string) =>
    rawRequest({ port: viewer.port, path: `${new URL(viewer.url).pathname}search?q=${WORD}${query}` });

  it('says "the best 20", not a total, and links to the best 50', async () => {
    const res = await search('');
    expect(res.body).toContain('data-count="20"');
    expect(res.body).not.toContain('20 results');
    expect(res.body).toContain('The best 20 matches, best first.');
    const more = /href="([^"]+)" id="more-results">Show the best 50</.exec(res.body)?.[1]?.replaceAll('&amp;', '&');
    expect(more).toBe(`${new URL(viewer.url).pathname}search?q=${WORD}&limit=50`);
  });

  it('the best 50 shows 50, and says how to reach the rest', async () => {
    const res = await search('&limit=50');
    expect(res.body).toContain('data-count="50"');
    expect(res.body).toContain('The best 50 matches, best first. More may match: add words or filters to reach them.');
    expect(res.body).not.toContain('id="more-results"');
  });

  it('a limit it does not offer is the default', async () => {
    expect((await search('&limit=5000')).body).toContain('data-count="20"');
  });

  it('fewer matches than shown: that is the count of every match', async () => {
    const res = await search(`&project=${encodeURIComponent(QUIET)}`);
    expect(res.body).toContain('1 result, best first among the messages that pass the filters.');
  });
});
