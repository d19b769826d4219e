import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { EvermeError, exitCodeFor } from '../src/core/errors.js';
import { SessionLocks } from '../src/engine/session-lock.js';
import { FingerprintStore } from '../src/store/fingerprint-store.js';
import { WarningStore } from '../src/store/warning-store.js';
import { ThreadSessionLocks } from '../src/engine/thread-session-locks.js';
import { openDatabase } from '../src/store/database.js';
import { encodeWrite, LocalCommitter, storeWriteError, type SessionWrite } from '../src/store/local-commit.js';
import { InlineWriter, ScalingWriter, WriterThread, type LocalWriter } from '../src/store/local-writer.js';
import { LocalStore } from '../src/store/local-store.js';
import { LocalSink } from '../src/sinks/local/local-sink.js';
import { groupLength } from '../src/store/write-group.js';
import { WRITE_TURN_BYTES, WriteTurn } from '../src/store/write-turn.js';
import { ensureBuilt, repoRoot } from './support/cli.js';
import { tempDir } from './transcript-helpers.js';

/** Sources have no thread entry beside them: threaded tests use the built one (`npm run build`). */
function builtThreadUrl(): URL {
  ensureBuilt();
  const file = path.join(repoRoot, 'dist', 'src', 'store', 'local-writer-thread.js');
  if (!fs.existsSync(file)) throw new Error('dist/ predates the writer thread: run `npm run build` first');
  return new URL(`file://${file}`);
}

function sessionWrite(n: number, messages = 3, withState = true): SessionWrite {
  const conversationId = `conv-${n}`;
  const sessionId = `mvs_${n}`;
  const write: SessionWrite = {
    conversation: { conversationId, sessionId, source: 'messages', historyFile: `/h/${n}/messages.jsonl`, createdAtMs: 1000 + n },
    messages: Array.from({ length: messages }, (_, i) => ({
      key: `k${i}`,
      message: { role: 'user' as const, timestamp: 2000 + i, content: `quokka ${n} says ${i}` },
    })),
  };
  if (withState) {
    write.state = {
      sinkName: 'local',
      sessionId,
      warningsOwner: { conversationId, sessionId, source: 'messages', sessionDir: `/s/${n}` },
      warnings: [{ code: 'invalid_json', count: 2, samples: [{ file: 'messages.jsonl', line: 4 }] }],
      fingerprint: { file: `/h/${n}/messages.jsonl`, size: 10 + n, mtimeMs: 5, ino: 7, headHash: 'h' },
    };
  }
  return write;
}

/** What the store holds for conversation n: its keys, and whether its state landed with them. */
function stored(stateDir: string, n: number): { keys: string[]; fingerprint: boolean; warnings: number } {
  const db = openDatabase(stateDir, { readonly: true });
  try {
    return {
      keys: [...new LocalStore(db).keysOf(`conv-${n}`)].sort(),
      fingerprint: new FingerprintStore(db).get('local', `mvs_${n}`) !== undefined,
      warnings: new WarningStore(db).list({ conversationId: `conv-${n}` }).length,
    };
  } finally {
    db.close();
  }
}

function failWritesOf(stateDir: string, conversationId: string): void {
  const db = openDatabase(stateDir);
  db.exec(`CREATE TRIGGER fail_one BEFORE INSERT ON messages WHEN NEW.conversation_id = '${conversationId}'
           BEGIN SELECT RAISE(ABORT, 'forced failure'); END;`);
  db.close();
}

const opened: Array<{ close(): void }> = [];
afterEach(() => {
  for (const thing of opened.splice(0)) thing.close();
});

function track<T extends { close(): void }>(thing: T): T {
  opened.push(thing);
  return thing;
}

describe('storeWriteError', () => {
  it('makes a full disk an io error the user can act on, and a constraint a defect', () => {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE t (v TEXT NOT NULL)');
    db.pragma('max_page_count = 2');
    let full: unknown;
    try {
      db.prepare('INSERT INTO t VALUES (?)').run('x'.repeat(100_000));
    } catch (err) {
      full = err;
    }
    let constraint: unknown;
    try {
      db.prepare('INSERT INTO t VALUES (NULL)').run();
    } catch (err) {
      constraint = err;
    }
    db.close();
    expect(storeWriteError(full)).toMatchObject({ type: 'io', code: 'sqlite_full' });
    expect(storeWriteError(constraint)).toMatchObject({ type: 'internal', code: 'sqlite_constraint_notnull' });
    const own = new EvermeError('conflict', 'kept as it is');
    expect(storeWriteError(own)).toBe(own);
  });
});

describe('a store write another connection holds the write lock against', () => {
  it('fails, once the busy timeout is out, as the busy store everywhere else does: conflict, database_busy, exit 1', async () => {
    const dir = tempDir();
    openDatabase(dir).close();
    // Another everme process mid-write: a real connection holding the write lock.
    const other = track(new Database(path.join(dir, 'everme.db')));
    other.exec('BEGIN IMMEDIATE');
    const writer = track(new InlineWriter(track(openDatabase(dir))));
    const failed: unknown = await writer.write(encodeWrite(sessionWrite(1))).then(
      () => undefined,
      (err: unknown) => err,
    );
    other.exec('ROLLBACK');
    expect(failed).toBeInstanceOf(EvermeError);
    expect(failed).toMatchObject({ type: 'conflict', code: 'database_busy', detail: { sqliteCode: 'SQLITE_BUSY' } });
    expect(exitCodeFor((failed as EvermeError).type)).toBe(1);
    expect(stored(dir, 1).keys).toEqual([]);
  }, 20_000);
});

describe.each([
  ['inline', (dir: string) => new InlineWriter(track(openDatabase(dir)))],
  ['on a writer thread', (dir: string) => new WriterThread(dir, builtThreadUrl())],
] as const)('a LocalWriter committing %s', (_name, make: (dir: string) => LocalWriter) => {
  it('commits messages, warnings and fingerprint of a session together, visible to another connection', async () => {
    const dir = tempDir();
    openDatabase(dir).close();
    const writer = track(make(dir));
    await writer.write(encodeWrite(sessionWrite(1, 3, false)));
    expect(stored(dir, 1)).toEqual({ keys: ['k0', 'k1', 'k2'], fingerprint: false, warnings: 0 });
    await writer.write(encodeWrite(sessionWrite(2)));
    expect(stored(dir, 2)).toEqual({ keys: ['k0', 'k1', 'k2'], fingerprint: true, warnings: 1 });
  });

  it('fails a write with nothing of it committed, and goes on with the next one', async () => {
    const dir = tempDir();
    openDatabase(dir).close();
    failWritesOf(dir, 'conv-2');
    const writer = track(make(dir));
    const failed = await writer.write(encodeWrite(sessionWrite(2))).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failed).toBeInstanceOf(EvermeError);
    expect(failed).toMatchObject({ type: 'internal', code: 'sqlite_constraint_trigger' });
    expect((failed as Error).message).toContain('forced failure');
    expect(stored(dir, 2)).toEqual({ keys: [], fingerprint: false, warnings: 0 });
    await writer.write(encodeWrite(sessionWrite(3)));
    expect(stored(dir, 3)).toMatchObject({ keys: ['k0', 'k1', 'k2'], fingerprint: true });
  });
});

describe('WriterThread', () => {
  it('answers every write with the reason when its database cannot be opened, instead of hanging', async () => {
    const root = tempDir();
    const notADir = path.join(root, 'state');
    fs.writeFileSync(notADir, 'a file where the state directory should be');
    const writer = track(new WriterThread(notADir, builtThreadUrl()));
    const results = await Promise.allSettled([writer.write(encodeWrite(sessionWrite(1))), writer.write(encodeWrite(sessionWrite(2)))]);
    for (const result of results) {
      expect(result.status).toBe('rejected');
      expect((result as PromiseRejectedResult).reason).toMatchObject({ type: 'io', code: 'database_unavailable' });
    }
  });

  it('has closed its connection when close() returns, and rejects writes from then on', async () => {
    const dir = tempDir();
    openDatabase(dir).close();
    const writer = new WriterThread(dir, builtThreadUrl());
    await writer.write(encodeWrite(sessionWrite(1)));
    writer.close();
    // The thread's connection is gone: the last one to close removes the WAL files.
    const db = openDatabase(dir);
    db.close();
    expect(fs.existsSync(path.join(dir, 'everme.db-wal'))).toBe(false);
    await expect(writer.write(encodeWrite(sessionWrite(2)))).rejects.toMatchObject({ type: 'internal' });
    expect(stored(dir, 2).keys).toEqual([]);
  });
});

describe("WriterThread's term index (a bulk loader's)", () => {
  /** A new store whose words are common from 50 messages on, and what its term index and FTS5 hold. */
  function newStore(): { dir: string; common: () => string[]; ftsCommon: () => string[] } {
    const dir = tempDir();
    const db = openDatabase(dir);
    db.prepare("INSERT INTO term_index_settings (key, value) VALUES ('common_docs', 50)").run();
    db.close();
    const read = (sql: string): string[] => {
      const db = openDatabase(dir, { readonly: true });
      try {
        return db.prepare<[], string>(sql).pluck().all();
      } finally {
        db.close();
      }
    };
    return {
      dir,
      common: () => read('SELECT term FROM term_index_terms ORDER BY term'),
      ftsCommon: () => read('SELECT term FROM term_index_vocab_row WHERE doc >= 50 ORDER BY term'),
    };
  }

  it('makes the words a cold import made common when it closes, not write by write', async () => {
    const store = newStore();
    const writer = new WriterThread(store.dir, builtThreadUrl());
    await Promise.all([1, 2, 3].map((n) => writer.write(encodeWrite(sessionWrite(n, 300)))));
    expect(store.common()).toEqual([]);
    writer.close();
    // quokka and "says" (stemmed: sai) in every message, each session's number in its 300.
    expect(store.common()).toEqual(['1', '2', '3', 'quokka', 'sai']);
    expect(store.common()).toEqual(store.ftsCommon());
  });

  it('leaves them after Ctrl-C, for the next run to make common', async () => {
    const store = newStore();
    const interrupted = new WriterThread(store.dir, builtThreadUrl());
    await interrupted.write(encodeWrite(sessionWrite(1, 300)));
    interrupted.cancelQueued();
    interrupted.close();
    expect(store.common()).toEqual([]);
    const next = new WriterThread(store.dir, builtThreadUrl());
    await next.write(encodeWrite(sessionWrite(2, 300)));
    next.close();
    expect(store.common()).toEqual(['1', '2', 'quokka', 'sai']);
    expect(store.common()).toEqual(store.ftsCommon());
  });
});

describe('ScalingWriter', () => {
  it('commits inline until more conversations than its threshold were written, then on a thread', async () => {
    const dir = tempDir();
    const db = track(openDatabase(dir));
    const writer = track(new ScalingWriter(db, { stateDir: dir, threadUrl: builtThreadUrl(), threadAfter: 2 }));
    await writer.write(encodeWrite(sessionWrite(1)));
    await writer.write(encodeWrite(sessionWrite(1, 4)));
    await writer.write(encodeWrite(sessionWrite(2)));
    expect(writer.thread()).toBeUndefined();
    await writer.write(encodeWrite(sessionWrite(3)));
    expect(writer.thread()).toBeInstanceOf(WriterThread);
    await writer.write(encodeWrite(sessionWrite(4)));
    for (const n of [1, 2, 3, 4]) expect(stored(dir, n).fingerprint).toBe(true);
    expect(stored(dir, 1).keys).toEqual(['k0', 'k1', 'k2', 'k3']);
  });

  it('leaves checkpoints to the writer thread while it runs, and gives them back to the engine\'s connection after', async () => {
    const dir = tempDir();
    const db = openDatabase(dir);
    const writer = new ScalingWriter(db, { stateDir: dir, threadUrl: builtThreadUrl(), threadAfter: 0 });
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    await writer.write(encodeWrite(sessionWrite(1)));
    expect(writer.thread()).toBeInstanceOf(WriterThread);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    writer.close();
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    db.close();
  });

  it('never starts a thread when there is no built entry for it (sources run by a test runner)', async () => {
    const dir = tempDir();
    const db = track(openDatabase(dir));
    const writer = track(new ScalingWriter(db, { stateDir: dir, threadAfter: 0 }));
    await writer.write(encodeWrite(sessionWrite(1)));
    await writer.write(encodeWrite(sessionWrite(2)));
    // The precondition, checked rather than assumed: the sources have no compiled thread entry
    // beside them (the test runner loads src/store/local-writer.ts, whose sibling .js is absent).
    expect(fs.existsSync(fileURLToPath(new URL('../src/store/local-writer-thread.js', import.meta.url)))).toBe(false);
    expect(fs.existsSync(fileURLToPath(new URL('../src/store/local-writer-thread.ts', import.meta.url)))).toBe(true);
    expect(writer.thread()).toBeUndefined();
    expect(stored(dir, 2).fingerprint).toBe(true);
  });
});

describe('WriteTurn', () => {
  it('makes a main-thread write wait, without blocking, until the writer gives the turn back', async () => {
    const turn = new WriteTurn(new SharedArrayBuffer(WRITE_TURN_BYTES));
    turn.takeWriter();
    let ran = false;
    const waiting = turn.runMain(() => {
      ran = true;
      return 42;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(ran).toBe(false);
    turn.give();
    await expect(waiting).resolves.toBe(42);
    expect(turn.tryTakeMain()).toBe(true);
    turn.give();
  });
});

describe('ThreadSessionLocks', () => {
  it('releases a lock in the next free turn, and until then neither it nor another owner can take the session', async () => {
    const dir = tempDir();
    const db = track(openDatabase(dir));
    const turn = new WriteTurn(new SharedArrayBuffer(WRITE_TURN_BYTES));
    const locks = new ThreadSessionLocks(db, () => turn);
    const other = new SessionLocks(track(openDatabase(dir)));
    await locks.acquire('mvs_a', 1000);
    turn.takeWriter();
    locks.release('mvs_a');
    expect(other.tryAcquire('mvs_a')).toBe(false);
    expect(locks.tryAcquire('mvs_a')).toBe(false);
    turn.give();
    // Released as soon as the turn is free.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(other.tryAcquire('mvs_a')).toBe(true);
    other.release('mvs_a');
    await locks.acquire('mvs_a', 1000);
    expect(other.tryAcquire('mvs_a')).toBe(false);
  });

  it('deletes the locks released since the last claim in the next claim\'s own transaction', async () => {
    const dir = tempDir();
    const db = track(openDatabase(dir));
    const turn = new WriteTurn(new SharedArrayBuffer(WRITE_TURN_BYTES));
    const locks = new ThreadSessionLocks(db, () => turn);
    const other = new SessionLocks(track(openDatabase(dir)));
    await locks.acquire('mvs_a', 1000);
    await locks.acquire('mvs_b', 1000);
    locks.release('mvs_a');
    locks.release('mvs_b');
    // Held until a claim or the flush deletes them...
    expect(other.tryAcquire('mvs_a')).toBe(false);
    const count = () => db.prepare<[], number>('SELECT count(*) FROM session_locks').pluck().get();
    expect(count()).toBe(2);
    // ...and the next claim does, before any flush could have run.
    await locks.acquire('mvs_c', 1000);
    expect(db.prepare<[], string>('SELECT session_id FROM session_locks').pluck().all()).toEqual(['mvs_c']);
    expect(other.tryAcquire('mvs_a')).toBe(true);
    expect(other.tryAcquire('mvs_b')).toBe(true);
    locks.settle();
  });
});

describe('groupLength (what the writer thread commits in its next transaction)', () => {
  const queue = (...sizes: number[]) => sizes.map((bytes) => ({ bytes }));

  it('takes every write that waits while they fit the byte bound', () => {
    expect(groupLength(queue(3, 3, 2), 512, 8)).toBe(3);
  });

  it('stops before the write that would cross the byte bound, so the reader keeps room to read on', () => {
    expect(groupLength(queue(3, 3, 3, 1), 512, 8)).toBe(2);
  });

  it('lets a first write larger than the bound commit alone', () => {
    expect(groupLength(queue(20, 1), 512, 8)).toBe(1);
  });

  it('never takes more writes than the count bound, nor any from an empty queue', () => {
    expect(groupLength(queue(1, 1, 1, 1), 3, 100)).toBe(3);
    expect(groupLength(queue(), 3, 100)).toBe(0);
  });
});

describe('LocalCommitter.commitMany (the writer thread commits what queued up as one group)', () => {
  it('commits a group in one transaction, failing only the write that failed', () => {
    const dir = tempDir();
    openDatabase(dir).close();
    failWritesOf(dir, 'conv-2');
    const db = track(openDatabase(dir));
    const outcomes = new LocalCommitter(db).commitMany([sessionWrite(1), sessionWrite(2), sessionWrite(3)].map(encodeWrite));
    expect(outcomes[0]).toBeUndefined();
    expect(outcomes[1]).toMatchObject({ type: 'internal', code: 'sqlite_constraint_trigger' });
    expect(outcomes[2]).toBeUndefined();
    expect(stored(dir, 1)).toEqual({ keys: ['k0', 'k1', 'k2'], fingerprint: true, warnings: 1 });
    expect(stored(dir, 2)).toEqual({ keys: [], fingerprint: false, warnings: 0 });
    expect(stored(dir, 3)).toEqual({ keys: ['k0', 'k1', 'k2'], fingerprint: true, warnings: 1 });
  });

  it('indexes only the writes that committed when one write of the group failed', () => {
    const dir = tempDir();
    openDatabase(dir).close();
    failWritesOf(dir, 'conv-2');
    const db = track(openDatabase(dir));
    new LocalCommitter(db).commitMany([sessionWrite(1), sessionWrite(2), sessionWrite(3)].map(encodeWrite));
    const found = new LocalStore(db).search('quokka', { limit: 50 }).map((hit) => hit.conversationId);
    expect(found.sort()).toEqual(['conv-1', 'conv-1', 'conv-1', 'conv-3', 'conv-3', 'conv-3']);
    const indexed = db.prepare<[], number>('SELECT count(*) FROM messages_fts').pluck().get();
    const messages = db.prepare<[], number>('SELECT count(*) FROM messages').pluck().get();
    expect(indexed).toBe(messages);
  });

  it('answers the writes after an interrupt cancelled and commits those applied before it, each whole', () => {
    const dir = tempDir();
    const db = track(openDatabase(dir));
    let checks = 0;
    const outcomes = new LocalCommitter(db).commitMany([sessionWrite(1), sessionWrite(2), sessionWrite(3)].map(encodeWrite), () => ++checks > 1);
    expect(outcomes[0]).toBeUndefined();
    expect(outcomes.slice(1).map((o) => o?.type)).toEqual(['cancelled', 'cancelled']);
    expect(stored(dir, 1)).toEqual({ keys: ['k0', 'k1', 'k2'], fingerprint: true, warnings: 1 });
    expect(stored(dir, 2)).toEqual({ keys: [], fingerprint: false, warnings: 0 });
    expect(stored(dir, 3)).toEqual({ keys: [], fingerprint: false, warnings: 0 });
  });

  it('retries each write alone when a failure ended the whole transaction, so the others still commit', () => {
    const dir = tempDir();
    const setup = openDatabase(dir);
    // RAISE(ROLLBACK) ends the transaction itself, not just the write's savepoint.
    setup.exec(`CREATE TRIGGER fail_all BEFORE INSERT ON messages WHEN NEW.conversation_id = 'conv-2'
                BEGIN SELECT RAISE(ROLLBACK, 'forced rollback'); END;`);
    setup.close();
    const db = track(openDatabase(dir));
    const outcomes = new LocalCommitter(db).commitMany([sessionWrite(1), sessionWrite(2), sessionWrite(3)].map(encodeWrite));
    expect(outcomes.map((o) => o === undefined)).toEqual([true, false, true]);
    expect((outcomes[1] as Error).message).toContain('forced rollback');
    expect(stored(dir, 1).fingerprint).toBe(true);
    expect(stored(dir, 2)).toEqual({ keys: [], fingerprint: false, warnings: 0 });
    expect(stored(dir, 3).keys).toEqual(['k0', 'k1', 'k2']);
  });
});

describe('LocalSink with a writer thread', () => {
  /** A full collection, from inside the test (vitest gives no --expose-gc). */
  function collectGarbage(): void {
    v8.setFlagsFromString('--expose-gc');
    (runInNewContext('gc') as () => void)();
  }

  /** Starts the commit in a function that has returned by then, so that no frame of the test itself holds the rows. */
  async function startCommit(sink: LocalSink, early: boolean): Promise<{ commit: Promise<unknown>; watched: WeakRef<object> }> {
    const write = encodeWrite(sessionWrite(1));
    const rows = write.rows[0]!;
    const watched = new WeakRef(rows);
    const part = (bytes: number) => ({ conversation: write.conversation, rows, requestCount: 1, messageCount: rows.count, bytes });
    const session = await sink.begin({ conversationId: 'conv-1', sessionId: 'mvs_1', mode: 'import', boundary: false, excluded: () => Promise.resolve(false) });
    // Over the held-bytes bound, deliver commits at once; under it, the rows wait for the session's end.
    if (early) return { commit: session.deliver(part(64 * 1024 * 1024)), watched };
    void session.deliver(part(10));
    const handoff = await session.finish({ conversation: write.conversation, state: write.state! });
    return { commit: handoff.durable, watched };
  }

  it.each([
    ['at the end of the session', false],
    ['committed early: too many bytes held', true],
  ] as const)('lets go of the rows of a session once they are posted, before their commit (%s)', async (_when, early) => {
    const dir = tempDir();
    const db = track(openDatabase(dir));
    const thread = new WriterThread(dir, builtThreadUrl());
    const sink = new LocalSink(db, thread);
    // Holding the turn keeps the thread from committing: the write stays pending until it is given back.
    expect(thread.turn.tryTakeMain()).toBe(true);
    const { commit, watched } = await startCommit(sink, early);
    await new Promise((resolve) => setTimeout(resolve, 20));
    collectGarbage();
    expect(watched.deref()).toBeUndefined();
    thread.turn.give();
    await commit;
    sink.close();
    expect(stored(dir, 1).keys).toEqual(['k0', 'k1', 'k2']);
  });
});
