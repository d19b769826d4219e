import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalRecall } from '../src/recall/recall.js';
import { openDatabase } from '../src/store/database.js';
import { buildStore, conversationIdFor, corpus } from './recall-store-fixture.js';
import { tempDir } from './transcript-helpers.js';

const roots: string[] = [];
const recalls: LocalRecall[] = [];

function newRoot(): string {
  const root = tempDir();
  roots.push(root);
  return root;
}

function recallFor(stateDir: string): LocalRecall {
  const recall = new LocalRecall(stateDir);
  recalls.push(recall);
  return recall;
}

afterEach(() => {
  for (const recall of recalls.splice(0)) recall.close();
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

describe('LocalRecall', () => {
  it('answers "empty" without a database, creates nothing, and finds memories once an import creates it', async () => {
    const root = newRoot();
    const stateDir = path.join(root, 'state');
    const recall = recallFor(stateDir);

    expect(await recall.search('payload', { limit: 10 })).toEqual({ hits: [], storeEmpty: true });
    const empty = await recall.context({ project: '/anywhere' });
    expect(empty).toMatchObject({ storeEmpty: true, conversations: [] });
    expect(fs.existsSync(stateDir)).toBe(false);

    // The same long-lived reader (as in `everme mcp`) sees the store an import made after it started.
    await buildStore(corpus(path.join(root, 'projects')), root);
    const found = await recall.search('payload优先', { limit: 10 });
    expect(found.storeEmpty).toBe(false);
    expect(found.hits.map((h) => h.conversationId)).toEqual([conversationIdFor(2)]);
  });

  it('calls a database without messages empty', async () => {
    const stateDir = path.join(newRoot(), 'state');
    openDatabase(stateDir).close();
    const recall = recallFor(stateDir);
    expect(await recall.search('payload', { limit: 10 })).toEqual({ hits: [], storeEmpty: true });
    expect(await recall.context({ project: '/anywhere' })).toMatchObject({ storeEmpty: true, conversations: [] });
  });

  it('sees messages another connection wrote after it opened the store', async () => {
    const root = newRoot();
    const projects = path.join(root, 'projects');
    const sessions = corpus(projects);
    const store = await buildStore(sessions.slice(0, 2), root);
    const recall = recallFor(store.stateDir);
    // No hit in a store that holds messages: "no match", not "empty".
    expect(await recall.search('マイグレ', { limit: 5 })).toEqual({ hits: [], storeEmpty: false });

    await buildStore(sessions.slice(2, 3), root);
    const hits = (await recall.search('マイグレ', { limit: 5 })).hits;
    expect(hits.map((h) => h.conversationId)).toEqual([conversationIdFor(3), conversationIdFor(3)]);
  });

  it('lists the project first and falls back to every project when it has none', async () => {
    const root = newRoot();
    const projects = path.join(root, 'projects');
    const store = await buildStore(corpus(projects), root);
    const recall = recallFor(store.stateDir);

    const inWidget = await recall.context({ project: path.join(projects, 'widget'), query: '백업' });
    // An early return here would skip every check below: a context of another kind fails instead.
    if (inWidget.kind !== 'local') throw new Error(`expected a local context, got ${(inWidget as { kind: string }).kind}`);
    expect(inWidget.scope).toBe('project');
    expect(inWidget.conversations.map((c) => c.conversationId)).toEqual([5, 2, 1].map(conversationIdFor));
    // The Korean match lives in another project: the hits fall back to all of them.
    expect(inWidget.hitsScope).toBe('all');
    expect(inWidget.hits?.[0]?.conversationId).toBe(conversationIdFor(4));

    const nowhere = await recall.context({ project: path.join(root, 'nowhere') });
    expect(nowhere).toMatchObject({ scope: 'all', storeEmpty: false });
    if (nowhere.kind !== 'local') throw new Error(`expected a local context, got ${(nowhere as { kind: string }).kind}`);
    expect(nowhere.conversations.map((c) => c.conversationId)).toEqual([6, 5, 4, 3, 2, 1].map(conversationIdFor));
  });
});
