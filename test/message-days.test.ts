import Database from 'better-sqlite3';
import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../src/config/settings.js';
import { Forgetter } from '../src/forget/forget.js';
import { openDatabase } from '../src/store/database.js';
import { LocalStore } from '../src/store/local-store.js';
import { buildStore, conversationIdFor, type BuiltStore } from './recall-store-fixture.js';
import { storeAtVersion } from './support/store-at-version.js';
import { tempDir } from './transcript-helpers.js';

/**
 * The per-day counts the viewer's chart reads are kept by every write path: they must always equal
 * a count of the messages themselves.
 */
const DAY = 86_400_000;
const base = Date.UTC(2026, 8, 10, 23, 59, 58);

function countedDays(db: Database.Database): Array<{ day: number; messages: number }> {
  return db.prepare('SELECT day, messages FROM message_days WHERE messages <> 0 ORDER BY day').all() as Array<{ day: number; messages: number }>;
}

function actualDays(db: Database.Database): Array<{ day: number; messages: number }> {
  return db.prepare(`SELECT timestamp / ${DAY} AS day, count(*) AS messages FROM messages GROUP BY 1 ORDER BY 1`).all() as Array<{ day: number; messages: number }>;
}

const roots: string[] = [];

/** A store of three conversations over four days, each test its own: one removes and forgets. */
function buildThreeDays(): Promise<BuiltStore> {
  const root = tempDir();
  roots.push(root);
  return buildStore(
    [
      { n: 1, workspace: '/w/a', createdAtMs: base, texts: ['one', 'two', 'three', 'four'] },
      { n: 2, workspace: '/w/b', createdAtMs: base + 5 * DAY, texts: ['five', 'six'] },
      { n: 3, workspace: '/w/c', createdAtMs: base - 40 * DAY, texts: ['seven', 'eight'] },
    ],
    root,
  );
}
afterAll(() => {
  for (const root of roots) fs.rmSync(root, { recursive: true, force: true });
});

describe('message_days', () => {
  it('counts what the import stored, day by day (across midnight too)', async () => {
    const built = await buildThreeDays();
    const db = openDatabase(built.stateDir, { readonly: true });
    try {
      const counted = countedDays(db);
      expect(counted).toEqual(actualDays(db));
      expect(counted.map((d) => d.messages)).toEqual([2, 2, 2, 2]);
    } finally {
      db.close();
    }
  });

  it('follows removed messages and forgotten conversations', async () => {
    const built = await buildThreeDays();
    const db = openDatabase(built.stateDir);
    try {
      const keys = db.prepare('SELECT msg_key FROM messages WHERE conversation_id = ? ORDER BY id').pluck().all(conversationIdFor(1)) as string[];
      new LocalStore(db).removeMessages(conversationIdFor(1), [keys[0]!, keys[3]!]);
      expect(countedDays(db)).toEqual(actualDays(db));
    } finally {
      db.close();
    }
    const forgetter = Forgetter.open(loadSettings(built.dataDir, {}, { EVERME_STATE_DIR: built.stateDir }));
    try {
      await forgetter.apply(forgetter.plan({ kind: 'conversation', conversationId: conversationIdFor(2) }));
    } finally {
      forgetter.close();
    }
    const after = openDatabase(built.stateDir, { readonly: true });
    try {
      expect(countedDays(after)).toEqual(actualDays(after));
      expect(countedDays(after).reduce((s, d) => s + d.messages, 0)).toBe(4);
    } finally {
      after.close();
    }
  });

  it('migration 10 fills it from a store written before it', () => {
    const stateDir = tempDir();
    try {
      const raw = storeAtVersion(stateDir, 9);
      raw.prepare("INSERT INTO conversations (conversation_id, session_id, source) VALUES ('c', 's', 'messages')").run();
      const insert = raw.prepare("INSERT INTO messages (conversation_id, msg_key, role, timestamp, content) VALUES ('c', ?, 'user', ?, 'x')");
      [base, base + 1000, base + 3000, base + 3 * DAY].forEach((t, i) => insert.run(`k${i}`, t));
      raw.close();
      const db = openDatabase(stateDir, { readonly: false });
      try {
        expect(countedDays(db)).toEqual([
          { day: Math.floor(base / DAY), messages: 2 },
          { day: Math.floor(base / DAY) + 1, messages: 1 },
          { day: Math.floor(base / DAY) + 3, messages: 1 },
        ]);
      } finally {
        db.close();
      }
    } finally {
      fs.rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
