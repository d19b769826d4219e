import type Database from 'better-sqlite3';
import fs from 'node:fs';
import { storeAtVersion } from './support/store-at-version.js';
import { tempDir } from './support/temp.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentMessage, KeyedMessage } from '../src/core/agent-message.js';
import { openDatabase } from '../src/store/database.js';
import { buildFtsQuery, toFtsText } from '../src/store/fts-text.js';
import { LocalCommitter, encodeWrite } from '../src/store/local-commit.js';
import { LocalStore, type ConversationRecord } from '../src/store/local-store.js';
import { TermIndexReader, TermIndexWriter } from '../src/store/term-index.js';
import { mulberry32 } from '../bench/prng.js';

/**
 * The term index scores a query's common words in JavaScript; the ranking must be exactly FTS5's
 * bm25() over every match. A generated store with a low common threshold (so most query words are
 * common) is checked two ways: the index's counts against FTS5's own index, and search results
 * against an exhaustive bm25() ranking of the same query.
 */

// Inflections of one stem, diacritics, CJK and a long tail of rarer words.
// Words ending in a digit are their own stems; capitals fold.
const COMMON = 'test tests testing tested build builds building fix fixed fixes cache cached caching error errors deploy config configs café cafe server client 数据 数据库 テスト 优先级 数 v2 404 Build FIXES'.split(' ');
const TAIL = Array.from({ length: 400 }, (_, i) => `w${i.toString(36)}x${'abcdefgh'[i % 8]}`);

function sentence(rand: () => number, words: number): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) {
    const r = rand();
    out.push(r < 0.55 ? COMMON[Math.floor(Math.pow(rand(), 1.5) * COMMON.length)]! : TAIL[Math.floor(Math.pow(rand(), 2.5) * TAIL.length)]!);
  }
  return toFtsText(out.join(rand() < 0.3 ? ', ' : ' '));
}

let dir: string;
let db: Database.Database;
let store: LocalStore;
let clock = 1_790_000_000_000;

beforeEach(() => {
  dir = tempDir('everme-terms-');
  db = openDatabase(dir);
  // Low enough that most of COMMON becomes common while the store fills.
  db.prepare("INSERT INTO term_index_settings (key, value) VALUES ('common_docs', 30)").run();
  store = new LocalStore(db);
});
afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function message(rand: () => number): AgentMessage {
  const r = rand();
  // Lengths from a few words to long tool outputs with repeated words (tf well above 1).
  const text = sentence(rand, r < 0.4 ? 3 + Math.floor(rand() * 10) : r < 0.8 ? 20 + Math.floor(rand() * 40) : 150 + Math.floor(rand() * 400));
  if (r < 0.4) return { role: 'user', timestamp: ++clock, content: text };
  if (r < 0.8) return { role: 'assistant', timestamp: ++clock, content: text, turnComplete: true };
  return { role: 'tool', timestamp: ++clock, toolCallId: 'call_1', content: text };
}

/** Fills the store in writes of 1 to 120 messages (small ones stay in deltas, large ones merge), some through the group committer. */
function fill(rand: () => number, conversations: number, messages: number, prefix = 'c'): void {
  const committer = new LocalCommitter(db);
  let written = 0;
  let seq = 0;
  while (written < messages) {
    const id = `${prefix}${Math.floor(rand() * conversations)}`;
    const size = rand() < 0.7 ? 1 + Math.floor(rand() * 5) : 20 + Math.floor(rand() * 100);
    const keyed: KeyedMessage[] = Array.from({ length: size }, () => ({ key: `k${seq++}`, message: message(rand) }));
    const conversation: ConversationRecord = { conversationId: id, sessionId: `s-${id}`, source: 'messages', workspaceDir: `/home/demo/${id.slice(0, 2)}`, createdAtMs: clock };
    if (rand() < 0.5) {
      store.upsertConversation(conversation);
      store.appendMessages(id, keyed);
    } else {
      const [outcome] = committer.commitMany([encodeWrite({ conversation, messages: keyed }), encodeWrite({ conversation, messages: [] })]);
      expect(outcome).toBeUndefined();
    }
    written += size;
  }
}

/** FTS5's own postings: term → row id → tf. A phrase (stems joined by spaces) counts where its stems stand in a row. */
function ftsPostings(terms: readonly string[]): Map<string, Map<number, number>> {
  db.exec('CREATE VIRTUAL TABLE IF NOT EXISTS temp.check_instances USING fts5vocab (main, messages_fts, instance)');
  const counts = db.prepare<[string], [number, number]>('SELECT doc, count(*) FROM check_instances WHERE term = ? GROUP BY doc').raw();
  const offsets = db.prepare<[string], number>('SELECT doc * 1000000 + offset FROM check_instances WHERE term = ?').pluck();
  return new Map(
    terms.map((term) => {
      const stems = term.split(' ');
      if (stems.length === 1) return [term, new Map(counts.all(term))];
      const at = stems.map((stem) => new Set(offsets.all(stem)));
      const tf = new Map<number, number>();
      for (const start of at[0]!) {
        if (stems.every((_, k) => at[k]!.has(start + k))) tf.set(Math.floor(start / 1_000_000), (tf.get(Math.floor(start / 1_000_000)) ?? 0) + 1);
      }
      return [term, tf];
    }),
  );
}

function expectIndexMatchesFts(minTerms = 8): void {
  const reader = new TermIndexReader(db);
  reader.refresh('check');
  const terms = db.prepare<[], { id: number; term: string; df: number }>('SELECT id, term, df FROM term_index_terms').all();
  expect(terms.length).toBeGreaterThan(minTerms);
  const expected = ftsPostings(terms.map((t) => t.term));
  const got = new Map(terms.map((t) => [t.id, new Map<number, number>()]));
  reader.scan(terms.map((t) => t.id), (termId, id, tf) => got.get(termId)!.set(id, tf), () => undefined);
  for (const t of terms) {
    expect([...got.get(t.id)!].sort((a, b) => a[0] - b[0]), t.term).toEqual([...expected.get(t.term)!].sort((a, b) => a[0] - b[0]));
    expect(t.df, t.term).toBe(expected.get(t.term)!.size);
  }
  // Every row's length is FTS5's (docsize), and a row FTS5 no longer holds has none.
  const sizes = db.prepare<[], { id: number }>('SELECT id FROM messages').all();
  db.exec("CREATE VIRTUAL TABLE IF NOT EXISTS temp.check_rows USING fts5vocab (main, messages_fts, instance)");
  const lengths = new Map<number, number>();
  for (const [doc] of db.prepare<[], [number]>('SELECT doc FROM check_rows').raw().all()) lengths.set(doc, (lengths.get(doc) ?? 0) + 1);
  for (const { id } of sizes) expect(reader.lengthOf(id), `row ${id}`).toBe(lengths.get(id) ?? 0);
}

/** bm25() over every match of the query's phrases, best first: the reference. */
function exhaustive(query: string, k: number): Array<[number, number]> {
  const fts = buildFtsQuery(query)!;
  const match = [...fts.phrases, ...fts.pieces].map((p) => `(${p})`).join(' OR ');
  return db
    .prepare<[string], [number, number]>('SELECT rowid, -bm25(messages_fts) FROM messages_fts WHERE messages_fts MATCH ? ORDER BY bm25(messages_fts)')
    .raw()
    .all(match)
    .sort((a, b) => b[1] - a[1] || b[0] - a[0])
    .slice(0, k);
}

/**
 * The cover signal over exhaustive()'s top k, from FTS5 alone: each message gains `cover` × the best,
 * over the other top messages of its conversation, of that message's score × the share of the
 * query words it holds (idf-weighted) that this one lacks.
 */
function withCover(query: string, k: number, cover: number): Array<[number, number]> {
  const fts = buildFtsQuery(query)!;
  const rows = db.prepare<[], number>('SELECT count(*) FROM messages_fts').pluck().get()!;
  const holders = db.prepare<[string], number>('SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?').pluck();
  const words = [...fts.phrases, ...fts.pieces]
    .map((p) => new Set(holders.all(p)))
    .filter((ids) => ids.size > 0)
    .map((ids) => ({ ids, idf: Math.max(1e-6, Math.log((rows - ids.size + 0.5) / (ids.size + 0.5))) }));
  const top = exhaustive(query, k);
  const conversationOf = db.prepare<[number], string>('SELECT conversation_id FROM messages WHERE id = ?').pluck();
  const conversations = new Map(top.map(([id]) => [id, conversationOf.get(id)]));
  const weight = (held: typeof words) => held.reduce((sum, w) => sum + w.idf, 0);
  return top
    .map(([id, score]): [number, number] => {
      let most = 0;
      for (const [other, theirScore] of top) {
        if (other === id || conversations.get(other) !== conversations.get(id)) continue;
        const theirs = words.filter((w) => w.ids.has(other));
        if (theirs.length > 0) most = Math.max(most, (theirScore * weight(theirs.filter((w) => !w.ids.has(id)))) / weight(theirs));
      }
      return [id, score + cover * most];
    })
    .sort((a, b) => b[1] - a[1] || b[0] - a[0]);
}

/** Same top k: equal scores, and the same ids wherever the score is not tied with a neighbour. */
function expectSameTop(query: string, got: Array<{ id: number; score: number }>, want: Array<[number, number]>): void {
  expect(got.length, query).toBe(want.length);
  got.forEach((hit, i) => {
    expect(hit.score, `${query} #${i}`).toBeCloseTo(want[i]![1], 9);
    const tied = want.some(([id, s], j) => j !== i && Math.abs(s - want[i]![1]) < 1e-9 && id !== want[i]![0]);
    if (!tied) expect(hit.id, `${query} #${i}`).toBe(want[i]![0]);
  });
}

/**
 * Rows written straight to FTS5 and the term index, in writes of `size`, each in its own
 * transaction (as an import's writer thread commits its groups).
 */
function writeRows(writer: TermIndexWriter, texts: readonly string[], size: number, firstId = 1): void {
  const insert = db.prepare<[number, Uint8Array]>('INSERT INTO messages_fts (rowid, text) VALUES (?, ?)');
  for (let at = 0; at < texts.length; at += size) {
    const rows = texts.slice(at, at + size).map((text, k): [number, Uint8Array] => [firstId + at + k, Buffer.from(text)]);
    db.transaction(() => {
      for (const [id, text] of rows) insert.run(id, text);
      writer.add(rows);
    })();
  }
}

// BM25 alone: the signals of stage 2 off.
const UNIT = { user: 1, assistant: 1, tool: 1, conversation: 0, cover: 0 };

describe('term index', () => {
  it('holds exactly FTS5s postings and lengths for its common words, through small and large writes, merges and deletions', () => {
    const rand = mulberry32(3);
    fill(rand, 40, 1500);
    expectIndexMatchesFts();
    // Rewinds: messages removed from several conversations, then more written (the highest row id
    // freed and given again).
    const ids = db.prepare<[], { conversation_id: string; msg_key: string }>('SELECT conversation_id, msg_key FROM messages WHERE id % 7 = 0 OR id = (SELECT max(id) FROM messages)').all();
    const byConversation = new Map<string, string[]>();
    for (const r of ids) byConversation.set(r.conversation_id, [...(byConversation.get(r.conversation_id) ?? []), r.msg_key]);
    for (const [c, keys] of byConversation) store.removeMessages(c, keys);
    fill(rand, 40, 200, 'd');
    expectIndexMatchesFts();
  });

  it('ranks common-word queries exactly as bm25() over every match (top 20), common words alone or with rarer ones', () => {
    const rand = mulberry32(5);
    fill(rand, 50, 3000);
    const common = new Set(db.prepare<[], string>('SELECT term FROM term_index_terms').pluck().all());
    expect(common.has('test') && common.has('build') && common.has('cach')).toBe(true);
    // Runs of CJK characters become common phrases too.
    expect(common.has('数 据') && common.has('テ ス ト')).toBe(true);
    const queries = ['test', 'build test', 'tests testing', 'the test', 'fixed errors in the cache', 'deploy config server', 'café', '数据', '数据库', '优先级很高', '据库', 'テスト cache', `${TAIL[3]} test`, `${TAIL[1]} ${TAIL[50]} build`, 'caching build errors deploy client'];
    for (let i = 0; i < 40; i++) queries.push(sentence(rand, 1 + Math.floor(rand() * 5)));
    for (const query of queries) {
      const got = store.search(query, { limit: 20, ranking: { ...UNIT, depth: 20 } }).map((h) => ({ id: h.messageId, score: h.score }));
      expectSameTop(query, got, exhaustive(query, 20));
    }
    // And with FTS5 doing everything (the old path) the same rows come back.
    for (const query of queries.slice(0, 10)) {
      const viaIndex = store.search(query, { limit: 10, ranking: { ...UNIT, depth: 10 } }).map((h) => ({ id: h.messageId, score: h.score }));
      const viaFts = store.search(query, { limit: 10, ranking: { ...UNIT, depth: 10, termIndex: false } }).map((h): [number, number] => [h.messageId, h.score]);
      expectSameTop(query, viaIndex, viaFts);
    }
  });

  it('ranks exactly on the same store after more rows were written since its last search (lengths and postings read afresh)', () => {
    const rand = mulberry32(17);
    fill(rand, 20, 1200);
    const queries = ['build test', 'fixed errors in the cache', `${TAIL[3]} test`, 'deploy config server'];
    for (const query of queries) expectSameTop(query, store.search(query, { limit: 20, ranking: { ...UNIT, depth: 20 } }).map((h) => ({ id: h.messageId, score: h.score })), exhaustive(query, 20));
    // The new rows share the length chunk of the rows before them (row ids under 4,096).
    fill(rand, 20, 800, 'd');
    for (const query of queries) expectSameTop(`${query} (after)`, store.search(query, { limit: 20, ranking: { ...UNIT, depth: 20 } }).map((h) => ({ id: h.messageId, score: h.score })), exhaustive(query, 20));
  });

  it('ranks exactly within a project, and when the rarer words match more rows than are fetched at first', () => {
    const rand = mulberry32(9);
    // Words in many rows that stay below the common threshold: set before the rows are written,
    // so only the most frequent words are common and the FTS5 part is larger than its first fetch.
    db.prepare("UPDATE term_index_settings SET value = 2000 WHERE key = 'common_docs'").run();
    fill(rand, 30, 2500);
    for (const query of ['build w0xa', 'test w1xb w2xc', 'cache w0xa w1xb w2xc w3xd', 'test build cache fixed errors deploy config server client w0xa', 'tests builds caching fixes w0xa w1xb']) {
      const want = exhaustive(query, 20);
      // With the rarer words' bound first (the default), and without it: the common words'
      // postings read. The FTS5 part fetched once, whole, for both (the default while it is small),
      // or by each on its own: in part, then whole when the first fetch cannot prove the top.
      const fetches = [{}, { wholeFtsRows: 0 }, { wholeFtsRows: 0, ftsPartRows: 50 }];
      for (const rareFirst of [true, false]) {
        for (const fetch of fetches) {
          const got = store.search(query, { limit: 20, ranking: { ...UNIT, depth: 20, rareFirst, ...fetch } }).map((h) => ({ id: h.messageId, score: h.score }));
          expectSameTop(`${query} (rareFirst ${rareFirst}, ${JSON.stringify(fetch)})`, got, want);
        }
      }
    }
    const inProject = (id: number) => db.prepare<[number], string>('SELECT c.workspace_dir FROM messages m JOIN conversations c USING (conversation_id) WHERE m.id = ?').pluck().get(id) === '/home/demo/c1';
    for (const query of ['test', 'build cache', 'fixed errors w5xf']) {
      const hits = store.search(query, { limit: 10, project: '/home/demo/c1', ranking: { ...UNIT, depth: 10 } });
      const want = exhaustive(query, 100_000).filter(([id]) => inProject(id)).slice(0, 10);
      expectSameTop(query, hits.map((h) => ({ id: h.messageId, score: h.score })), want);
    }
  });

  it('ranks exactly when the best rows of the rarer words fetched first cannot prove the top, and every row is fetched', () => {
    const rand = mulberry32(13);
    // Common words in a few hundred of the rows score well above nothing (idf ~1–2), so a row
    // outside the rarer words' first fetch can still reach the top on them.
    db.prepare("UPDATE term_index_settings SET value = 300 WHERE key = 'common_docs'").run();
    fill(rand, 30, 2500);
    const tail = (from: number, n: number) => TAIL.slice(from, from + n).join(' ');
    for (const query of [`test build ${tail(20, 6)}`, `fixed errors deploy ${tail(30, 8)}`, `cache server client ${tail(15, 10)}`, `v2 404 café ${tail(40, 12)}`]) {
      const want = exhaustive(query, 20);
      for (const rareFirst of [true, false]) {
        const got = store.search(query, { limit: 20, ranking: { ...UNIT, depth: 20, rareFirst, wholeFtsRows: 0, ftsPartRows: 20 } }).map((h) => ({ id: h.messageId, score: h.score }));
        expectSameTop(`${query} (rareFirst ${rareFirst})`, got, want);
      }
    }
  });

  it('gives the cover signal the query words each message holds, whichever way stage 1 read them', () => {
    const rand = mulberry32(21);
    db.prepare("UPDATE term_index_settings SET value = 300 WHERE key = 'common_docs'").run();
    fill(rand, 12, 2500);
    const tail = (from: number, n: number) => TAIL.slice(from, from + n).join(' ');
    const queries = ['build test', 'fixed errors in the cache', 'tests testing', '数据库 cache', `test build ${tail(20, 6)}`, `fixed errors deploy ${tail(30, 8)}`, `cache server client ${tail(15, 10)}`, `${TAIL[3]} ${TAIL[7]} test`, `${tail(0, 3)}`, `deploy server ${tail(120, 8)}`, `client cache fixed ${tail(200, 10)}`, `server ${tail(150, 6)}`];
    let lifted = 0;
    for (const query of queries) {
      const want = withCover(query, 20, 0.5);
      if (want.some(([id, score], i) => id !== exhaustive(query, 20)[i]![0] || score !== exhaustive(query, 20)[i]![1])) lifted++;
      // The common words' postings read (their words recorded as they go by), the rarer words'
      // bound first (FTS5 asked within the rarer words' matches), FTS5 alone.
      for (const ranking of [{ rareFirst: false }, { rareFirst: true }, { rareFirst: true, wholeFtsRows: 0, ftsPartRows: 20 }, { termIndex: false }]) {
        const got = store.search(query, { limit: 20, ranking: { ...UNIT, cover: 0.5, depth: 20, ...ranking } }).map((h) => ({ id: h.messageId, score: h.score }));
        expectSameTop(`${query} ${JSON.stringify(ranking)}`, got, want);
      }
    }
    expect(lifted).toBeGreaterThan(queries.length / 2);
  });

  it('makes a word common whichever rows it stands in (words only in every fourth row)', () => {
    // A tool's call every other row, a header every fourth: a word's rows can share their low id
    // bits. Nomination must not depend on them, or such a word is never made common.
    const words = 'alpha bravo kilo delta echo foxtrot golf hotel'.split(' ');
    store.upsertConversation({ conversationId: 'p', sessionId: 's-p', source: 'messages', createdAtMs: clock });
    const firstId = (db.prepare<[], number>("SELECT coalesce(max(id), 0) FROM messages").pluck().get() ?? 0) + 1;
    const keyed = Array.from({ length: 4000 }, (_, i): KeyedMessage => ({
      key: `p${i}`,
      message: { role: 'user', timestamp: ++clock, content: (firstId + i) % 4 === 0 ? words.join(' ') : `filler ${i}` },
    }));
    for (let i = 0; i < keyed.length; i += 100) store.appendMessages('p', keyed.slice(i, i + 100));
    const rows = db.prepare<[string], number>("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?").pluck();
    expect(rows.get('alpha')).toBe(1000);
    const common = db.prepare<[], string>('SELECT term FROM term_index_terms').pluck().all();
    expect(common).toEqual(expect.arrayContaining(words));
    expectIndexMatchesFts(8);
  });

  it('makes a word common during an import written in a few large writes', () => {
    // An import commits thousands of rows at a time: a word is nominated many times in one write,
    // and each of those counts towards its next check.
    db.prepare("UPDATE term_index_settings SET value = 2000 WHERE key = 'common_docs'").run();
    store.upsertConversation({ conversationId: 'i', sessionId: 's-i', source: 'messages', createdAtMs: clock });
    for (let write = 0; write < 5; write++) {
      store.appendMessages('i', Array.from({ length: 1000 }, (_, i): KeyedMessage => ({ key: `i${write}-${i}`, message: { role: 'user', timestamp: ++clock, content: `zulu report ${write} ${i}` } })));
    }
    expect(db.prepare<[], string>('SELECT term FROM term_index_terms').pluck().all()).toEqual(expect.arrayContaining(['zulu', 'report']));
    expectIndexMatchesFts(1);
  });

  describe('checks whether a word became common only when it could have', () => {
    const commonTerms = (): string[] => db.prepare<[], string>('SELECT term FROM term_index_terms').pluck().all();

    /** 200 words each in 2-5% of the rows, and one ("alpha") in a quarter of them. */
    function middlingTexts(seed: number, rows: number): string[] {
      const rand = mulberry32(seed);
      const middling = Array.from({ length: 200 }, (_, i) => `mid${i.toString(36)}word`);
      return Array.from({ length: rows }, (_, i) => {
        const words = middling.filter((_, k) => rand() < 0.02 + (k % 4) * 0.01);
        if (rand() < 0.25) words.push('alpha');
        return `${words.join(' ')} row${i}`;
      });
    }

    it('reads no count for words far below the threshold during an import into a new store', () => {
      db.prepare("UPDATE term_index_settings SET value = 2000 WHERE key = 'common_docs'").run();
      // 12,000 rows: the middling words in at most ~600 messages each.
      const texts = middlingTexts(11, 12_000);
      const writer = new TermIndexWriter(db);
      writeRows(writer, texts, 2000);
      expect(commonTerms()).toEqual(['alpha']);
      // Checked only as it neared 2,000 messages. The rule before (a check at a word's second
      // nomination, then after half the nominations it still lacked) made 198 checks here.
      expect(writer.checks).toBeLessThan(20);
      writer.close();
    });

    it('knows what the writers before it saw: a later writer checks no word they counted far below the threshold', () => {
      db.prepare("UPDATE term_index_settings SET value = 2000 WHERE key = 'common_docs'").run();
      // Written by one writer and then by another (a later sync): 600 to 800 messages each by the end.
      const texts = middlingTexts(14, 16_000);
      const first = new TermIndexWriter(db);
      writeRows(first, texts.slice(0, 12_000), 2000);
      first.close();
      const later = new TermIndexWriter(db);
      writeRows(later, texts.slice(12_000), 100, 12_001);
      expect(commonTerms()).toEqual(['alpha']);
      // Only words whose sampled count strays up to the threshold. A writer that knew only the rows
      // before it (the code before migration 14) checked 229 of them, each at its first nomination.
      expect(later.checks).toBeLessThan(20);
      later.close();
    });

    it('makes a word common in the last write of an import into a new store, when that write takes it over', () => {
      db.prepare("UPDATE term_index_settings SET value = 2000 WHERE key = 'common_docs'").run();
      const rand = mulberry32(12);
      // "delta" only in the last 4,000 of 12,000 rows, in 55% of them: it reaches 2,000 messages in the last write.
      const texts = Array.from({ length: 12_000 }, (_, i) => (i >= 8000 && rand() < 0.55 ? `delta row${i}` : `row${i} filler`));
      const writer = new TermIndexWriter(db);
      writeRows(writer, texts, 2000);
      expect(db.prepare<[], number>("SELECT doc FROM term_index_vocab_row WHERE term = 'delta'").pluck().get()).toBeGreaterThan(2000);
      expect(commonTerms()).toContain('delta');
      expectIndexMatchesFts(0);
      writer.close();
    });

    it('still makes a word common when the words it keeps track of overflow and are forgotten', () => {
      db.prepare("UPDATE term_index_settings SET value = 2000 WHERE key = 'common_docs'").run();
      const rand = mulberry32(13);
      // Three words seen once in each row: ~90 of them nominated in each write, past the writer's
      // memory of 40, so it forgets every word each write; "alpha" is in 30% of the rows.
      const texts = Array.from({ length: 12_000 }, (_, i) => `u${i}a u${i}b u${i}c${rand() < 0.3 ? ' alpha' : ''}`);
      const writer = new TermIndexWriter(db, { memoTerms: 40 });
      writeRows(writer, texts, 2000);
      expect(commonTerms()).toEqual(['alpha']);
      writer.close();
    });
  });

  describe("a bulk loader's writer", () => {
    const commonTerms = (): string[] => db.prepare<[], string>('SELECT term FROM term_index_terms ORDER BY term').pluck().all();
    const nominees = (): number => db.prepare<[], number>('SELECT count(*) FROM term_index_nominees').pluck().get()!;
    const wordsFtsCounts = (threshold: number): string[] =>
      db.prepare<[number], string>('SELECT term FROM term_index_vocab_row WHERE doc >= ? ORDER BY term').pluck().all(threshold);

    /** Every row FTS5 holds has FTS5's token count as its length. */
    function expectLengthsMatchFts(): void {
      const reader = new TermIndexReader(db);
      reader.refresh('lengths');
      db.exec('CREATE VIRTUAL TABLE IF NOT EXISTS temp.check_rows USING fts5vocab (main, messages_fts, instance)');
      const lengths = new Map<number, number>();
      for (const [doc] of db.prepare<[], [number]>('SELECT doc FROM check_rows').raw().all()) lengths.set(doc, (lengths.get(doc) ?? 0) + 1);
      expect(lengths.size).toBeGreaterThan(0);
      for (const [id, n] of lengths) expect(reader.lengthOf(id), `row ${id}`).toBe(n);
    }

    /**
     * Nothing counted, nothing checked: the rows' lengths only, FTS5's own; then `finish` makes
     * common every word in threshold messages, as FTS5 holds it. Closes the writer.
     */
    function expectDeferredUntilFinish(writer: TermIndexWriter): void {
      expect(commonTerms()).toEqual([]);
      expect(writer.checks).toBe(0);
      expectLengthsMatchFts();
      db.transaction(() => writer.finish())();
      expect(commonTerms()).toEqual(wordsFtsCounts(30));
      expectIndexMatchesFts(8);
      writer.close();
    }

    function texts(seed: number, rows: number): string[] {
      const rand = mulberry32(seed);
      return Array.from({ length: rows }, (_, i) => sentence(rand, 3 + Math.floor(rand() * 30)) + ` row${i}`);
    }

    it('keeps only lengths while no word is common, then makes every word in threshold messages common at finish, as FTS5 holds it', () => {
      const writer = new TermIndexWriter(db, { bulk: true });
      writeRows(writer, texts(21, 3000), 500, 1);
      expectDeferredUntilFinish(writer);
    });

    it('counts each row as it is written once the store has a common word', () => {
      const first = new TermIndexWriter(db, { bulk: true });
      writeRows(first, texts(22, 1000), 500, 1);
      db.transaction(() => first.finish())();
      first.close();
      const common = commonTerms();
      expect(common.length).toBeGreaterThan(8);
      // A later bulk run (a sync): its large writes are counted row by row, with no finish.
      const later = new TermIndexWriter(db, { bulk: true });
      writeRows(later, texts(23, 2000), 500, 1001);
      expect(commonTerms()).toEqual(expect.arrayContaining(common));
      expectIndexMatchesFts(8);
      later.close();
    });

    it('makes the words common at once in the write that takes the store past the rows it defers for', () => {
      const writer = new TermIndexWriter(db, { bulk: true });
      writeRows(writer, texts(24, 1000), 500, 1);
      expect(commonTerms()).toEqual([]);
      // Row ids past 2^17: a store that large is cheaper counted row by row from here on.
      writeRows(writer, texts(25, 500), 500, 2 ** 17);
      expect(commonTerms()).toEqual(wordsFtsCounts(30));
      expectIndexMatchesFts(8);
      writeRows(writer, texts(26, 500), 500, 2 ** 17 + 500);
      expectIndexMatchesFts(8);
      writer.close();
    });

    it("makes the words of a writer that never finished (killed) common in the next bulk writer's finish", () => {
      const killed = new TermIndexWriter(db, { bulk: true });
      writeRows(killed, texts(27, 2000), 500, 1);
      killed.close();
      expect(commonTerms()).toEqual([]);
      const next = new TermIndexWriter(db, { bulk: true });
      writeRows(next, texts(28, 500), 500, 2001);
      db.transaction(() => next.finish())();
      expect(commonTerms()).toEqual(wordsFtsCounts(30));
      expectIndexMatchesFts(8);
      next.close();
    });

    it('forgets what the store knew of words while it defers (its rows nominate none), and starts afresh from FTS5 at finish', () => {
      db.prepare("UPDATE term_index_settings SET value = 2000 WHERE key = 'common_docs'").run();
      const setting = db.prepare<[string], number>('SELECT value FROM term_index_settings WHERE key = ?').pluck();
      // A hook's writer first: its rows nominate words, kept in the store.
      writeRows(new TermIndexWriter(db), texts(34, 300), 50, 1);
      expect(nominees()).toBeGreaterThan(0);
      const loader = new TermIndexWriter(db, { bulk: true });
      writeRows(loader, texts(35, 1000), 500, 301);
      expect(nominees()).toBe(0);
      expect(setting.get('unknown_bound')).toBeUndefined();
      db.transaction(() => loader.finish())();
      // Each word in a quarter of the threshold's messages or more by name, with FTS5's count; every other word below that.
      const named = db.prepare<[], [string, number, number, number]>('SELECT term, bound, id_at, rows FROM term_index_nominees ORDER BY term').raw().all();
      const fts = db.prepare<[], [string, number]>('SELECT term, doc FROM term_index_vocab_row WHERE doc >= 500 AND doc < 2000 ORDER BY term').raw().all();
      expect(fts.length).toBeGreaterThan(3);
      expect(named).toEqual(fts.map(([term, doc]) => [term, doc, 1300, 0]));
      expect(setting.get('unknown_bound')).toBe(499);
      expect(setting.get('unknown_at')).toBe(1300);
      loader.close();
    });

    it('once it defers, defers small writes too, so no word is made common before finish', () => {
      const writer = new TermIndexWriter(db, { bulk: true });
      writeRows(writer, texts(31, 500), 500, 1);
      // Small writes after it: their words are in threshold rows by now, counting FTS5's.
      writeRows(writer, texts(32, 600), 20, 501);
      expect(wordsFtsCounts(30).length).toBeGreaterThan(0);
      expectDeferredUntilFinish(writer);
    });

    it('counts row by row when it is no bulk loader, and in writes too small to defer', () => {
      const plain = new TermIndexWriter(db);
      writeRows(plain, texts(29, 1000), 500, 1);
      plain.close();
      expect(commonTerms().length).toBeGreaterThan(0);
      db.exec('DELETE FROM term_index_terms; DELETE FROM term_index_postings; DELETE FROM term_index_deltas');
      const small = new TermIndexWriter(db, { bulk: true });
      writeRows(small, texts(30, 1000), 100, 1001);
      // Its rows nominated words (deferred rows nominate none); the ones that crossed wait for finish.
      expect(nominees()).toBeGreaterThan(0);
      expect(small.checks).toBe(0);
      expect(commonTerms()).toEqual([]);
      db.transaction(() => small.finish())();
      expect(small.checks).toBeGreaterThan(0);
      // Words its rows nominated enough (the test emptied the index under them: the others are not).
      expect(commonTerms().length).toBeGreaterThan(8);
      expect(wordsFtsCounts(30)).toEqual(expect.arrayContaining(commonTerms().filter((term) => !term.includes(' '))));
      expectIndexMatchesFts(8);
      small.close();
    });

    it('checks a word that could have crossed once, at finish or every so many rows, where a hook checks it at each nomination', () => {
      db.prepare("UPDATE term_index_settings SET value = 2000 WHERE key = 'common_docs'").run();
      // "delta" in 1,800 of the first 6,000 rows (known exactly: a snapshot), then in every eighth row: 2,050.
      const early = Array.from({ length: 6000 }, (_, i) => (i < 1800 ? `delta row${i}` : `row${i}`));
      const late = Array.from({ length: 2000 }, (_, i) => (i % 8 === 0 ? `delta late${i}` : `late${i}`));
      writeRows(new TermIndexWriter(db), early, 2000);
      new TermIndexWriter(db).snapshot();
      expect(commonTerms()).toEqual([]);
      const loader = new TermIndexWriter(db, { bulk: true });
      writeRows(loader, late, 250, 6001);
      expect(loader.checks).toBe(0);
      expect(commonTerms()).toEqual([]);
      db.transaction(() => loader.finish())();
      expect(loader.checks).toBe(1);
      expect(commonTerms()).toEqual(['delta']);
      expectIndexMatchesFts(0);
      loader.close();
      // A long run checks them every so many rows too (2^16; 2^12 here): made common before its end.
      db.exec('DELETE FROM term_index_terms; DELETE FROM term_index_postings; DELETE FROM term_index_deltas; DELETE FROM messages_fts');
      writeRows(new TermIndexWriter(db), early, 2000);
      new TermIndexWriter(db).snapshot();
      const long = new TermIndexWriter(db, { bulk: true, crossingCheckRows: 2 ** 12 });
      // (Writes of 250: no word is common, and larger writes would defer.)
      writeRows(long, [...late, ...Array.from({ length: 3000 }, (_, i) => `more${i}`)], 250, 6001);
      expect(commonTerms()).toEqual(['delta']);
      expect(long.checks).toBe(1);
      expectIndexMatchesFts(0);
      long.close();
      // The same rows through a hook's writer: checked as it nears the threshold, made common as it crosses.
      db.exec('DELETE FROM term_index_terms; DELETE FROM term_index_postings; DELETE FROM term_index_deltas; DELETE FROM messages_fts');
      writeRows(new TermIndexWriter(db), early, 2000);
      new TermIndexWriter(db).snapshot();
      const hook = new TermIndexWriter(db);
      writeRows(hook, late, 250, 6001);
      expect(hook.checks).toBeGreaterThan(1);
      expect(commonTerms()).toEqual(['delta']);
      expectIndexMatchesFts(0);
      hook.close();
    });
  });

  it("migration 14 starts what an existing store knows of its words from FTS5's counts", () => {
    const stateDir = tempDir('everme-terms-14-');
    const raw = storeAtVersion(stateDir, 13);
    raw.prepare("INSERT INTO term_index_settings (key, value) VALUES ('common_docs', 40)").run();
    const insert = raw.prepare<[number, string]>('INSERT INTO messages_fts (rowid, text) VALUES (?, ?)');
    for (let id = 1; id <= 50; id++) insert.run(id, `${id <= 30 ? 'alpha' : ''} ${id <= 15 ? 'beta' : ''} ${id <= 5 ? 'gamma' : ''} row${id}`);
    raw.close();
    const migrated = openDatabase(stateDir);
    try {
      // A quarter of the threshold (10 messages) or more by name, with FTS5's count; every other word below that.
      expect(migrated.prepare('SELECT term, bound, id_at, rows FROM term_index_nominees ORDER BY term').raw().all()).toEqual([
        ['alpha', 30, 50, 0],
        ['beta', 15, 50, 0],
      ]);
      const setting = migrated.prepare<[string], number>('SELECT value FROM term_index_settings WHERE key = ?').pluck();
      expect([setting.get('unknown_bound'), setting.get('unknown_at')]).toEqual([9, 50]);
    } finally {
      migrated.close();
      fs.rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it('counts an upper-case word ending in a digit as its common word (V2 and HTTP2 are v2 and http2)', () => {
    db.prepare("UPDATE term_index_settings SET value = 5 WHERE key = 'common_docs'").run();
    const writer = new TermIndexWriter(db);
    writeRows(writer, Array.from({ length: 8 }, () => 'v2 http2 ready'), 8);
    db.transaction(() => writer.snapshot())();
    expect(db.prepare<[], string>('SELECT term FROM term_index_terms').pluck().all()).toEqual(expect.arrayContaining(['v2', 'http2']));
    // Such a word is its own stem: the writer looks it up by the hash of its folded bytes.
    writeRows(writer, ['V2 HTTP2 V2', 'Http2 v2', 'V2'], 3, 9);
    writer.close();
    expectIndexMatchesFts(1);
  });

  it('counts CJK, accented and other scripts as FTS5 does (migration-built and written rows agree)', () => {
    store.upsertConversation({ conversationId: 'u', sessionId: 's-u', source: 'messages', createdAtMs: clock });
    const texts = ['Café CAFÉ cafe\u0301 naïve', toFtsText('数据库的数据很多数据'), 'Привет привет мир', 'ｆｕｌｌｗｉｄｔｈ ＴＥＳＴ test'];
    const keyed = Array.from({ length: 40 }, (_, i): KeyedMessage => ({ key: `u${i}`, message: { role: 'user', timestamp: ++clock, content: texts[i % texts.length]! } }));
    db.prepare("UPDATE term_index_settings SET value = 5 WHERE key = 'common_docs'").run();
    store.appendMessages('u', keyed);
    // As migration 11 builds it for a store that has rows: every word in 5 rows or more made common.
    const writer = new TermIndexWriter(db);
    writer.build();
    writer.close();
    expect(db.prepare<[], string>('SELECT term FROM term_index_terms').pluck().all()).toEqual(expect.arrayContaining(['cafe', '数', 'привет', 'test']));
    // Then written by the writer, counted by the JavaScript tokenizer.
    store.appendMessages('u', keyed.map((k) => ({ ...k, key: `${k.key}b` })));
    expectIndexMatchesFts(5);
  });
});
