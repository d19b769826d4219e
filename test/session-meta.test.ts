import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentMessage } from '../src/core/agent-message.js';
import { defaultWorkspaceSources, PrivacyGate } from '../src/engine/privacy-gate.js';
import { decideWorkspace, SessionCatalog, skippedKinds } from '../src/engine/session-catalog.js';
import { renderContextIndex, renderSessionStartContext } from '../src/recall/context-index.js';
import { LocalRecall } from '../src/recall/recall.js';
import { localSessionStartContext } from '../src/recall/session-recall.js';
import { MIGRATIONS, openDatabase, openMemoryDatabase } from '../src/store/database.js';
import { LocalStore } from '../src/store/local-store.js';
import { SessionMetaStore } from '../src/store/session-meta.js';
import { recordHookWorkspace } from '../src/store/hook-workspace.js';
import { SessionStore } from '../src/store/session-store.js';
import type { SessionIndexRead } from '../src/transcript/session-index.js';
import type { SessionRef } from '../src/transcript/types.js';
import { storeAtVersion } from './support/store-at-version.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'everme-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('deciding a workspace among the sources', () => {
  it('sources that agree: the first in trust order (ledger, index, cwd) answers, no conflict', () => {
    expect(
      decideWorkspace([
        { from: 'cwd', dir: '/p/', atMs: 9 },
        { from: 'index', dir: '/p', atMs: 5 },
      ]),
    ).toEqual({ dir: '/p', from: 'index', claims: [{ from: 'index', dir: '/p', atMs: 5 }, { from: 'cwd', dir: '/p/', atMs: 9 }] });
  });

  it('sources that disagree: the later-updated wins; without a time, older than any; equal times by trust order', () => {
    expect(decideWorkspace([{ from: 'ledger', dir: '/a', atMs: 1 }, { from: 'index', dir: '/b', atMs: 2 }])).toMatchObject({ dir: '/b', from: 'index', conflict: expect.any(Array) as unknown[] });
    expect(decideWorkspace([{ from: 'ledger', dir: '/a', atMs: 3 }, { from: 'index', dir: '/b', atMs: 2 }])).toMatchObject({ dir: '/a', from: 'ledger' });
    expect(decideWorkspace([{ from: 'index', dir: '/b' }, { from: 'cwd', dir: '/c', atMs: 0 }])).toMatchObject({ dir: '/c', from: 'cwd' });
    expect(decideWorkspace([{ from: 'cwd', dir: '/c', atMs: 7 }, { from: 'index', dir: '/b', atMs: 7 }])).toMatchObject({ dir: '/b', from: 'index' });
    expect(decideWorkspace([{ from: 'ledger', dir: '/a' }, { from: 'cwd', dir: '/c' }])).toMatchObject({ dir: '/a', from: 'ledger' });
    expect(decideWorkspace([])).toBeUndefined();
  });
});

describe('kinds read by default', () => {
  it('skips peek, channel and cron sessions and hidden ones; reads conversations, tasks, unknown and new kinds; EVERME_INCLUDE_KINDS names what else to read', () => {
    const none = new Set<string>();
    expect(skippedKinds({ kind: 'conversation' }, none)).toEqual([]);
    expect(skippedKinds({ kind: 'task', sessionType: 'branch' }, none)).toEqual([]);
    expect(skippedKinds({ kind: 'unknown' }, none)).toEqual([]);
    expect(skippedKinds({ kind: 'conversation-rewind' }, none)).toEqual([]);
    expect(skippedKinds(undefined, none)).toEqual([]);
    expect(skippedKinds({ kind: 'peek' }, none)).toEqual(['peek']);
    expect(skippedKinds({ kind: 'channel' }, none)).toEqual(['channel']);
    expect(skippedKinds({ kind: 'cron' }, none)).toEqual(['cron']);
    expect(skippedKinds({ kind: 'conversation', visibility: 'hidden' }, none)).toEqual(['hidden']);
    expect(skippedKinds({ kind: 'peek', visibility: 'hidden' }, new Set(['peek']))).toEqual(['hidden']);
    expect(skippedKinds({ kind: 'peek', visibility: 'hidden' }, new Set(['peek', 'hidden']))).toEqual([]);
    expect(skippedKinds({ kind: 'cron', visibility: 'hidden' }, new Set(['all']))).toEqual([]);
    // Every name that keeps a session out, for the hint: a hidden peek session needs both.
    expect(skippedKinds({ kind: 'peek', visibility: 'hidden' }, none)).toEqual(['peek', 'hidden']);
    expect(skippedKinds({ kind: 'peek', visibility: 'hidden' }, new Set(['hidden']))).toEqual(['peek']);
  });
});

describe('the session meta store', () => {
  it("migration 13 keeps the workspace a hook recorded before as the session's cwd claim, of unknown time", () => {
    const stateDir = tempDir();
    // The release before the session index: every migration before 13 (the later ones run after it at open).
    const before = 12;
    expect(MIGRATIONS.length).toBeGreaterThan(before);
    const raw = storeAtVersion(stateDir, before);
    raw.prepare('INSERT INTO sessions (session_id, session_dir, workspace_dir) VALUES (?, ?, ?)').run('s1', '/d/s1', '/from/hook');
    raw.prepare('INSERT INTO sessions (session_id, session_dir) VALUES (?, ?)').run('s2', '/d/s2');
    raw.close();
    const db = openDatabase(stateDir);
    try {
      const meta = new SessionMetaStore(db);
      expect(meta.get('s1')).toEqual({ sessionId: 's1', cwd: { from: 'cwd', dir: '/from/hook' }, decided: '/from/hook' });
      expect(meta.get('s2')).toBeUndefined();
    } finally {
      db.close();
    }
  });

  it("a cwd's time is when the hook first reported that value: the same cwd again keeps it, another one moves it", () => {
    const db = openMemoryDatabase();
    const meta = new SessionMetaStore(db);
    meta.recordCwd('s1', '/a', 100);
    meta.recordCwd('s1', '/a', 200);
    expect(meta.get('s1')?.cwd).toEqual({ from: 'cwd', dir: '/a', atMs: 100 });
    meta.recordCwd('s1', '/b', 300);
    expect(meta.get('s1')?.cwd).toEqual({ from: 'cwd', dir: '/b', atMs: 300 });
    db.close();
  });

  it("a decision moves the session's conversations, replacing an earlier decision, and is kept with its conflict", () => {
    const db = openMemoryDatabase();
    const store = new LocalStore(db);
    store.upsertConversation({ conversationId: 'minimaxcode-s1', sessionId: 's1', source: 'messages', workspaceDir: '/old' });
    const meta = new SessionMetaStore(db);
    const conflict = [
      { from: 'index' as const, dir: '/new', atMs: 2 },
      { from: 'cwd' as const, dir: '/old', atMs: 1 },
    ];
    meta.recordDecision('s1', '/new', 'index', conflict);
    expect(db.prepare('SELECT workspace_dir FROM conversations').pluck().get()).toBe('/new');
    expect(new SessionStore(db).workspaceFor('s1')).toBe('/new');
    expect(meta.conflicts()).toMatchObject([{ sessionId: 's1', workspaceFrom: 'index', decided: '/new', conflict }]);
    db.close();
  });
});

describe("the gate's workspace sources", () => {
  const session: SessionRef = { sessionId: 'mvs_s1', dir: '/nowhere', createdAtMs: 0 };
  const read = (workspaceDir: string, updatedAtMs: number): SessionIndexRead => ({
    status: 'ok',
    path: '/x/runtime-state.sqlite',
    mode: 'live',
    schema: { recordJson: true, columns: [], name: 'record_json only' },
    known: 1,
    sessions: new Map([[session.sessionId, { sessionId: session.sessionId, workspaceDir, updatedAtMs, title: 'T', kind: 'conversation' }]]),
  });

  it("the index and a hook's cwd are weighed by time; the index's facts are recorded for the run's sessions, and survive an index that is gone", async () => {
    const db = openMemoryDatabase();
    const state = new SessionStore(db);
    const meta = new SessionMetaStore(db);
    const catalog = new SessionCatalog(meta);
    const gate = new PrivacyGate(db, [], defaultWorkspaceSources(catalog), false, state, undefined, { catalog });
    meta.recordCwd(session.sessionId, '/from/hook', 1000);

    gate.useSessionIndex(read('/from/index', 2000));
    gate.noteSessions([session]);
    // A session whose files did not change is decided again without them.
    await gate.redecide(session);
    gate.commit();
    expect(state.workspaceFor(session.sessionId)).toBe('/from/index');
    expect(meta.get(session.sessionId)).toMatchObject({ index: { title: 'T', workspaceDir: '/from/index' }, workspaceFrom: 'index' });

    // The hook reports a workspace after the index's last update: the hook wins now.
    meta.recordCwd(session.sessionId, '/moved', 3000);
    expect(await gate.scope(session)).toEqual({ status: 'included', workspaceDir: '/moved' });
    gate.commit();
    expect(meta.get(session.sessionId)).toMatchObject({ workspaceFrom: 'cwd', decided: '/moved' });

    // No index at the next run: what it said before still counts.
    gate.useSessionIndex({ status: 'unavailable', path: '/x', reason: 'absent', message: 'no such file' });
    expect(gate.indexFacts(session.sessionId)).toMatchObject({ title: 'T' });
    db.close();
  });
});

describe("a hook's cwd in a run over many sessions", () => {
  it('an unchanged session is rechecked against one listing of the cwd files per run; a session about to be read looks at its file itself', async () => {
    const stateDir = tempDir();
    const db = openMemoryDatabase();
    const state = new SessionStore(db);
    const catalog = new SessionCatalog(new SessionMetaStore(db), stateDir);
    const gate = new PrivacyGate(db, [], defaultWorkspaceSources(catalog, stateDir), false, state, undefined, { catalog });
    // Enough sessions that the run reads what it can at once (PrivacyGate.PRELOAD_AFTER).
    const sessions: SessionRef[] = Array.from({ length: 64 }, (_, i) => ({ sessionId: `mvs_${i}`, dir: `/nowhere/${i}`, createdAtMs: 0 }));
    const [early, late] = [sessions[0]!, sessions[1]!];
    await recordHookWorkspace(stateDir, early.sessionId, '/early', () => Promise.resolve(undefined));

    gate.noteSessions(sessions);
    // Written after the run listed the hook's directory.
    await recordHookWorkspace(stateDir, late.sessionId, '/late', () => Promise.resolve(undefined));
    await gate.redecide(early);
    await gate.redecide(late);
    gate.commit();
    expect(state.workspaceFor(early.sessionId)).toBe('/early');
    // Decided again to the same: done at once, nothing to wait for.
    expect(gate.redecide(early)).toBeUndefined();
    // Nothing of the unchanged session is delivered: its new cwd waits for the next run...
    expect(state.workspaceFor(late.sessionId)).toBeUndefined();
    // ...but a session this run reads is decided on the file as it is now.
    expect(await gate.scope(late)).toEqual({ status: 'included', workspaceDir: '/late' });
    gate.endRun();

    const other = sessions[2]!;
    await recordHookWorkspace(stateDir, other.sessionId, '/other', () => Promise.resolve(undefined));
    gate.noteSessions(sessions);
    await gate.redecide(other);
    gate.commit();
    expect(state.workspaceFor(other.sessionId)).toBe('/other');
    db.close();
  });
});

describe('titles where conversations are listed', () => {
  it('search hits, mem_context and SessionStart recall carry the title the index gave the session, and a task its parent', async () => {
    const stateDir = tempDir();
    const db = openDatabase(stateDir);
    const store = new LocalStore(db);
    const meta = new SessionMetaStore(db);
    const user: AgentMessage = { role: 'user', timestamp: 1000, content: 'how do I rotate the parser keys' };
    const answer: AgentMessage = { role: 'assistant', timestamp: 2000, turnComplete: true, content: 'rotate them with the parser tool' };
    for (const [id, title] of [['s1', 'Rotate the parser keys'], ['s2', 'Parser follow-up']] as const) {
      store.upsertConversation({ conversationId: `minimaxcode-${id}`, sessionId: id, source: 'messages', workspaceDir: '/w/parser' });
      store.appendMessages(`minimaxcode-${id}`, [
        { key: `${id}-u`, message: user },
        { key: `${id}-a`, message: answer },
      ]);
      meta.recordIndex(id, { title, kind: id === 's2' ? 'task' : 'conversation', ...(id === 's2' ? { parentSessionId: 's1' } : {}), workspaceDir: '/w/parser' });
    }
    db.close();

    const recall = new LocalRecall(stateDir);
    try {
      const { hits } = await recall.search('parser', { limit: 10 });
      expect(new Set(hits.map((h) => h.title))).toEqual(new Set(['Rotate the parser keys', 'Parser follow-up']));
      const context = await recall.context({ project: '/w/parser', query: 'rotate' });
      const text = renderContextIndex(context, 'rotate');
      expect(text).toContain('"Rotate the parser keys"');
      expect(text).toContain('task of s1');
    } finally {
      recall.close();
    }
    const start = localSessionStartContext(stateDir, { project: '/w/parser', sessionId: 'other', maxChars: 4000 });
    expect(start).toContain('"Parser follow-up"');
    expect(renderSessionStartContext({ kind: 'local', project: '/w', conversations: [{ conversationId: 'c', sessionId: 's', source: 'messages', messageCount: 1, title: 'line one\nline two' }] }, 4000)).toContain(
      '"line one line two"',
    );
  });
});
