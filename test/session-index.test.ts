import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readSessionIndex, type SessionIndexRead } from '../src/transcript/session-index.js';
import { openRuntimeState } from '../src/transcript/runtime-state.js';
import { repoRoot, tempDir } from './transcript-helpers.js';
import { exclusiveWriter, indexFiles, indexRecord, liveHost, sessionIndexFile, untouchable, VARIANTS, writeSessionIndex } from './support/session-index-host.js';
import { traversable } from './support/traversable.js';

const A = 'mvs_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
const B = 'mvs_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
const C = 'mvs_cccccccccccccccccccccccccccccccc';

let dirs: string[] = [];
let savedTmp: string | undefined;
let tmp: string;

function fresh(): string {
  const d = tempDir();
  dirs.push(d);
  return d;
}

beforeEach(() => {
  // The reader's private copies go to the temp dir: one of our own, to see that none is left behind.
  savedTmp = process.env.TMPDIR;
  tmp = fresh();
  dirs.push(tmp);
  process.env.TMPDIR = tmp;
});

afterEach(() => {
  if (savedTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmp;
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  dirs = [];
});

function ok(read: SessionIndexRead): Extract<SessionIndexRead, { status: 'ok' }> {
  if (read.status !== 'ok') throw new Error(`index unavailable: ${read.reason} (${read.message})`);
  return read;
}

describe('reading the session index, in each schema variant', () => {
  for (const variant of VARIANTS) {
    it(`${variant}: workspace, title, kind, visibility, archive flag, parent and the host's times, from the columns the build has, else record_json`, () => {
      const data = fresh();
      writeSessionIndex(data, variant, [
        indexRecord(A, { workspaceDir: '/home/u/widget', title: 'Fix the widget', isDefaultWorkspace: false, createdAtMs: 1000, updatedAtMs: 2000 }),
        indexRecord(B, { workspaceDir: '/home/u/.minimax/workspace', isDefaultWorkspace: true, sessionType: 'branch', sessionKind: 'task', parentSessionId: A, archived: true, visibility: 'hidden' }),
      ]);
      const read = ok(readSessionIndex(data));
      expect(read.known).toBe(2);
      expect(read.sessions.get(A)).toEqual({
        sessionId: A,
        workspaceDir: '/home/u/widget',
        defaultWorkspace: false,
        title: 'Fix the widget',
        kind: 'conversation',
        sessionType: 'root',
        visibility: 'visible',
        archived: false,
        createdAtMs: 1000,
        updatedAtMs: 2000,
      });
      expect(read.sessions.get(B)).toMatchObject({ defaultWorkspace: true, kind: 'task', sessionType: 'branch', parentSessionId: A, archived: true, visibility: 'hidden' });
      expect(read.schema.recordJson).toBe(true);
      expect(read.schema.name).toBe({ record_json: 'record_json only', '0.5.4': '0.5.4 (record_json + workspace_dir)', newest: 'record_json + columns' }[variant]);
    });
  }

  it('prefers a column to record_json, and falls back to record_json where the column is NULL', () => {
    const data = fresh();
    const file = writeSessionIndex(data, 'newest', [indexRecord(A, { workspaceDir: '/record/dir', title: 'Record title' }), indexRecord(B, { workspaceDir: '/b', title: 'B title' })]);
    const db = new Database(file);
    db.prepare("UPDATE local_runtime_sessions SET workspace_dir = '/column/dir', title = 'Column title' WHERE session_id = ?").run(A);
    db.prepare('UPDATE local_runtime_sessions SET workspace_dir = NULL, title = NULL, session_kind = NULL WHERE session_id = ?').run(B);
    db.close();
    const read = ok(readSessionIndex(data));
    expect(read.sessions.get(A)).toMatchObject({ workspaceDir: '/column/dir', title: 'Column title' });
    expect(read.sessions.get(B)).toMatchObject({ workspaceDir: '/b', title: 'B title', kind: 'conversation' });
  });

  it('a row whose record_json is not JSON keeps what its columns say; the other rows are read', () => {
    const data = fresh();
    const file = writeSessionIndex(data, '0.5.4', [indexRecord(A, { workspaceDir: '/a', title: 'A' }), indexRecord(B, { workspaceDir: '/b', title: 'B' })]);
    const db = new Database(file);
    db.prepare("UPDATE local_runtime_sessions SET record_json = '{not json' WHERE session_id = ?").run(A);
    db.close();
    const read = ok(readSessionIndex(data));
    expect(read.sessions.get(A)).toEqual({ sessionId: A, workspaceDir: '/a', updatedAtMs: expect.any(Number) as number });
    expect(read.sessions.get(B)).toMatchObject({ workspaceDir: '/b', title: 'B' });
  });

  it('values of the wrong type are unknown, not guessed', () => {
    const data = fresh();
    const file = writeSessionIndex(data, 'record_json', []);
    const db = new Database(file);
    db.prepare('INSERT INTO local_runtime_sessions (session_id, record_json, updated_at_ms) VALUES (?, ?, ?)').run(
      A,
      JSON.stringify({ sessionId: A, workspaceDir: 42, title: '   ', sessionKind: ['task'], archived: 'yes', createdAtMs: 'soon' }),
      5,
    );
    db.close();
    expect(ok(readSessionIndex(data)).sessions.get(A)).toEqual({ sessionId: A, updatedAtMs: 5 });
  });

  it('asked for some sessions, returns those and counts every row', () => {
    const data = fresh();
    writeSessionIndex(data, 'newest', [indexRecord(A, { workspaceDir: '/a' }), indexRecord(B, { workspaceDir: '/b' }), indexRecord(C, { workspaceDir: '/c' })]);
    const read = ok(readSessionIndex(data, { sessionIds: [B, 'mvs_unknown'] }));
    expect([...read.sessions.keys()]).toEqual([B]);
    expect(read.known).toBe(3);
  });
});

describe('a live host', () => {
  for (const variant of VARIANTS) {
    it(`${variant}: a row written by a connection that stays open in WAL mode and never checkpoints is read, and the files stay as they were`, () => {
      const data = fresh();
      writeSessionIndex(data, variant, [indexRecord(A, { workspaceDir: '/a' })]);
      const host = liveHost(data, variant);
      try {
        host.put([indexRecord(B, { workspaceDir: '/only/in/the/wal', title: 'New session' })]);
        const files = indexFiles(data);
        expect(files['runtime-state.sqlite-wal']?.size).toBeGreaterThan(0);
        const before = untouchable(data);
        const read = ok(readSessionIndex(data));
        expect(read.mode).toBe('live');
        expect(read.sessions.get(B)).toMatchObject({ workspaceDir: '/only/in/the/wal', ...(variant === 'newest' || variant === 'record_json' ? { title: 'New session' } : {}) });
        expect(untouchable(data)).toEqual(before);
      } finally {
        host.close();
      }
    });
  }

  it('after a host that stopped without closing (-wal and -shm left behind): read in place, nothing checkpointed or removed', () => {
    const data = fresh();
    writeSessionIndex(data, 'newest', []);
    const host = liveHost(data, 'newest');
    host.put([indexRecord(A, { workspaceDir: '/a' })]);
    // A copy of the three files as they are while the host runs, as a killed host leaves them.
    const crashed = fresh();
    fs.mkdirSync(path.dirname(sessionIndexFile(crashed)), { recursive: true });
    for (const suffix of ['', '-wal', '-shm']) fs.copyFileSync(`${sessionIndexFile(data)}${suffix}`, `${sessionIndexFile(crashed)}${suffix}`);
    host.close();
    const before = untouchable(crashed);
    expect(ok(readSessionIndex(crashed)).sessions.get(A)).toMatchObject({ workspaceDir: '/a' });
    expect(untouchable(crashed)).toEqual(before);
  });
});

describe('an index at rest (the host closed it: WAL mode, no -wal, no -shm)', () => {
  it('is read from a private copy: SQLite would create -wal and -shm beside it, and none appears; the copy is removed', () => {
    const data = fresh();
    writeSessionIndex(data, 'newest', [indexRecord(A, { workspaceDir: '/a', title: 'At rest' })]);
    const before = indexFiles(data);
    expect(before['runtime-state.sqlite-wal']).toBeNull();
    expect(before['runtime-state.sqlite-shm']).toBeNull();
    const read = ok(readSessionIndex(data));
    expect(read.mode).toBe('snapshot');
    expect(read.sessions.get(A)).toMatchObject({ title: 'At rest' });
    expect(indexFiles(data)).toEqual(before);
    expect(fs.readdirSync(path.dirname(sessionIndexFile(data)))).toEqual(['runtime-state.sqlite']);
    expect(fs.readdirSync(tmp).filter((f) => f.startsWith('everme-runtime-state-'))).toEqual([]);
  });

  it('as SQLite itself would do it: a plain read-only connection leaves -wal and -shm behind (why the copy)', () => {
    const data = fresh();
    const file = writeSessionIndex(data, 'newest', [indexRecord(A)]);
    const db = new Database(file, { readonly: true, fileMustExist: true });
    db.prepare('SELECT count(*) FROM local_runtime_sessions').get();
    db.close();
    expect(fs.readdirSync(path.dirname(file)).sort()).toEqual(['runtime-state.sqlite', 'runtime-state.sqlite-shm', 'runtime-state.sqlite-wal']);
  });

  it('a rollback-journal index is opened in place, read-only, creating nothing', () => {
    const data = fresh();
    const file = writeSessionIndex(data, 'record_json', [indexRecord(A, { workspaceDir: '/a' })]);
    const db = new Database(file);
    db.pragma('journal_mode = DELETE');
    db.close();
    const before = indexFiles(data);
    const read = ok(readSessionIndex(data));
    expect(read.mode).toBe('direct');
    expect(read.sessions.get(A)).toMatchObject({ workspaceDir: '/a' });
    expect(indexFiles(data)).toEqual(before);
  });
});

describe('an index in a directory the reader may not write to', () => {
  /**
   * Runs `code` in a child that cannot write to `dir`: as `nobody` when the tests run as root (root
   * writes anywhere), as this user otherwise. The directory is made read-only for everyone but root.
   */
  function asReader(dir: string, code: string): { status: number | null; stdout: string; stderr: string } {
    const root = process.getuid?.() === 0;
    // A temp dir the reader may use for its private copy, and the way down to `dir`.
    const readerTmp = fresh();
    fs.chmodSync(readerTmp, 0o1777);
    expect(fs.statSync(dir).mode & 0o222).toBe(0);
    // The suite's temp dirs (0700, made by mkdtemp) must let the reader pass on its way down, and so
    // must the checkout it runs the built code from (a clone made in a `mktemp -d` directory is 0700).
    // The ancestors only: each directory's own mode is the test's.
    const opened = traversable([dir, readerTmp, path.join(repoRoot, 'dist')].map((d) => path.dirname(d)));
    try {
      const result = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
        cwd: repoRoot,
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TMPDIR: readerTmp },
        ...(root ? { uid: 65534, gid: 65534 } : {}),
      });
      return { status: result.status, stdout: result.stdout, stderr: result.stderr };
    } finally {
      for (const [d, mode] of opened) fs.chmodSync(d, mode);
    }
  }

  it('at rest (no -wal, no -shm) is read all the same, while SQLite alone cannot open it read-only there', () => {
    const data = fresh();
    const file = writeSessionIndex(data, 'newest', [indexRecord(A, { workspaceDir: '/a', title: 'Unwritable' })]);
    // Readable by anyone, writable by nobody but root.
    for (let d = path.dirname(file); d.startsWith(data); d = path.dirname(d)) fs.chmodSync(d, 0o555);
    fs.chmodSync(data, 0o555);
    fs.chmodSync(file, 0o444);
    const before = indexFiles(data);
    const ours = asReader(
      data,
      `import { readSessionIndex } from ${JSON.stringify(path.join(repoRoot, 'dist/src/transcript/session-index.js'))};
       const r = readSessionIndex(${JSON.stringify(data)});
       process.stdout.write(JSON.stringify(r.status === 'ok' ? [...r.sessions.values()] : r));`,
    );
    expect(ours.status, ours.stderr).toBe(0);
    expect(JSON.parse(ours.stdout), ours.stdout).toMatchObject([{ sessionId: A, title: "Unwritable" }]);
    const plain = asReader(
      data,
      `import Database from 'better-sqlite3';
       try { const db = new Database(${JSON.stringify(file)}, { readonly: true, fileMustExist: true }); db.prepare('SELECT 1 FROM local_runtime_sessions').get(); process.stdout.write('read'); }
       catch (e) { process.stdout.write(String(e.code)); }`,
    );
    expect(plain.stdout).toMatch(/^SQLITE_/);
    expect(indexFiles(data)).toEqual(before);
    for (let d = path.dirname(file); d.startsWith(data); d = path.dirname(d)) fs.chmodSync(d, 0o755);
    fs.chmodSync(data, 0o755);
  });
});

describe('index trouble is an answer with its reason, never a failure', () => {
  it('absent', () => {
    const read = readSessionIndex(fresh());
    expect(read).toMatchObject({ status: 'unavailable', reason: 'absent' });
  });

  it('corrupt: not a database, an empty file, a damaged one', () => {
    for (const bytes of [Buffer.from('this is not sqlite at all, just text '.repeat(10)), Buffer.alloc(0)]) {
      const data = fresh();
      const file = sessionIndexFile(data);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, bytes);
      const before = indexFiles(data);
      expect(readSessionIndex(data)).toMatchObject({ status: 'unavailable', reason: 'corrupt' });
      expect(indexFiles(data)).toEqual(before);
    }
    // A real header over pages of noise.
    const data = fresh();
    const file = writeSessionIndex(data, 'newest', [indexRecord(A)]);
    const bytes = fs.readFileSync(file);
    for (let i = 100; i < bytes.length; i++) bytes[i] = (i * 7) & 0xff;
    fs.writeFileSync(file, bytes);
    expect(readSessionIndex(data)).toMatchObject({ status: 'unavailable', reason: 'corrupt' });
  });

  it('unknown schema: no sessions table, or one with neither record_json nor workspace_dir', () => {
    const data = fresh();
    const file = sessionIndexFile(data);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    let db = new Database(file);
    db.exec('CREATE TABLE something_else (a)');
    db.close();
    expect(readSessionIndex(data)).toMatchObject({ status: 'unavailable', reason: 'unknown_schema' });
    db = new Database(file);
    db.exec('CREATE TABLE local_runtime_sessions (session_id TEXT PRIMARY KEY, blob BLOB)');
    db.close();
    expect(readSessionIndex(data)).toMatchObject({ status: 'unavailable', reason: 'unknown_schema' });
  });

  it('locked by an exclusive writer in WAL mode: at once, nothing created', async () => {
    const data = fresh();
    const file = writeSessionIndex(data, 'newest', [indexRecord(A)]);
    const writer = await exclusiveWriter(file, 'wal');
    try {
      const before = indexFiles(data);
      expect(before['runtime-state.sqlite-shm']).toBeNull();
      expect(readSessionIndex(data)).toMatchObject({ status: 'unavailable', reason: 'locked' });
      expect(indexFiles(data)).toEqual(before);
    } finally {
      await writer.stop();
    }
  });

  it('locked by an exclusive writer in rollback-journal mode: given up after the busy timeout, not later', async () => {
    const data = fresh();
    const file = writeSessionIndex(data, 'newest', [indexRecord(A)]);
    const db = new Database(file);
    db.pragma('journal_mode = DELETE');
    db.close();
    const writer = await exclusiveWriter(file, 'delete');
    try {
      const started = Date.now();
      expect(readSessionIndex(data, { busyTimeoutMs: 200 })).toMatchObject({ status: 'unavailable', reason: 'locked' });
      // Waits about its busy timeout; the margin is for a loaded machine, far below any run's length.
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      await writer.stop();
    }
  });

  it('a directory where the file should be is unreadable', () => {
    const data = fresh();
    fs.mkdirSync(sessionIndexFile(data), { recursive: true });
    expect(openRuntimeState(sessionIndexFile(data))).toMatchObject({ ok: false, trouble: 'unreadable' });
  });
});
