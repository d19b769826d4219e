/**
 * The viewer's edges a hand-edited address or an old tab reaches: a path that would leave the
 * site, an offset past a conversation's end, a forget of what is forgotten already, and a tab title
 * that says what the page's heading says.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Forgetter } from '../src/forget/forget.js';
import { openDatabase } from '../src/store/database.js';
import { startViewer, type RunningViewer } from '../src/ui/viewer.js';
import { buildStore, conversationIdFor, sessionIdFor, type BuiltStore } from './recall-store-fixture.js';
import { rawRequest, type RawResponse } from './support/viewer-process.js';
import { tempDir } from './transcript-helpers.js';

const TITLE = 'Tidy the heron exporter';
const MESSAGES = 6;

let root: string;
let store: BuiltStore;
let viewer: RunningViewer;
/** `/<secret>`: the printed URL's path, under which every page lives. */
let prefix: string;

beforeAll(async () => {
  root = tempDir();
  store = await buildStore(
    [
      { n: 1, workspace: '/w/alpha', createdAtMs: Date.UTC(2026, 8, 10, 8), texts: Array.from({ length: MESSAGES }, (_, i) => `heron message ${i}`) },
      { n: 2, workspace: '/w/alpha', createdAtMs: Date.UTC(2026, 8, 11, 8), texts: ['forget me', 'gone'] },
    ],
    root,
  );
  // The session index's title, as an import records it.
  const db = openDatabase(store.stateDir);
  db.prepare('INSERT INTO session_meta (session_id, title, recorded_at_ms) VALUES (?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET title = excluded.title').run(sessionIdFor(1), TITLE, Date.now());
  db.close();
  const forgetter = Forgetter.open(store.settings);
  await forgetter.apply(forgetter.plan({ kind: 'conversation', conversationId: conversationIdFor(2) }));
  forgetter.close();
  viewer = await startViewer({ settings: store.settings, port: 0 });
  prefix = new URL(viewer.url).pathname.replace(/\/$/, '');
});

afterAll(async () => {
  await viewer?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

function get(pathname: string): Promise<RawResponse> {
  return rawRequest({ port: viewer.port, path: `${prefix}${pathname}`, headers: {} });
}

describe('everme ui at its edges', () => {
  it('never sends the browser to another site: `//host/` paths are refused, a redirect stays under the prefix', async () => {
    for (const path of ['//evil.example/', '///evil.example/x', `//evil.example${prefix}/`, `/${prefix}/`]) {
      const r = await rawRequest({ port: viewer.port, path, headers: {} });
      expect(r.status, path).toBe(401);
      expect(r.headers.location, path).toBeUndefined();
    }
    const r = await get('/project');
    expect(r.status).toBe(303);
    expect(r.headers.location).toBe(`${prefix}/`);
  });

  it('an offset past the end shows the last messages, counting only those that exist', async () => {
    const r = await get(`/conversation/${conversationIdFor(1)}?offset=100000`);
    expect(r.status).toBe(200);
    expect(r.body).not.toContain('100,000');
    expect(r.body).not.toContain('earlier message');
    expect(r.body).toContain('heron message 0');
    expect(r.body).toContain(`heron message ${MESSAGES - 1}`);
  });

  it('a forget preview of a conversation forgotten already says so, and offers no forget', async () => {
    const r = await get(`/forget?c=${conversationIdFor(2)}`);
    expect(r.body).toContain('Already forgotten');
    expect(r.body).not.toContain('would be removed');
    expect(r.body).not.toContain('id="confirm-forget"');
  });

  it('a conversation’s tab title is its heading', async () => {
    const r = await get(`/conversation/${conversationIdFor(1)}`);
    expect(r.body).toContain(`<h1>${TITLE}</h1>`);
    expect(/<title>([^<]*)<\/title>/.exec(r.body)?.[1]).toContain(TITLE);
  });
});
