import type Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from './support/temp.js';
import type { WarningEntry } from '../src/core/warnings.js';
import { openDatabase } from '../src/store/database.js';
import { DeliveredKeyStore } from '../src/store/delivered-key-store.js';
import { FingerprintStore, type SessionFingerprint } from '../src/store/fingerprint-store.js';
import { LocalStore } from '../src/store/local-store.js';
import { RunStore } from '../src/store/run-store.js';
import { SessionStore } from '../src/store/session-store.js';
import { WarningStore } from '../src/store/warning-store.js';

let dir: string;
let db: Database.Database;
let keys: DeliveredKeyStore;
let fingerprints: FingerprintStore;
let warnings: WarningStore;
let runs: RunStore;
let sessions: SessionStore;

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '']);
  expect(child.status).toBe(0);
  return child.pid;
}

function open(): void {
  db = openDatabase(dir);
  keys = new DeliveredKeyStore(db);
  fingerprints = new FingerprintStore(db);
  warnings = new WarningStore(db);
  runs = new RunStore(db);
  sessions = new SessionStore(db);
}

beforeEach(() => {
  dir = tempDir('everme-');
  open();
});
afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function reopen(): void {
  db.close();
  open();
}

const warn = (code: WarningEntry['code'], count: number, lines: number[] = []): WarningEntry => ({
  code,
  count,
  samples: lines.map((line) => ({ file: 'messages.jsonl', line })),
});

describe('high-water marks', () => {
  it('round-trip per sink and conversation, ignore repeats, and can be forgotten', () => {
    keys.record('local', 'c1', ['a', 'b']);
    keys.record('local', 'c1', ['b', 'c']);
    keys.record('everme', 'c1', ['a']);
    keys.record('local', 'c2', ['z']);
    reopen();
    expect([...keys.keysOf('local', 'c1')].sort()).toEqual(['a', 'b', 'c']);
    expect([...keys.keysOf('everme', 'c1')]).toEqual(['a']);
    expect(keys.keysOf('everme', 'c2').size).toBe(0);

    keys.forget('local', 'c1', ['a', 'missing']);
    expect([...keys.keysOf('local', 'c1')].sort()).toEqual(['b', 'c']);
    expect([...keys.keysOf('everme', 'c1')]).toEqual(['a']);
  });
});

describe('fingerprints', () => {
  it('round-trip per sink, are replaced on set and removed on clear', () => {
    const fp: SessionFingerprint = { file: '/s/messages.jsonl', size: 1234, mtimeMs: 1_780_000_000_123.456, ino: 987654321, headHash: 'abc' };
    fingerprints.set('local', 's1', fp);
    reopen();
    expect(fingerprints.get('local', 's1')).toEqual(fp);
    expect(fingerprints.get('everme', 's1')).toBeUndefined();

    const grown = { ...fp, size: 2000, headHash: 'def' };
    fingerprints.set('local', 's1', grown);
    expect(fingerprints.get('local', 's1')).toEqual(grown);

    fingerprints.clear('local', 's1');
    expect(fingerprints.get('local', 's1')).toBeUndefined();
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
    warnings.replace(conv('c1', 10), [warn('invalid_json', 3, [4, 9])]);
    warnings.replace(conv('c1', 10), [warn('invalid_json', 2, [4]), warn('incomplete_tail', 1, [20])]);
    reopen();
    expect(warnings.list()).toEqual([
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

    warnings.replace(conv('c1', 10), []);
    expect(warnings.list()).toEqual([]);
  });

  it('merges repeated codes within one replacement into one entry', () => {
    warnings.replace(conv('c1'), [warn('invalid_json', 1, [1]), warn('invalid_json', 2, [7])]);
    expect(warnings.list()[0]!.warnings).toEqual([warn('invalid_json', 3, [1, 7])]);
  });

  it('keys a session without a conversation id by its directory, and drops that once the id is known', () => {
    const manifestOnly = { conversationId: null, sessionId: null, source: 'manifest', sessionDir: '/d/c9', createdAtMs: 5 };
    warnings.replace(manifestOnly, [warn('invalid_manifest', 1)]);
    warnings.replace(manifestOnly, [warn('invalid_manifest', 1)]);
    expect(warnings.list()).toEqual([{ ...manifestOnly, warnings: [warn('invalid_manifest', 1)] }]);

    warnings.replace(conv('c9', 5), [warn('invalid_record', 1, [2])]);
    expect(warnings.list().map((w) => [w.conversationId, w.warnings[0]!.code])).toEqual([['c9', 'invalid_record']]);
    expect(() => warnings.replace({ conversationId: null, sessionId: null, source: 'none' }, [warn('invalid_json', 1)])).toThrow();
  });

  it('lists in creation order and filters by conversation, code and time', () => {
    warnings.replace(conv('late', 300), [warn('invalid_json', 1, [1])]);
    warnings.replace(conv('early', 100), [warn('invalid_json', 1, [1]), warn('oversized_unit', 2)]);
    warnings.replace(conv('mid', 200), [warn('oversized_unit', 1)]);
    expect(warnings.list().map((w) => w.conversationId)).toEqual(['early', 'mid', 'late']);
    expect(warnings.list({ conversationId: 'mid' }).map((w) => w.conversationId)).toEqual(['mid']);

    const oversized = warnings.list({ code: 'oversized_unit' });
    expect(oversized.map((w) => w.conversationId)).toEqual(['early', 'mid']);
    expect(oversized[0]!.warnings).toEqual([warn('oversized_unit', 2)]);

    expect(warnings.list({ sinceMs: 200 }).map((w) => w.conversationId)).toEqual(['mid', 'late']);
  });
});

describe('runs', () => {
  it('records start and finish and returns the latest run of a kind', () => {
    expect(runs.last('sync')).toBeUndefined();
    const first = runs.start('sync', { sink: 'local' });
    runs.finish(first, { messages: 3 }, 'ok');
    const second = runs.start('sync', { sink: 'local' });
    runs.start('hook', {});

    const running = runs.last('sync')!;
    expect(running).toMatchObject({ id: second, kind: 'sync', params: { sink: 'local' } });
    expect(running.finishedAtMs).toBeUndefined();
    expect(running.status).toBeUndefined();

    runs.finish(second, { messages: 0, failures: [] }, 'partial');
    reopen();
    const done = runs.last('sync')!;
    expect(done).toMatchObject({ id: second, status: 'partial', summary: { messages: 0, failures: [] } });
    expect(done.finishedAtMs).toBeGreaterThanOrEqual(done.startedAtMs);
  });

  it('knows the earliest `since` of imports that ran to the end', () => {
    expect(runs.earliestImportSince()).toBeUndefined();
    const finish = (since: string | undefined, status: 'ok' | 'partial' | 'failed' | 'cancelled') =>
      runs.finish(runs.start('import', since === undefined ? {} : { since }), {}, status);
    finish('2026-05-01', 'ok');
    finish('2026-03-15', 'partial');
    finish('2025-01-01', 'failed');
    finish('2025-02-01', 'cancelled');
    finish(undefined, 'ok');
    runs.start('import', { since: '2024-01-01' });
    runs.finish(runs.start('sync', { since: '2020-01-01' }), {}, 'ok');
    expect(runs.earliestImportSince()).toBe('2026-03-15');
  });

  it('tells a run whose process is gone (killed outright) from one still running, and counts an interrupted import toward the horizon', () => {
    const running = runs.start('import', { since: '2024-01-01' });
    expect(runs.last('import')).toMatchObject({ id: running });
    expect(runs.last('import')!.interrupted).toBeUndefined();
    expect(runs.earliestImportSince()).toBeUndefined();

    // Its owner a process that has exited, as a run killed with SIGKILL leaves it.
    const killed = runs.start('import', { since: '2023-06-01' });
    db.prepare('UPDATE runs SET owner = ? WHERE id = ?').run(String(deadPid()), killed);
    expect(runs.last('import')).toMatchObject({ id: killed, interrupted: true });
    expect(runs.last('import')!.status).toBeUndefined();
    expect(runs.earliestImportSince()).toBe('2023-06-01');

    // A row an earlier release wrote names no owner: it cannot tell, and stays running.
    const unowned = runs.start('import', { since: '2022-01-01' });
    db.prepare('UPDATE runs SET owner = NULL WHERE id = ?').run(unowned);
    expect(runs.last('import')!.interrupted).toBeUndefined();
    expect(runs.earliestImportSince()).toBe('2023-06-01');
  });
});

describe('session memory', () => {
  it('remembers a session’s directory and workspace independently', () => {
    expect(sessions.dirFor('s1')).toBeUndefined();
    sessions.rememberDir('s1', '/d/one');
    expect(sessions.workspaceFor('s1')).toBeUndefined();
    sessions.rememberWorkspace('s1', '/w/one');
    sessions.rememberDir('s1', '/d/moved');
    reopen();
    expect(sessions.dirFor('s1')).toBe('/d/moved');
    expect(sessions.workspaceFor('s1')).toBe('/w/one');
  });
});

describe('the workspace a hook reported', () => {
  it('reaches a conversation stored without one, never overrides one its files named, and is what workspaceFor answers', () => {
    const conv = db.prepare('INSERT INTO conversations (conversation_id, session_id, source, workspace_dir) VALUES (?, ?, ?, ?)');
    conv.run('minimaxcode-s1', 's1', 'messages', null);
    conv.run('minimaxcode-s2', 's2', 'ledger', '/from/ledger');
    const conversationWorkspace = (sessionId: string): unknown => db.prepare('SELECT workspace_dir FROM conversations WHERE session_id = ?').pluck().get(sessionId);
    expect(sessions.workspaceFor('s1')).toBeUndefined();
    sessions.rememberWorkspace('s1', '/from/hook');
    sessions.rememberWorkspace('s2', '/from/hook/two');
    sessions.rememberWorkspace('s9', '/only/hook');
    expect(conversationWorkspace('s1')).toBe('/from/hook');
    expect(conversationWorkspace('s2')).toBe('/from/ledger');
    expect(sessions.workspaceFor('s1')).toBe('/from/hook');
    expect(sessions.workspaceFor('s2')).toBe('/from/hook/two');
    expect(sessions.workspaceFor('s9')).toBe('/only/hook');
    expect(sessions.workspaceFor('unknown')).toBeUndefined();
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
        keys.record('local', 'c1', messages.map((m) => m.key));
        if (fail) throw new Error('sink crashed after writing');
      })();

    expect(() => deliver(true)).toThrow('sink crashed');
    expect(store.counts()).toEqual({ conversations: 0, messages: 0 });
    expect(keys.keysOf('local', 'c1').size).toBe(0);
    expect(store.search('quokka')).toEqual([]);

    deliver(false);
    reopen();
    expect(new LocalStore(db).counts()).toEqual({ conversations: 1, messages: 2 });
    expect([...keys.keysOf('local', 'c1')].sort()).toEqual(['m1', 'm2']);
    expect(new LocalStore(db).search('quokka')).toHaveLength(1);
  });
});
