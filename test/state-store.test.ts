import type Database from 'better-sqlite3';
import fs from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from './support/temp.js';
import type { WarningEntry } from '../src/core/warnings.js';
import { StateStore, type SessionFingerprint } from '../src/store/state-store.js';
import { openDatabase } from '../src/store/database.js';
import { LocalStore } from '../src/store/message-store.js';

let dir: string;
let db: Database.Database;
let state: StateStore;

beforeEach(() => {
  dir = tempDir('everme-');
  db = openDatabase(dir);
  state = new StateStore(db);
});
afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function reopen(): void {
  db.close();
  db = openDatabase(dir);
  state = new StateStore(db);
}

const warn = (code: WarningEntry['code'], count: number, lines: number[] = []): WarningEntry => ({
  code,
  count,
  samples: lines.map((line) => ({ file: 'messages.jsonl', line })),
});

describe('high-water marks', () => {
  it('round-trip per sink and conversation, ignore repeats, and can be forgotten', () => {
    state.recordDelivered('local', 'c1', ['a', 'b']);
    state.recordDelivered('local', 'c1', ['b', 'c']);
    state.recordDelivered('everme', 'c1', ['a']);
    state.recordDelivered('local', 'c2', ['z']);
    reopen();
    expect([...state.deliveredKeys('local', 'c1')].sort()).toEqual(['a', 'b', 'c']);
    expect([...state.deliveredKeys('everme', 'c1')]).toEqual(['a']);
    expect(state.deliveredKeys('everme', 'c2').size).toBe(0);

    state.forgetDelivered('local', 'c1', ['a', 'missing']);
    expect([...state.deliveredKeys('local', 'c1')].sort()).toEqual(['b', 'c']);
    expect([...state.deliveredKeys('everme', 'c1')]).toEqual(['a']);
  });
});

describe('fingerprints', () => {
  it('round-trip per sink, are replaced on set and removed on clear', () => {
    const fp: SessionFingerprint = { file: '/s/messages.jsonl', size: 1234, mtimeMs: 1_780_000_000_123.456, ino: 987654321, headHash: 'abc' };
    state.setFingerprint('local', 's1', fp);
    reopen();
    expect(state.getFingerprint('local', 's1')).toEqual(fp);
    expect(state.getFingerprint('everme', 's1')).toBeUndefined();

    const grown = { ...fp, size: 2000, headHash: 'def' };
    state.setFingerprint('local', 's1', grown);
    expect(state.getFingerprint('local', 's1')).toEqual(grown);

    state.clearFingerprint('local', 's1');
    expect(state.getFingerprint('local', 's1')).toBeUndefined();
  });
});

describe('warnings', () => {
  const conv = (id: string, createdAtMs?: number) => ({
    conversationId: id,
    sessionId: `s-${id}`,
    source: 'messages',
    historyFile: `/d/${id}/messages.jsonl`,
    sessionDir: `/d/${id}`,
    ...(createdAtMs === undefined ? {} : { createdAtMs }),
    workspaceDir: '/w',
  });

  it('replace a conversation’s warnings instead of adding to them; a clean re-read clears them', () => {
    state.replaceWarnings(conv('c1', 10), [warn('invalid_json', 3, [4, 9])]);
    state.replaceWarnings(conv('c1', 10), [warn('invalid_json', 2, [4]), warn('incomplete_tail', 1, [20])]);
    reopen();
    expect(state.listWarnings()).toEqual([
      {
        conversationId: 'c1',
        sessionId: 's-c1',
        source: 'messages',
        historyFile: '/d/c1/messages.jsonl',
        sessionDir: '/d/c1',
        createdAtMs: 10,
        workspaceDir: '/w',
        warnings: [warn('invalid_json', 2, [4]), warn('incomplete_tail', 1, [20])],
      },
    ]);

    state.replaceWarnings(conv('c1', 10), []);
    expect(state.listWarnings()).toEqual([]);
  });

  it('merges repeated codes within one replacement into one entry', () => {
    state.replaceWarnings(conv('c1'), [warn('invalid_json', 1, [1]), warn('invalid_json', 2, [7])]);
    expect(state.listWarnings()[0]!.warnings).toEqual([warn('invalid_json', 3, [1, 7])]);
  });

  it('keys a session without a conversation id by its directory, and drops that once the id is known', () => {
    const manifestOnly = { conversationId: null, sessionId: null, source: 'manifest', sessionDir: '/d/c9', createdAtMs: 5 };
    state.replaceWarnings(manifestOnly, [warn('invalid_manifest', 1)]);
    state.replaceWarnings(manifestOnly, [warn('invalid_manifest', 1)]);
    expect(state.listWarnings()).toEqual([{ ...manifestOnly, warnings: [warn('invalid_manifest', 1)] }]);

    state.replaceWarnings(conv('c9', 5), [warn('invalid_record', 1, [2])]);
    expect(state.listWarnings().map((w) => [w.conversationId, w.warnings[0]!.code])).toEqual([['c9', 'invalid_record']]);
    expect(() => state.replaceWarnings({ conversationId: null, sessionId: null, source: 'none' }, [warn('invalid_json', 1)])).toThrow();
  });

  it('lists in creation order and filters by conversation, code and time', () => {
    state.replaceWarnings(conv('late', 300), [warn('invalid_json', 1, [1])]);
    state.replaceWarnings(conv('early', 100), [warn('invalid_json', 1, [1]), warn('oversized_unit', 2)]);
    state.replaceWarnings(conv('mid', 200), [warn('oversized_unit', 1)]);
    expect(state.listWarnings().map((w) => w.conversationId)).toEqual(['early', 'mid', 'late']);
    expect(state.listWarnings({ conversationId: 'mid' }).map((w) => w.conversationId)).toEqual(['mid']);

    const oversized = state.listWarnings({ code: 'oversized_unit' });
    expect(oversized.map((w) => w.conversationId)).toEqual(['early', 'mid']);
    expect(oversized[0]!.warnings).toEqual([warn('oversized_unit', 2)]);

    expect(state.listWarnings({ sinceMs: 200 }).map((w) => w.conversationId)).toEqual(['mid', 'late']);
  });
});

describe('runs', () => {
  it('records start and finish and returns the latest run of a kind', () => {
    expect(state.lastRun('sync')).toBeUndefined();
    const first = state.startRun('sync', { sink: 'local' });
    state.finishRun(first, { messages: 3 }, 'ok');
    const second = state.startRun('sync', { sink: 'local' });
    state.startRun('hook', {});

    const running = state.lastRun('sync')!;
    expect(running).toMatchObject({ id: second, kind: 'sync', params: { sink: 'local' } });
    expect(running.finishedAtMs).toBeUndefined();
    expect(running.status).toBeUndefined();

    state.finishRun(second, { messages: 0, failures: [] }, 'partial');
    reopen();
    const done = state.lastRun('sync')!;
    expect(done).toMatchObject({ id: second, status: 'partial', summary: { messages: 0, failures: [] } });
    expect(done.finishedAtMs).toBeGreaterThanOrEqual(done.startedAtMs);
  });

  it('knows the earliest `since` of imports that ran to the end', () => {
    expect(state.earliestImportSince()).toBeUndefined();
    const finish = (since: string | undefined, status: 'ok' | 'partial' | 'failed' | 'cancelled') =>
      state.finishRun(state.startRun('import', since === undefined ? {} : { since }), {}, status);
    finish('2026-05-01', 'ok');
    finish('2026-03-15', 'partial');
    finish('2025-01-01', 'failed');
    finish('2025-02-01', 'cancelled');
    finish(undefined, 'ok');
    state.startRun('import', { since: '2024-01-01' });
    state.finishRun(state.startRun('sync', { since: '2020-01-01' }), {}, 'ok');
    expect(state.earliestImportSince()).toBe('2026-03-15');
  });
});

describe('session memory', () => {
  it('remembers a session’s directory and workspace independently', () => {
    expect(state.sessionDirFor('s1')).toBeUndefined();
    state.rememberSessionDir('s1', '/d/one');
    expect(state.workspaceFor('s1')).toBeUndefined();
    state.rememberWorkspace('s1', '/w/one');
    state.rememberSessionDir('s1', '/d/moved');
    reopen();
    expect(state.sessionDirFor('s1')).toBe('/d/moved');
    expect(state.workspaceFor('s1')).toBe('/w/one');
  });
});

describe('the workspace a hook reported', () => {
  it('reaches a conversation stored without one, never overrides one its files named, and is what workspaceFor answers', () => {
    const conv = db.prepare('INSERT INTO conversations (conversation_id, session_id, source, workspace_dir) VALUES (?, ?, ?, ?)');
    conv.run('minimaxcode-s1', 's1', 'messages', null);
    conv.run('minimaxcode-s2', 's2', 'ledger', '/from/ledger');
    const conversationWorkspace = (sessionId: string): unknown => db.prepare('SELECT workspace_dir FROM conversations WHERE session_id = ?').pluck().get(sessionId);
    expect(state.workspaceFor('s1')).toBeUndefined();
    state.rememberWorkspace('s1', '/from/hook');
    state.rememberWorkspace('s2', '/from/hook/two');
    state.rememberWorkspace('s9', '/only/hook');
    expect(conversationWorkspace('s1')).toBe('/from/hook');
    expect(conversationWorkspace('s2')).toBe('/from/ledger');
    expect(state.workspaceFor('s1')).toBe('/from/hook');
    expect(state.workspaceFor('s2')).toBe('/from/hook/two');
    expect(state.workspaceFor('s9')).toBe('/only/hook');
    expect(state.workspaceFor('unknown')).toBeUndefined();
  });
});

describe('one transaction for messages and marks', () => {
  it('commits both or neither', () => {
    const store = new LocalStore(db);
    const messages = [
      { key: 'm1', message: { role: 'user' as const, timestamp: 1, content: 'atomic quokka' } },
      { key: 'm2', message: { role: 'user' as const, timestamp: 2, content: 'second' } },
    ];
    const deliver = (fail: boolean) =>
      db.transaction(() => {
        store.upsertConversation({ conversationId: 'c1', sessionId: 's1', source: 'messages' });
        store.appendMessages('c1', messages);
        state.recordDelivered('local', 'c1', messages.map((m) => m.key));
        if (fail) throw new Error('sink crashed after writing');
      })();

    expect(() => deliver(true)).toThrow('sink crashed');
    expect(store.counts()).toEqual({ conversations: 0, messages: 0 });
    expect(state.deliveredKeys('local', 'c1').size).toBe(0);
    expect(store.search('quokka')).toEqual([]);

    deliver(false);
    reopen();
    expect(new LocalStore(db).counts()).toEqual({ conversations: 1, messages: 2 });
    expect([...state.deliveredKeys('local', 'c1')].sort()).toEqual(['m1', 'm2']);
    expect(new LocalStore(db).search('quokka')).toHaveLength(1);
  });
});
