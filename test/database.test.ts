import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { storeAtVersion } from './support/store-at-version.js';
import { tempDir } from './support/temp.js';
import { EvermeError } from '../src/core/errors.js';
import { databasePath, MIGRATIONS, openDatabase, openMemoryDatabase, PAGE_SIZE, pagesOf } from '../src/store/database.js';
import { assertNotForeign, BUSY_TIMEOUT_MS, openReadonlyDatabase, SCHEMA_VERSION } from '../src/store/database-reader.js';
import { RunStore } from '../src/store/run-store.js';
import { FILL_CONVERSATION_WORKSPACE_SQL } from '../src/store/session-store.js';

function catchError(fn: () => unknown): EvermeError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(EvermeError);
    return err as EvermeError;
  }
  throw new Error('expected an EvermeError');
}

describe('migration 3: workspaces recorded by hooks reach conversations imported before', () => {
  it('fills a conversation without a workspace from the session the hook recorded, and leaves others alone', () => {
    const stateDir = tempDir();
    const raw = storeAtVersion(stateDir, 2);
    const conv = raw.prepare('INSERT INTO conversations (conversation_id, session_id, source, workspace_dir) VALUES (?, ?, ?, ?)');
    conv.run('minimaxcode-s1', 's1', 'messages', null);
    conv.run('minimaxcode-s2', 's2', 'ledger', '/from/ledger');
    conv.run('minimaxcode-s3', 's3', 'messages', null);
    raw.prepare('INSERT INTO sessions (session_id, workspace_dir) VALUES (?, ?)').run('s1', '/from/hook');
    raw.prepare('INSERT INTO sessions (session_id, workspace_dir) VALUES (?, ?)').run('s2', '/from/hook/too');
    raw.close();

    const db = openDatabase(stateDir);
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
      const rows = db.prepare('SELECT session_id, workspace_dir FROM conversations ORDER BY session_id').all();
      expect(rows).toEqual([
        { session_id: 's1', workspace_dir: '/from/hook' },
        { session_id: 's2', workspace_dir: '/from/ledger' },
        { session_id: 's3', workspace_dir: null },
      ]);
    } finally {
      db.close();
    }
  });
});

describe('migration 16: titles an earlier release stored as they were are masked', () => {
  it('masks a credential in a stored title and leaves other titles byte for byte', () => {
    const stateDir = tempDir();
    const raw = storeAtVersion(stateDir, 15);
    const put = raw.prepare('INSERT INTO session_meta (session_id, title, recorded_at_ms) VALUES (?, ?, 0)');
    put.run('s1', 'deploy with ghp_16C7e42F292c6912E7710c838347Ae178B4a today');
    put.run('s2', 'Fix the flaky widget test');
    put.run('s3', null);
    raw.close();

    const db = openDatabase(stateDir);
    try {
      const rows = db.prepare<[], { session_id: string; title: string | null }>('SELECT session_id, title FROM session_meta ORDER BY session_id').all();
      expect(rows[0]!.title).toMatch(/^deploy with \[REDACTED:github[^\]]*\] today$/);
      expect(rows.slice(1)).toEqual([
        { session_id: 's2', title: 'Fix the flaky widget test' },
        { session_id: 's3', title: null },
      ]);
    } finally {
      db.close();
    }
  });
});

describe('migration 17: runs record their owner', () => {
  it('keeps the runs an earlier release recorded, which name no owner and so read as before; new runs name this process', () => {
    const stateDir = tempDir();
    const raw = storeAtVersion(stateDir, 16);
    raw.prepare("INSERT INTO runs (kind, started_at_ms, params_json) VALUES ('import', 1, '{\"since\":\"2026-01-01\"}')").run();
    raw.close();

    const db = openDatabase(stateDir);
    try {
      const runs = new RunStore(db);
      const old = runs.last('import')!;
      expect(old).toMatchObject({ startedAtMs: 1, params: { since: '2026-01-01' } });
      expect(old.interrupted).toBeUndefined();
      const id = runs.start('sync', {});
      expect(db.prepare<[number], string>('SELECT owner FROM runs WHERE id = ?').pluck().get(id)).toMatch(new RegExp(`^${process.pid}(@\\d+)?$`));
    } finally {
      db.close();
    }
  });
});

/** The titles `session_meta` holds after a store at `version` (holding `s1`'s `title` and a plain `s2`) is opened by this build. */
function titlesMigratedFrom(version: number, title: string): unknown[] {
  const stateDir = tempDir();
  const raw = storeAtVersion(stateDir, version);
  const put = raw.prepare('INSERT INTO session_meta (session_id, title, recorded_at_ms) VALUES (?, ?, 0)');
  put.run('s1', title);
  put.run('s2', 'Fix the flaky widget test');
  raw.close();
  const db = openDatabase(stateDir);
  try {
    return db.prepare('SELECT session_id, title FROM session_meta ORDER BY session_id').all();
  } finally {
    db.close();
  }
}

describe('migration 18: a private span an earlier release kept in a stored title is hidden', () => {
  it('turns the span into [PRIVATE] and leaves other titles byte for byte', () => {
    expect(titlesMigratedFrom(17, 'fix the login flow <private>hunter2secretvalue</private> please')).toEqual([
      { session_id: 's1', title: 'fix the login flow [PRIVATE] please' },
      { session_id: 's2', title: 'Fix the flaky widget test' },
    ]);
  });
});

describe('migration 20: terminal controls an earlier release kept in a stored title are gone', () => {
  it('strips them, then hides the span an escape split, and leaves other titles byte for byte', () => {
    expect(titlesMigratedFrom(19, '\u001b[31mfix\u001b[0m the login flow <priv\u001b[0mate>hunter2secretvalue</private> please\u009b2J')).toEqual([
      { session_id: 's1', title: 'fix the login flow [PRIVATE] please' },
      { session_id: 's2', title: 'Fix the flaky widget test' },
    ]);
  });
});

describe('migration 7: an existing index is merged 64 segments at a time', () => {
  it('raises automerge to 64 and crisismerge to 128 on a store indexed under 16, and what it found it still finds', () => {
    const stateDir = tempDir();
    const raw = storeAtVersion(stateDir, 6);
    // A stored message and its index row: migration 9 rebuilds the index from the messages.
    raw.prepare("INSERT INTO conversations (conversation_id, session_id, source) VALUES ('c', 's', 'messages')").run();
    raw.prepare("INSERT INTO messages (id, conversation_id, msg_key, role, timestamp, content) VALUES (1, 'c', 'k', 'user', 1, 'the widget parser failed')").run();
    raw.prepare("INSERT INTO messages_fts (rowid, text) VALUES (1, 'the widget parser failed')").run();
    raw.close();

    const db = openDatabase(stateDir);
    try {
      const config = db.prepare<[], { k: string; v: number }>('SELECT k, v FROM messages_fts_config').all();
      expect(Object.fromEntries(config.map((row) => [row.k, row.v]))).toMatchObject({ automerge: 64, crisismerge: 128 });
      expect(db.prepare("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'widget'").pluck().all()).toEqual([1]);
    } finally {
      db.close();
    }
  });
});

describe('migration 9: the index finds English words by their stem', () => {
  it('re-indexes every stored message with the porter tokenizer: stems match, CJK substrings and tool calls still do', () => {
    const stateDir = tempDir();
    const raw = storeAtVersion(stateDir, 8);
    raw.prepare("INSERT INTO conversations (conversation_id, session_id, source) VALUES ('c', 's', 'messages')").run();
    const insert = raw.prepare('INSERT INTO messages (id, conversation_id, msg_key, role, timestamp, content, tool_calls_json) VALUES (?, ?, ?, ?, ?, ?, ?)');
    const index = raw.prepare('INSERT INTO messages_fts (rowid, text) VALUES (?, ?)');
    insert.run(1, 'c', 'k1', 'user', 1, 'We painted the fence', null);
    insert.run(2, 'c', 'k2', 'user', 2, '调整缓存的优先级', null);
    insert.run(3, 'c', 'k3', 'assistant', 3, '', JSON.stringify([{ id: 'x', type: 'function', name: 'ripgrep', arguments: '{"pattern":"needles"}' }]));
    for (const [id, text] of [[1, 'We painted the fence'], [2, '调 整 缓 存 的 优 先 级'], [3, 'ripgrep {"pattern":"needles"}']] as const) index.run(id, text);
    // Before: the old tokenizer finds no inflection.
    expect(raw.prepare("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'painting'").pluck().all()).toEqual([]);
    raw.close();

    const db = openDatabase(stateDir);
    try {
      const match = (q: string) => db.prepare<[string], number>('SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?').pluck().all(q);
      expect(match('painting')).toEqual([1]);
      expect(match('"优 先"')).toEqual([2]);
      expect(match('needle')).toEqual([3]);
      const config = db.prepare<[], { k: string; v: number }>('SELECT k, v FROM messages_fts_config').all();
      expect(Object.fromEntries(config.map((row) => [row.k, row.v]))).toMatchObject({ automerge: 64, crisismerge: 128 });
    } finally {
      db.close();
    }
  });
});

describe("migration 8: a session's conversations are found by session id", () => {
  /** The query plan's steps for `sql`. */
  const plan = (db: Database.Database, sql: string, ...params: string[]): string[] =>
    db
      .prepare<string[], { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
      .all(...params)
      .map((row) => row.detail);

  it('fills a recorded workspace through the session index, never every workspace-less conversation', () => {
    const db = openDatabase(tempDir());
    try {
      // Many conversations without a workspace: without the index, SQLite went through all of them.
      const conv = db.prepare('INSERT INTO conversations (conversation_id, session_id, source) VALUES (?, ?, ?)');
      for (let i = 0; i < 50; i++) conv.run(`minimaxcode-s${i}`, `s${i}`, 'messages');
      const steps = plan(db, FILL_CONVERSATION_WORKSPACE_SQL, '/w', 's1');
      expect(steps.some((step) => step.includes('conversations_by_session'))).toBe(true);
      expect(steps.some((step) => /^SCAN conversations\b/.test(step) || step.includes('conversations_by_workspace'))).toBe(false);
      db.prepare(FILL_CONVERSATION_WORKSPACE_SQL).run('/w', 's1');
      expect(db.prepare('SELECT session_id FROM conversations WHERE workspace_dir IS NOT NULL').pluck().all()).toEqual(['s1']);
    } finally {
      db.close();
    }
  });
});

describe('openDatabase', () => {
  it('creates a private state dir and file in WAL mode with the full schema', () => {
    const stateDir = path.join(tempDir(), 'nested', 'state');
    const db = openDatabase(stateDir);
    try {
      expect(fs.statSync(stateDir).mode & 0o777).toBe(0o700);
      expect(fs.statSync(databasePath(stateDir)).mode & 0o077).toBe(0);
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.pragma('synchronous', { simple: true })).toBe(1);
      expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
      expect(db.pragma('busy_timeout', { simple: true })).toBeGreaterThanOrEqual(5000);
      expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
      const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all();
      expect(tables).toEqual(expect.arrayContaining(['conversations', 'messages', 'messages_fts', 'delivered', 'runs', 'session_locks']));
      // Merged 64 segments at a time (migration 7): 16-way merges made the import's cost grow with the history.
      const ftsConfig = db.prepare<[], { k: string; v: number }>('SELECT k, v FROM messages_fts_config').all();
      expect(Object.fromEntries(ftsConfig.map((row) => [row.k, row.v]))).toMatchObject({ automerge: 64, crisismerge: 128 });
    } finally {
      db.close();
    }
  });

  it('creates a new store with 8 KiB pages, and counts a byte limit in its pages', () => {
    const db = openDatabase(tempDir());
    try {
      expect(db.pragma('page_size', { simple: true })).toBe(PAGE_SIZE);
      expect(PAGE_SIZE).toBe(8192);
      expect(pagesOf(db, 40 * 1024 * 1024)).toBe(5120);
    } finally {
      db.close();
    }
  });

  it('keeps the 4 KiB pages of a store an earlier release created, and reads and writes it as before', () => {
    const stateDir = tempDir();
    // SQLite's default page size, as every store before this release was created with.
    const raw = storeAtVersion(stateDir, MIGRATIONS.length);
    raw.pragma('journal_mode = WAL');
    raw.prepare("INSERT INTO runs (kind, started_at_ms, params_json) VALUES ('import', 1, '{}')").run();
    expect(raw.pragma('page_size', { simple: true })).toBe(4096);
    raw.close();

    const db = openDatabase(stateDir);
    try {
      expect(db.pragma('page_size', { simple: true })).toBe(4096);
      expect(pagesOf(db, 40 * 1024 * 1024)).toBe(10_240);
      db.prepare("INSERT INTO runs (kind, started_at_ms, params_json) VALUES ('sync', 2, '{}')").run();
      expect(db.prepare('SELECT kind FROM runs ORDER BY id').pluck().all()).toEqual(['import', 'sync']);
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      db.close();
    }
  });

  it('reopens an existing database without re-running migrations or losing data', () => {
    const stateDir = tempDir();
    const first = openDatabase(stateDir);
    first.prepare("INSERT INTO runs (kind, started_at_ms, params_json) VALUES ('sync', 1, '{}')").run();
    first.close();

    const second = openDatabase(stateDir);
    try {
      expect(second.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
      expect(second.prepare('SELECT count(*) FROM runs').pluck().get()).toBe(1);
    } finally {
      second.close();
    }
  });

  it('gives a reader the same wait for another process\'s lock as the writer (busy_timeout)', () => {
    const stateDir = tempDir();
    openDatabase(stateDir).close();
    const reader = openReadonlyDatabase(stateDir);
    expect(reader.pragma('busy_timeout', { simple: true })).toBe(BUSY_TIMEOUT_MS);
    reader.close();
  });

  it('reads the schema version its migrations write: the readers neither refuse the current store nor read an outdated one', () => {
    expect(SCHEMA_VERSION).toBe(MIGRATIONS.length);
  });

  it('a reader refuses a store that still needs an upgrade, saying to run sync, and leaves it as it was', () => {
    const stateDir = tempDir();
    storeAtVersion(stateDir, MIGRATIONS.length - 1).close();
    const err = catchError(() => openReadonlyDatabase(stateDir));
    expect(err.type).toBe('io');
    expect(err.code).toBe('database_outdated');
    expect(err.hint).toMatch(/everme sync/);
    const check = new Database(databasePath(stateDir));
    expect(check.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length - 1);
    check.close();
    // The writer upgrades it; then it reads.
    openDatabase(stateDir).close();
    openReadonlyDatabase(stateDir).close();
  });

  it('waits for a store a first import or a sync is migrating right now, and reads it once migrated', async () => {
    const stateDir = tempDir();
    storeAtVersion(stateDir, MIGRATIONS.length - 1).close();
    // Another process finishes the migration a moment after the reader looks.
    const migrator = spawn(
      process.execPath,
      ['-e', `const D = require('better-sqlite3'); process.stdout.write('ready'); setTimeout(() => { const db = new D(${JSON.stringify(databasePath(stateDir))}); db.pragma('user_version = ${MIGRATIONS.length}'); db.close(); }, 200);`],
      { cwd: path.join(import.meta.dirname, '..'), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve) => migrator.stdout.once('data', () => resolve()));
    const db = openReadonlyDatabase(stateDir);
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    db.close();
    await new Promise((resolve) => migrator.once('exit', resolve));
  });

  it('answers at once for an outdated store nobody has written to for a while', () => {
    const stateDir = tempDir();
    storeAtVersion(stateDir, MIGRATIONS.length - 1).close();
    const old = new Date(Date.now() - 60_000);
    for (const suffix of ['', '-wal']) if (fs.existsSync(databasePath(stateDir) + suffix)) fs.utimesSync(databasePath(stateDir) + suffix, old, old);
    const started = Date.now();
    expect(catchError(() => openReadonlyDatabase(stateDir)).code).toBe('database_outdated');
    expect(Date.now() - started).toBeLessThan(500);
  });

  it('reads an empty file, as a first import creates it, as no store yet: never an upgrade to run', () => {
    const stateDir = tempDir();
    fs.mkdirSync(stateDir, { recursive: true });
    fs.writeFileSync(databasePath(stateDir), '');
    const err = catchError(() => openReadonlyDatabase(stateDir));
    expect(err.code).toBe('database_missing');
    expect(err.hint).toMatch(/everme import/);
  });

  it('refuses a database written by a newer schema with an io error and a hint', () => {
    const stateDir = tempDir();
    openDatabase(stateDir).close();
    const raw = new Database(databasePath(stateDir));
    raw.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    raw.close();

    const err = catchError(() => openDatabase(stateDir));
    expect(err.type).toBe('io');
    expect(err.code).toBe('database_too_new');
    expect(err.hint).toMatch(/upgrade/i);
    expect(err.message).toContain(databasePath(stateDir));
    // Refusing must not touch the newer file.
    const check = new Database(databasePath(stateDir));
    expect(check.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length + 1);
    check.close();
  });

  it("refuses another program's SQLite file, read or written, and never writes everme's tables into it", () => {
    const stateDir = tempDir();
    fs.mkdirSync(stateDir, { recursive: true });
    const foreign = new Database(databasePath(stateDir));
    foreign.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('my other app data');");
    foreign.close();
    const before = fs.readFileSync(databasePath(stateDir));

    for (const open of [() => openDatabase(stateDir), () => openDatabase(stateDir, { readonly: true })]) {
      const err = catchError(open);
      expect(err.type).toBe('io');
      expect(err.code).toBe('database_unavailable');
      expect(err.message).toMatch(/not an everme database/);
      expect(err.hint).toContain(databasePath(stateDir));
    }
    expect(fs.readFileSync(databasePath(stateDir)).equals(before)).toBe(true);
    const check = new Database(databasePath(stateDir), { readonly: true });
    expect(check.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all()).toEqual(['notes']);
    check.close();
  });

  it('reports an unusable state path as io, naming the path', () => {
    const parent = tempDir();
    const blocker = path.join(parent, 'not-a-dir');
    fs.writeFileSync(blocker, 'x');
    const underFile = catchError(() => openDatabase(path.join(blocker, 'state')));
    expect(underFile.type).toBe('io');
    expect(underFile.message).toContain(path.join(blocker, 'state'));

    const garbageDir = tempDir();
    fs.writeFileSync(databasePath(garbageDir), 'this is not sqlite, just long enough to have a header page '.repeat(100));
    const garbage = catchError(() => openDatabase(garbageDir));
    expect(garbage.type).toBe('io');
    // One message in every command (#29); the file is named in the hint and the detail.
    expect(garbage.hint).toContain(databasePath(garbageDir));
    expect(garbage.detail).toMatchObject({ path: databasePath(garbageDir) });
  });

  it('answers a state dir that is a file with an io error when reading, never "no store yet"', () => {
    const file = path.join(tempDir(), 'a-file');
    fs.writeFileSync(file, 'x');
    const err = catchError(() => openDatabase(file, { readonly: true }));
    expect(err.type).toBe('io');
    expect(err.code).toBe('state_dir_not_a_directory');
    expect(err.message).toContain(file);
    expect(err.hint).toMatch(/EVERME_STATE_DIR/);
  });

  it('opens read-only without creating anything, and refuses writes', () => {
    const missing = path.join(tempDir(), 'absent');
    const err = catchError(() => openDatabase(missing, { readonly: true }));
    expect(err.type).toBe('io');
    expect(fs.existsSync(missing)).toBe(false);

    const stateDir = tempDir();
    const writer = openDatabase(stateDir);
    writer.prepare("INSERT INTO runs (kind, started_at_ms, params_json) VALUES ('sync', 1, '{}')").run();
    const reader = openDatabase(stateDir, { readonly: true });
    try {
      expect(reader.prepare('SELECT count(*) FROM runs').pluck().get()).toBe(1);
      expect(() => reader.prepare("INSERT INTO runs (kind, started_at_ms, params_json) VALUES ('sync', 2, '{}')").run()).toThrow(
        /readonly/i,
      );
    } finally {
      reader.close();
      writer.close();
    }
  });

  it('waits for another process holding the write lock instead of failing (busy_timeout)', async () => {
    const stateDir = tempDir();
    const db = openDatabase(stateDir);
    try {
      // A second process takes the write lock, writes, and holds it for a while before committing.
      const script = `
        import Database from 'better-sqlite3';
        const db = new Database(process.argv[1], { timeout: 5000 });
        db.exec('BEGIN IMMEDIATE');
        db.prepare("INSERT INTO runs (kind, started_at_ms, params_json) VALUES ('hook', 1, '{}')").run();
        process.stdout.write('locked\\n');
        const until = Date.now() + 400;
        while (Date.now() < until) {}
        db.exec('COMMIT');
        db.close();
      `;
      const child = spawn(process.execPath, ['--input-type=module', '-e', script, databasePath(stateDir)], {
        cwd: process.cwd(),
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          if (chunk.toString().includes('locked')) resolve();
        });
        child.on('exit', () => reject(new Error('child exited before taking the lock')));
      });

      const started = Date.now();
      db.prepare("INSERT INTO runs (kind, started_at_ms, params_json) VALUES ('import', 2, '{}')").run();
      expect(Date.now() - started).toBeGreaterThan(50);
      expect(await exited).toBe(0);
      expect(db.prepare('SELECT kind FROM runs ORDER BY started_at_ms').pluck().all()).toEqual(['hook', 'import']);
    } finally {
      db.close();
    }
  });

  it('creates the store while another process holds a lock on the fresh file, instead of failing busy', async () => {
    // Two everme processes creating the store at once (two imports, a sync and a hook worker): one
    // is switching the fresh file to WAL, holding its lock, when the other asks to switch it too.
    // SQLite answers that second switch SQLITE_BUSY at once, without its busy timeout.
    const stateDir = tempDir();
    const file = databasePath(stateDir);
    fs.closeSync(fs.openSync(file, 'a', 0o600));
    const script = `
      const Database = require('better-sqlite3');
      const db = new Database(process.argv[1], { timeout: 5000 });
      db.exec('BEGIN IMMEDIATE');
      process.stdout.write('locked\\n');
      setTimeout(() => { db.exec('ROLLBACK'); db.close(); }, 1000);
    `;
    const child = spawn(process.execPath, ['-e', script, file], { cwd: path.join(import.meta.dirname, '..'), stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('locked')) resolve();
      });
      child.on('exit', () => reject(new Error('child exited before taking the lock')));
    });

    const db = openDatabase(stateDir);
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    } finally {
      db.close();
    }
    expect(await exited).toBe(0);
  });

  it('does not take a fresh store for a foreign one when another process creates it while this one looks', () => {
    const stateDir = tempDir();
    const file = databasePath(stateDir);
    fs.closeSync(fs.openSync(file, 'a', 0o600));
    const looking = new Database(file);
    // The other process's first migration (its tables and version in one transaction) commits just
    // after this connection's first read of the file, before any read after it.
    let created = false;
    const afterFirstRead = <T>(read: () => T): T => {
      const result = read();
      if (!created) {
        created = true;
        openDatabase(stateDir).close();
      }
      return result;
    };
    const interleaved = new Proxy(looking, {
      get(target, prop) {
        if (prop === 'pragma') return (...args: Parameters<typeof target.pragma>) => afterFirstRead(() => target.pragma(...args));
        if (prop === 'prepare') {
          return (sql: string) => {
            const statement = target.prepare(sql);
            const get = statement.get.bind(statement);
            statement.get = (...params: unknown[]) => afterFirstRead(() => get(...params));
            return statement;
          };
        }
        const value: unknown = Reflect.get(target, prop);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    try {
      expect(() => assertNotForeign(interleaved, file)).not.toThrow();
      expect(created).toBe(true);
    } finally {
      looking.close();
    }
    // The store the other process made is whole.
    const db = openDatabase(stateDir);
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    db.close();
  });

  it('gives dry runs a throwaway database with the same schema', () => {
    const db = openMemoryDatabase();
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(db.memory).toBe(true);
    db.close();
  });
});
