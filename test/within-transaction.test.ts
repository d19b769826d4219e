/**
 * A store's write of several statements is atomic on its own, and inside a caller's transaction it
 * is part of that transaction: no savepoint of its own (SQLite copies every page a savepoint's
 * writes touch into its statement journal, once per session of a group commit).
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { databasePath, openDatabase } from '../src/store/database.js';
import { DeliveredKeyStore } from '../src/store/delivered-key-store.js';
import { encodeWrite, LocalCommitter } from '../src/store/local-commit.js';
import { WarningStore } from '../src/store/warning-store.js';
import { tempDir } from './transcript-helpers.js';

const opened: Database.Database[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
});

/** The state file of a fresh store, opened with every statement it runs logged. */
function loggedStore(): { db: Database.Database; statements: string[] } {
  const dir = tempDir();
  openDatabase(dir).close();
  const statements: string[] = [];
  const db = new Database(databasePath(dir), { verbose: (sql) => statements.push(String(sql)) });
  opened.push(db);
  return { db, statements };
}

const savepoints = (statements: readonly string[]): string[] => statements.filter((sql) => /^\s*(SAVEPOINT|RELEASE|ROLLBACK TO)\b/i.test(sql));

describe('a store write of several statements', () => {
  it('is one transaction on its own: a failure half way leaves none of it', () => {
    const { db, statements } = loggedStore();
    db.exec(`CREATE TRIGGER fail_second BEFORE INSERT ON delivered WHEN NEW.msg_key = 'b' BEGIN SELECT RAISE(ABORT, 'forced failure'); END;`);
    const keys = new DeliveredKeyStore(db);
    expect(() => keys.record('everme', 'conv-1', ['a', 'b'])).toThrow('forced failure');
    expect([...keys.keysOf('everme', 'conv-1')]).toEqual([]);
    expect(statements).toContain('BEGIN');
  });

  it('inside a caller\'s transaction opens no savepoint, and rolls back with the caller', () => {
    const { db, statements } = loggedStore();
    const keys = new DeliveredKeyStore(db);
    const warnings = new WarningStore(db);
    const owner = { conversationId: 'conv-1', sessionId: 'mvs_1', source: 'messages' };
    const entries = [{ code: 'invalid_json' as const, count: 1, samples: [{ file: 'messages.jsonl', line: 3 }] }];
    db.transaction(() => {
      keys.record('everme', 'conv-1', ['a', 'b']);
      warnings.replace(owner, entries);
    })();
    expect(savepoints(statements)).toEqual([]);
    expect([...keys.keysOf('everme', 'conv-1')].sort()).toEqual(['a', 'b']);
    expect(warnings.list({ conversationId: 'conv-1' })).toHaveLength(1);

    expect(() =>
      db.transaction(() => {
        keys.record('everme', 'conv-2', ['c']);
        warnings.replace({ ...owner, conversationId: 'conv-2' }, entries);
        throw new Error('the caller fails after the writes');
      })(),
    ).toThrow('the caller fails');
    expect([...keys.keysOf('everme', 'conv-2')]).toEqual([]);
    expect(warnings.list({ conversationId: 'conv-2' })).toEqual([]);
  });
});

describe('a group commit of the embedded store', () => {
  it('opens no savepoint for the sessions\' state when every write applies', () => {
    const { db, statements } = loggedStore();
    const writes = [1, 2, 3].map((n) =>
      encodeWrite({
        conversation: { conversationId: `conv-${n}`, sessionId: `mvs_${n}`, source: 'messages', historyFile: `/h/${n}/messages.jsonl`, createdAtMs: 1000 + n },
        messages: [{ key: 'k0', message: { role: 'user', timestamp: 2000 + n, content: `quokka ${n}` } }],
        state: {
          sinkName: 'local',
          sessionId: `mvs_${n}`,
          warningsOwner: { conversationId: `conv-${n}`, sessionId: `mvs_${n}`, source: 'messages', sessionDir: `/s/${n}` },
          warnings: [{ code: 'invalid_json', count: 2, samples: [{ file: 'messages.jsonl', line: 4 }] }],
          fingerprint: { file: `/h/${n}/messages.jsonl`, size: 10 + n, mtimeMs: 5, ino: 7, headHash: 'h' },
        },
      }),
    );
    expect(new LocalCommitter(db).commitMany(writes)).toEqual([undefined, undefined, undefined]);
    expect(savepoints(statements)).toEqual([]);
    expect(statements.filter((sql) => /^\s*COMMIT\b/i.test(sql))).toHaveLength(1);
    for (const n of [1, 2, 3]) expect(new WarningStore(db).list({ conversationId: `conv-${n}` })).toHaveLength(1);
  });
});
