import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/store/database.js';
import { ViewerStore, WORKSPACES_SQL } from '../src/store/viewer-store.js';
import { snippetMarks, storedText } from '../src/ui/html.js';
import { LocalRecall } from '../src/recall/recall.js';
import { buildFtsQuery, MARK_CLOSE, MARK_OPEN, makeSnippet } from '../src/store/fts-text.js';
import { shouldOpenBrowser } from '../src/ui/open-browser.js';
import { defaultPort } from '../src/ui/viewer.js';
import { buildStore, conversationIdFor, type BuiltStore } from './recall-store-fixture.js';
import { tempDir } from './transcript-helpers.js';

describe('viewer markup', () => {
  const marked = (word: string) => `${MARK_OPEN}${word}${MARK_CLOSE}`;

  it('marks the words recall marked, and escapes everything else', () => {
    expect(String(snippetMarks(`the ${marked('pelican')} <b>plan</b> & ${marked('more')}`))).toBe('the <mark>pelican</mark> &lt;b&gt;plan&lt;/b&gt; &amp; <mark>more</mark>');
    // An unpaired marker is dropped; `**` is only text.
    expect(String(snippetMarks(`a ${marked('b')} c ${MARK_OPEN}d **e**`))).toBe('a <mark>b</mark> c d **e**');
    expect(String(snippetMarks(marked('<script>x</script>')))).toBe('<mark>&lt;script&gt;x&lt;/script&gt;</mark>');
  });

  it('makes masked credentials and private spans visible as such', () => {
    const out = String(storedText('key [REDACTED:aws-access-key-id] and [PRIVATE] <i>'));
    expect(out).toContain('<span class="placeholder redacted" title="a masked credential">[REDACTED:aws-access-key-id]</span>');
    expect(out).toContain('<span class="placeholder private"');
    expect(out).toContain('>[PRIVATE]</span>');
    expect(out).toContain('&lt;i&gt;');
    expect(out).not.toContain('<i>');
  });
});

describe('search snippets of stored text that holds `**`', () => {
  const TEXT = 'Run prettier on src/**/*.ts then check the ospreyword option';
  let root: string;
  let recall: LocalRecall;

  beforeAll(async () => {
    root = tempDir();
    const built = await buildStore([{ n: 1, workspace: '/w/alpha', createdAtMs: Date.UTC(2026, 8, 10), texts: [TEXT, 'Done.'] }], root);
    recall = new LocalRecall(built.stateDir);
  });
  afterAll(() => {
    recall.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('the viewer marks the match, and shows the stored `**` as text', async () => {
    const { hits } = await recall.search('ospreyword', { limit: 5, marks: 'sentinels' });
    expect(String(snippetMarks(hits[0]!.snippet))).toBe('Run prettier on src/**/*.ts then check the <mark>ospreyword</mark> option');
  });

  it('the CLI and MCP snippet is as before: the match between `**`', async () => {
    const { hits } = await recall.search('ospreyword', { limit: 5 });
    expect(hits[0]!.snippet).toBe('Run prettier on src/**/*.ts then check the **ospreyword** option');
  });

  it('stored text cannot fake a mark: the sentinels it holds are replaced', async () => {
    const snippet = makeSnippet(`fake ${MARK_OPEN}mark${MARK_CLOSE} and ospreyword`, buildFtsQuery('ospreyword')!.terms, 'sentinels');
    expect(String(snippetMarks(snippet))).toBe('fake \uFFFDmark\uFFFD and <mark>ospreyword</mark>');
  });
});

describe('opening a browser', () => {
  it('only when wanted and where there is a display', () => {
    expect(shouldOpenBrowser(false, { DISPLAY: ':0' }, 'linux')).toBe(false);
    expect(shouldOpenBrowser(true, {}, 'linux')).toBe(false);
    expect(shouldOpenBrowser(true, { DISPLAY: '  ' }, 'linux')).toBe(false);
    expect(shouldOpenBrowser(true, { DISPLAY: ':0' }, 'linux')).toBe(true);
    expect(shouldOpenBrowser(true, { WAYLAND_DISPLAY: 'wayland-0' }, 'freebsd')).toBe(true);
    expect(shouldOpenBrowser(true, {}, 'darwin')).toBe(true);
    expect(shouldOpenBrowser(true, {}, 'win32')).toBe(true);
    expect(shouldOpenBrowser(false, {}, 'darwin')).toBe(false);
  });
});

describe('the stable per-user port', () => {
  it('is the same for a user every time, differs between users, and stays in its range', () => {
    const a = defaultPort({ uid: 1000, username: 'ann' });
    expect(defaultPort({ uid: 1000, username: 'ann' })).toBe(a);
    expect(defaultPort({ uid: 1001, username: 'bob' })).not.toBe(a);
    for (const uid of [0, 1, 999, 1000, 65_534, 4_294_967_294]) {
      const port = defaultPort({ uid, username: 'x' });
      expect(port).toBeGreaterThanOrEqual(47_000);
      expect(port).toBeLessThan(48_000);
    }
    // No uid (Windows): from the user name, still stable.
    expect(defaultPort({ uid: -1, username: 'carol' })).toBe(defaultPort({ uid: -1, username: 'carol' }));
    expect(defaultPort({ uid: -1, username: 'carol' })).not.toBe(defaultPort({ uid: -1, username: 'dave' }));
  });
});

describe('ViewerStore', () => {
  const DAY = 86_400_000;
  const base = Date.UTC(2026, 8, 10, 23, 59, 0);
  let root: string;
  let built: BuiltStore;
  let store: ViewerStore;
  let close: () => void;

  beforeAll(async () => {
    root = tempDir();
    built = await buildStore(
      [
        // Two messages a second apart across UTC midnight: two days.
        { n: 1, workspace: '/w/alpha', createdAtMs: base + 59_000, texts: ['one', 'two'] },
        { n: 2, workspace: '/w/alpha/sub', createdAtMs: base + 3 * DAY, texts: ['three', 'four', 'five', 'six'] },
        { n: 3, workspace: '/w/beta', createdAtMs: base - 200 * DAY, texts: ['old', 'older'] },
        { n: 4, createdAtMs: base + DAY, texts: ['nowhere', 'known'] },
      ],
      root,
    );
    const db = openDatabase(built.stateDir, { readonly: true });
    store = new ViewerStore(db);
    close = () => db.close();
  });
  afterAll(() => {
    close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('lists each workspace once with its counts and last activity, the unknown one last', () => {
    expect(store.workspaces()).toEqual([
      { workspaceDir: '/w/alpha/sub', conversations: 1, messages: 4, lastActivityMs: base + 3 * DAY + 3000 },
      { workspaceDir: '/w/alpha', conversations: 1, messages: 2, lastActivityMs: base + 59_000 + 1000 },
      { workspaceDir: '/w/beta', conversations: 1, messages: 2, lastActivityMs: base - 200 * DAY + 1000 },
      { conversations: 1, messages: 2, lastActivityMs: base + DAY + 1000 },
    ]);
  });

  it('counts each workspace from the workspace index alone, never the conversations’ rows', () => {
    const db = openDatabase(built.stateDir, { readonly: true });
    try {
      const plan = db.prepare<[], { detail: string }>(`EXPLAIN QUERY PLAN ${WORKSPACES_SQL}`).all().map((r) => r.detail);
      expect(plan[0]).toBe('SCAN conversations USING COVERING INDEX conversations_by_workspace');
    } finally {
      db.close();
    }
  });

  it('counts messages per UTC day for the window ending today, every day present, nothing older', () => {
    const days = store.messagesPerDay(base + 3 * DAY, 90);
    expect(days).toHaveLength(90);
    const day0 = Math.floor(base / DAY) * DAY;
    expect(days.at(-1)!.dayMs).toBe(day0 + 3 * DAY);
    const counts = Object.fromEntries(days.filter((d) => d.messages > 0).map((d) => [(d.dayMs - day0) / DAY, d.messages]));
    // Session 1's first message is at 23:59:59, its second at 00:00:00 the next day.
    expect(counts).toEqual({ 0: 1, 1: 3, 3: 4 });
    expect(days.reduce((s, d) => s + d.messages, 0)).toBe(8);
  });

  it('lists a workspace with what lies below it, and the unknown-workspace group', () => {
    expect(store.conversations('/w/alpha', 10).map((c) => c.conversationId)).toEqual([conversationIdFor(2), conversationIdFor(1)]);
    expect(store.conversations(undefined, 10).map((c) => c.conversationId)).toEqual([conversationIdFor(4)]);
  });

  it('pages a conversation and opens the window around a message', () => {
    const all = store.messages(conversationIdFor(2), { size: 10 });
    expect(all.messages.map((m) => m.message.content)).toEqual(['three', 'four', 'five', 'six']);
    expect([all.before, all.after]).toEqual([0, 0]);
    const page = store.messages(conversationIdFor(2), { size: 2, offset: 1 });
    expect(page.messages.map((m) => m.message.content)).toEqual(['four', 'five']);
    expect([page.before, page.after]).toEqual([1, 1]);
    // The window holds the message it opens, with what came just before it.
    const around = store.messages(conversationIdFor(2), { size: 2, aroundId: all.messages[3]!.id });
    expect(around.messages.map((m) => m.message.content)).toEqual(['five', 'six']);
    expect([around.before, around.after]).toEqual([2, 0]);
    const wide = store.messages(conversationIdFor(2), { size: 10, aroundId: all.messages[3]!.id });
    expect(wide.messages).toHaveLength(4);
    expect(store.conversation('minimaxcode-mvs_nope')).toBeUndefined();
    expect(path.isAbsolute(built.stateDir)).toBe(true);
  });
});
