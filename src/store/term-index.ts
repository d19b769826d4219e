import type Database from 'better-sqlite3';
import { Unicode61 } from './fts-tokenizer.js';
import { NOMINATE_BITS, TermCutter } from './term-cutter.js';

/**
 * The term index: for the few very common words of a store, which messages hold each and how many
 * times (their postings), and every message's length in tokens, kept next to FTS5's index at write
 * time. A query's common words are scored from it in JavaScript at ~20 ns a posting, where FTS5's
 * bm25() costs ~1 µs a row (it looks every row's length up in its docsize table): on the 10x bench
 * tree three common words hold ~275,000 postings, 5 ms of scoring against ~300 ms. The scores are
 * FTS5's own formula on FTS5's own counts (`fts-tokenizer.ts` cuts and stems as FTS5 does), so the
 * ranking is exactly the one bm25() over every match would give; search-ranking.ts adds the rarer
 * words' scores from FTS5.
 *
 * A word is common once it is in COMMON_DOCS messages or more (the store's `common_docs` setting):
 * below that, FTS5 scores it in a few milliseconds. Words become common as the store grows: the
 * writer notices (see `nominate`) and fills the new word's postings from FTS5's own index, once.
 *
 * Layout (migration 11):
 * - term_index_terms (id, term, df): the common words (stems, as FTS5 stores them) and how many
 *   live messages hold each.
 * - term_index_postings (id = chunk·2³² + term id, last, data): a word's postings among the row ids
 *   of one chunk (2¹⁴ ids), varint coded; `last` is the highest row id in it. Rows of one chunk are
 *   neighbours, so a commit's appends touch the B-tree's last pages only.
 * - term_index_deltas (seq, data): postings of recent small commits (a hook delivers a few messages
 *   at a time), merged into the chunks once they add up to DELTA_MERGE_BYTES.
 * - term_index_lengths (chunk, data): every row's token count, 4 bytes a row id, 2¹² ids a row.
 */

export const POSTING_CHUNK_BITS = 14;
const POSTING_CHUNK = 1 << POSTING_CHUNK_BITS;
export const LENGTH_CHUNK_BITS = 12;
const LENGTH_CHUNK = 1 << LENGTH_CHUNK_BITS;
/** A word is common from this many messages on (the setting `common_docs` overrides it). */
export const DEFAULT_COMMON_DOCS = 8192;
const CHUNK_KEY = 2 ** 32;
/** Recent postings are merged into their chunks once the deltas hold this many bytes or rows. */
const DELTA_MERGE_BYTES = 256 * 1024;
const DELTA_MERGE_ROWS = 64;
/** A word is nominated in about one in this many of the rows that hold it (see term-cutter.ts). */
const NOMINATE_ONE_IN = 2 ** NOMINATE_BITS;
/** The store keeps what it knows of at most this many nominated words (see `nominate`); past it, the least likely half. */
const MAX_NOMINEES = 100_000;
/**
 * A snapshot (see `snapshot`) keeps each word in this fraction of the threshold's messages or more
 * by name, and bounds every other word by it: a word is then first checked near the threshold.
 */
const SNAPSHOT_FLOOR_SHARE = 4;
/**
 * In a write of this many rows or more (an import's, a sync's), a word the store knows nothing of
 * (no snapshot bounds it) nominated in one row only is checked at its next nomination instead: most
 * such words are rare ones, and a check reads FTS5's index (~140 µs). A hook's few rows check at once.
 */
const DEFER_FIRST_CHECK_ROWS = 256;
/**
 * A bulk writer (see `TermIndexOptions.bulk`) starts deferring at a write of this many rows or more
 * while no word is common; once it defers, it defers every write, whatever its size: a small group
 * counted in the middle of a load made a word common (its FTS5 count includes the deferred rows),
 * and that ended the deferring for the rest of the run. With a key, the writer's groups are smaller
 * (the gateway paces the sessions): on the 1x import to both sinks, 12 of 171 groups were under 256
 * rows, and the first of them that came after ~8,192 rows ended it.
 */
const BULK_MIN_ROWS = 256;
/**
 * ...and while the store holds fewer rows than this. Making every common word common at once reads
 * each one's postings from FTS5, which costs more per row the larger the store: 0.45 s for the 1x
 * bench store's 83,128 rows (5 µs a row), 16.5 s for the 10x store's 828,448 (20 µs a row), against
 * ~13 µs a row for cutting and counting each row as it is written. Past this, the writer makes
 * them common at once and counts rows from then on.
 */
const BULK_MAX_ROWS = 2 ** 17;
/**
 * A bulk writer checks the words that could have crossed the threshold once in this many rows, and
 * at finish: all at finish alone could outlast the 10 s the writer thread has to close (the 10x
 * cold import's took 10.2 s: ~1,850 words crossed after its first 2^17 rows). Every 2^14 rows
 * instead of 2^16, a word near the threshold is checked more often: the 10x cold import took
 * 82.3 s against 77.0 s, 3,000 new sessions into its store 12.1/12.5 s against 11.5/12.1 s.
 */
const CROSSING_CHECK_ROWS = 2 ** 16;
/** FTS5's bm25 constants. */
const K1 = 1.2;
const B = 0.75;

export const TERM_INDEX_SCHEMA = `
  CREATE TABLE term_index_terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE, df INTEGER NOT NULL);
  CREATE TABLE term_index_postings (id INTEGER PRIMARY KEY, last INTEGER NOT NULL, data BLOB NOT NULL);
  CREATE TABLE term_index_deltas (seq INTEGER PRIMARY KEY, data BLOB NOT NULL);
  CREATE TABLE term_index_lengths (chunk INTEGER PRIMARY KEY, data BLOB NOT NULL);
  CREATE TABLE term_index_settings (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
  CREATE VIRTUAL TABLE term_index_vocab_row USING fts5vocab (messages_fts, row);
  CREATE VIRTUAL TABLE term_index_vocab_instance USING fts5vocab (messages_fts, instance);
`;

/**
 * What the store knows of words not common yet (migration 14, see `nominate`): each word nominated
 * since the last snapshot held at most `bound` messages when the newest row id was `id_at`, and
 * `rows` rows nominated it since; settings `unknown_bound` and `unknown_at` bound every other word
 * the same way (no such settings: nothing is known, and a word is bounded by the rows written).
 */
export const TERM_NOMINEES_SCHEMA = `
  CREATE TABLE term_index_nominees (term TEXT PRIMARY KEY, bound INTEGER NOT NULL, id_at INTEGER NOT NULL, rows INTEGER NOT NULL) WITHOUT ROWID;
`;

// ---------------------------------------------------------------------------------------------
// Codings

/** A growable byte buffer with LEB128 varints. */
class Bytes {
  buf = new Uint8Array(256);
  len = 0;

  varint(v: number): void {
    if (this.len + 10 > this.buf.length) this.grow(this.len + 10);
    while (v >= 0x80) {
      this.buf[this.len++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 128);
    }
    this.buf[this.len++] = v;
  }

  bytes(b: Uint8Array): void {
    if (this.len + b.length > this.buf.length) this.grow(this.len + b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
  }

  take(): Buffer {
    const out = Buffer.from(this.buf.subarray(0, this.len));
    this.len = 0;
    return out;
  }

  private grow(min: number): void {
    const bigger = new Uint8Array(Math.max(min, this.buf.length * 2));
    bigger.set(this.buf.subarray(0, this.len));
    this.buf = bigger;
  }
}

/** Postings as parallel arrays, row ids ascending. */
export interface Postings {
  ids: number[];
  tfs: number[];
}

/** Postings as a write holds them (see `TermIndexWriter.add`): ids ascending. */
interface PostingsView {
  ids: ArrayLike<number>;
  tfs: ArrayLike<number>;
}

/** Each posting: (gap from the previous id, ×2, +1 when tf > 1), then tf when > 1. `prev` is the id before the first. */
function encodePostings(out: Bytes, ids: ArrayLike<number>, tfs: ArrayLike<number>, from: number, to: number, prev: number): void {
  for (let i = from; i < to; i++) {
    const tf = tfs[i]!;
    out.varint((ids[i]! - prev) * 2 + (tf > 1 ? 1 : 0));
    if (tf > 1) out.varint(tf);
    prev = ids[i]!;
  }
}

/** Calls `each(id, tf)` for the postings in `data[from..to)`, ids from `prev` on. */
export function decodePostings(data: Uint8Array, from: number, to: number, prev: number, each: (id: number, tf: number) => void): void {
  let i = from;
  while (i < to) {
    let v = 0;
    let shift = 1;
    let b: number;
    do {
      b = data[i++]!;
      v += (b & 0x7f) * shift;
      shift *= 128;
    } while (b & 0x80);
    const id = prev + Math.floor(v / 2);
    let tf = 1;
    if (v & 1) {
      tf = 0;
      shift = 1;
      do {
        b = data[i++]!;
        tf += (b & 0x7f) * shift;
        shift *= 128;
      } while (b & 0x80);
    }
    prev = id;
    each(id, tf);
  }
}

function readVarint(data: Uint8Array, at: { i: number }): number {
  let v = 0;
  let shift = 1;
  let b: number;
  do {
    b = data[at.i++]!;
    v += (b & 0x7f) * shift;
    shift *= 128;
  } while (b & 0x80);
  return v;
}

/** A delta row: per word, (term id, byte length, postings from id -1). */
function encodeDelta(out: Bytes, sections: ReadonlyMap<number, PostingsView>): Buffer {
  const body = new Bytes();
  for (const [termId, p] of sections) {
    encodePostings(body, p.ids, p.tfs, 0, p.ids.length, -1);
    out.varint(termId);
    out.varint(body.len);
    out.bytes(body.buf.subarray(0, body.len));
    body.len = 0;
  }
  return out.take();
}

/** The sections of a delta row for the words asked (all when `wanted` is undefined). */
function decodeDelta(data: Uint8Array, wanted: ReadonlySet<number> | undefined, each: (termId: number, id: number, tf: number) => void): void {
  const at = { i: 0 };
  while (at.i < data.length) {
    const termId = readVarint(data, at);
    const length = readVarint(data, at);
    const start = at.i;
    at.i += length;
    if (wanted && !wanted.has(termId)) continue;
    decodePostings(data, start, start + length, -1, (id, tf) => each(termId, id, tf));
  }
}

/** SQLite's varint (big-endian, as FTS5 writes its records). */
function sqliteVarint(data: Uint8Array, at: { i: number }): number {
  let v = 0;
  for (let k = 0; k < 8; k++) {
    const b = data[at.i++]!;
    v = v * 128 + (b & 0x7f);
    if (!(b & 0x80)) return v;
  }
  return v * 256 + data[at.i++]!;
}

/** The index's row count and total tokens: FTS5's averages record, the numbers its bm25() uses. */
export interface IndexTotals {
  rows: number;
  tokens: number;
}

export function readIndexTotals(db: Database.Database): IndexTotals {
  const block = db.prepare<[], Buffer>('SELECT block FROM messages_fts_data WHERE id = 1').pluck().get();
  if (!block || block.length === 0) return { rows: 0, tokens: 0 };
  const at = { i: 0 };
  const rows = sqliteVarint(block, at);
  const tokens = at.i < block.length ? sqliteVarint(block, at) : 0;
  return { rows, tokens };
}

function commonDocs(db: Database.Database): number {
  return db.prepare<[], number>("SELECT value FROM term_index_settings WHERE key = 'common_docs'").pluck().get() ?? DEFAULT_COMMON_DOCS;
}

function lengthsChunk(data: Buffer | undefined): Uint8Array {
  const out = new Uint8Array(LENGTH_CHUNK * 4);
  if (data) out.set(data.subarray(0, out.length));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Writing

/** A row as the writer indexes it: its row id and the UTF-8 text FTS5 was given. */
export type IndexedRow = readonly [rowid: number | bigint, text: Uint8Array];

/**
 * What the store knows of a word not common yet: it held at most `bound` messages when the newest
 * row id was `idAt`, and `rows` rows written since nominated it (a row of term_index_nominees).
 */
interface Nominee {
  bound: number;
  idAt: number;
  rows: number;
}

/** A write's nominations: its row ids, the snapshot's bound (when one holds), and whether a word nominated once waits. */
interface NominatingWrite {
  first: number;
  newest: number;
  snapshot: Nominee | undefined;
  deferFirst: boolean;
}

/**
 * At most how many rows hold a word that `rows` rows nominated: NOMINATE_ONE_IN for each, with three
 * standard deviations and three rows to spare.
 */
function sampledBound(rows: number): number {
  return NOMINATE_ONE_IN * (rows + 3 * Math.sqrt(rows) + 3);
}

export interface TermIndexOptions {
  /** How many nominated words the store keeps what it knows of (a test makes it small). */
  memoTerms?: number;
  /** How many rows a bulk writer counts between checks of its crossing words (a test makes it small). */
  crossingCheckRows?: number;
  /**
   * A bulk loader's writer (an import's or a sync's writer thread). While the store has no common
   * word yet and fewer than BULK_MAX_ROWS rows, as during a cold import, its large writes keep only
   * each row's length (from FTS5's docsize table): a row's words are not cut and counted, and no
   * word is checked. `finish()` (or the write that takes the store past BULK_MAX_ROWS) then makes
   * common at once every word FTS5 holds in `threshold` messages or more, as migration 11 builds
   * the index: on the 1x bench tree, 0.45 s once against ~1.1 s of cutting and counting every row
   * on the thread that bounds the import. Meanwhile the index holds no postings, so every query is
   * scored by FTS5: exact, as always, only slower. A writer that never finishes (killed) leaves the
   * same: the next bulk writer's large write or finish makes them common, and a small write's
   * nominations make them common one by one. When its writes are counted, a word that could have
   * crossed the threshold is checked once in CROSSING_CHECK_ROWS rows and at `finish()`, not at
   * each nomination as it nears it (a hook's writer, which has no end of run, checks at once).
   */
  bulk?: boolean;
}

/** What the store knows of words not common yet: term_index_nominees and the settings beside it. */
function knownStatements(db: Database.Database) {
  return {
    nominee: db.prepare<[string], Nominee>('SELECT bound, id_at AS idAt, rows FROM term_index_nominees WHERE term = ?'),
    putNominee: db.prepare<[string, number, number, number]>('INSERT OR REPLACE INTO term_index_nominees (term, bound, id_at, rows) VALUES (?, ?, ?, ?)'),
    dropNominee: db.prepare<[string]>('DELETE FROM term_index_nominees WHERE term = ?'),
    allNominees: db.prepare<[], [string, number, number, number]>('SELECT term, bound, id_at, rows FROM term_index_nominees').raw(),
    clearNominees: db.prepare('DELETE FROM term_index_nominees'),
    setting: db.prepare<[string], number>('SELECT value FROM term_index_settings WHERE key = ?').pluck(),
    putSetting: db.prepare<[string, number]>('INSERT OR REPLACE INTO term_index_settings (key, value) VALUES (?, ?)'),
    dropUnknown: db.prepare("DELETE FROM term_index_settings WHERE key IN ('unknown_bound', 'unknown_at', 'nominees')"),
    newestRow: db.prepare<[], number>('SELECT coalesce(max(id), 0) FROM messages_fts_docsize').pluck(),
  };
}

export class TermIndexWriter {
  private readonly tokenizer = new Unicode61();
  private readonly stmts;
  /** Term (a stem, or stems of a phrase joined by a space) → index into termIds; reloaded when another writer made one common. */
  private common = new Map<string, number>();
  private termIds: number[] = [];
  /** Cuts rows for the common terms: made by `refresh`, which every write calls first, and again when they change. */
  private cutter: TermCutter | undefined;
  private commonVersion = -1;
  private threshold = DEFAULT_COMMON_DOCS;
  private totals: IndexTotals = { rows: 0, tokens: 0 };
  /** A write's postings as it counts them, reused from write to write (an import's are millions). */
  private readonly flat = new Triples();
  /** How often this writer read a word's message count from FTS5 to see whether it became common. */
  checks = 0;
  private knownStmts: ReturnType<typeof knownStatements> | undefined;
  /**
   * A bulk writer's words that could have become common, checked once in a while (see
   * CROSSING_CHECK_ROWS) and at `finish`: a word near the threshold is nominated every few dozen
   * rows, and on the 10x bench store 3,000 new sessions checked 500 such words 1,500 times
   * (~0.75 ms each) as each crept up to it.
   */
  private readonly crossing = new Set<string>();
  /** Rows this writer counted since it last checked `crossing`. */
  private sinceCrossingCheck = 0;
  /** Words this write's nominations put in term_index_nominees that were not there (see `keepNominees`). */
  private newNominees = 0;

  private readonly memoTerms: number;
  private readonly crossingCheckRows: number;
  private readonly bulk: boolean;
  /** Rows were written while deferring (see `TermIndexOptions.bulk`): `finish` has words to make common. */
  private deferred = false;
  /** `finish` made the words common once: this writer does not defer again (the store may have none). */
  private finished = false;

  constructor(
    private readonly db: Database.Database,
    options: TermIndexOptions = {},
  ) {
    this.memoTerms = options.memoTerms ?? MAX_NOMINEES;
    this.crossingCheckRows = options.crossingCheckRows ?? CROSSING_CHECK_ROWS;
    this.bulk = options.bulk ?? false;
    this.stmts = {
      version: db.prepare<[], number>('SELECT coalesce(max(id), 0) FROM term_index_terms').pluck(),
      terms: db.prepare<[], { id: number; term: string }>('SELECT id, term FROM term_index_terms ORDER BY id'),
      addDf: db.prepare<[number, number]>('UPDATE term_index_terms SET df = df + ? WHERE id = ?'),
      insertTerm: db.prepare<[string, number], number>('INSERT INTO term_index_terms (term, df) VALUES (?, ?) RETURNING id').pluck(),
      dfOf: db.prepare<[string], number>('SELECT doc FROM term_index_vocab_row WHERE term = ?').pluck(),
      phraseDf: db.prepare<[string], number>('SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?').pluck(),
      phraseScores: db.prepare<[string], [number, number]>('SELECT rowid, bm25(messages_fts) FROM messages_fts WHERE messages_fts MATCH ?').raw(),
      instances: db.prepare<[string], string | null>('SELECT group_concat(doc) FROM term_index_vocab_instance WHERE term = ?').pluck(),
      docsizes: db.prepare<[number, number], [number, Buffer]>('SELECT id, sz FROM messages_fts_docsize WHERE id BETWEEN ? AND ?').raw(),
      getLengths: db.prepare<[number], Buffer>('SELECT data FROM term_index_lengths WHERE chunk = ?').pluck(),
      putLengths: db.prepare<[number, Uint8Array]>('INSERT OR REPLACE INTO term_index_lengths (chunk, data) VALUES (?, ?)'),
      getPosting: db.prepare<[number], { last: number; data: Buffer }>('SELECT last, data FROM term_index_postings WHERE id = ?'),
      putPosting: db.prepare<[number, number, Uint8Array]>('INSERT OR REPLACE INTO term_index_postings (id, last, data) VALUES (?, ?, ?)'),
      deletePosting: db.prepare<[number]>('DELETE FROM term_index_postings WHERE id = ?'),
      chunkPostings: db.prepare<[number, number], { id: number; last: number; data: Buffer }>(
        'SELECT id, last, data FROM term_index_postings WHERE id >= ? AND id < ?',
      ),
      addDelta: db.prepare<[Uint8Array]>('INSERT INTO term_index_deltas (data) VALUES (?)'),
      deltaSize: db.prepare<[], { n: number; bytes: number }>('SELECT count(*) AS n, coalesce(sum(length(data)), 0) AS bytes FROM term_index_deltas'),
      deltas: db.prepare<[], Buffer>('SELECT data FROM term_index_deltas ORDER BY seq').pluck(),
      clearDeltas: db.prepare('DELETE FROM term_index_deltas'),
    };
  }

  /** Prepared at first use: migration 11 builds the index before migration 14 adds their table. */
  private get known(): ReturnType<typeof knownStatements> {
    return (this.knownStmts ??= knownStatements(this.db));
  }

  close(): void {
    this.tokenizer.close();
  }

  /** The common terms as the database has them now (called inside the write transaction). */
  private refresh(): void {
    const version = this.stmts.version.get() ?? 0;
    if (version === this.commonVersion) return;
    this.commonVersion = version;
    this.threshold = commonDocs(this.db);
    this.common = new Map();
    this.termIds = [];
    const terms: string[] = [];
    for (const { id, term } of this.stmts.terms.all()) {
      this.common.set(term, this.termIds.length);
      this.termIds.push(id);
      terms.push(term);
    }
    this.cutter = new TermCutter(terms, this.tokenizer);
  }

  /**
   * Indexes rows FTS5 was just given, in the caller's transaction: their lengths, their postings
   * for the common terms, and any term they make common.
   */
  add(rows: readonly IndexedRow[]): void {
    if (rows.length === 0) return;
    this.refresh();
    const { first, newest } = idRange(rows);
    if (this.bulk && !this.finished && this.termIds.length === 0 && (this.deferred || rows.length >= BULK_MIN_ROWS)) {
      // Other writers' rows in the range get FTS5's count too: the same number they wrote.
      this.lengthsFromFts(first, newest);
      this.deferred = true;
      // Deferred rows nominate nothing, so what the store knew of its words would undercount them:
      // forgotten after every deferred write, until finish's snapshot (a killed loader leaves none).
      this.forgetNominees();
      // These rows too are counted by finish (from FTS5, which holds them already).
      if (newest >= BULK_MAX_ROWS) this.finish();
      return;
    }
    const tf = new Int32Array(this.termIds.length);
    const touched: number[] = [];
    const count = (term: number): void => {
      const before = tf[term]!;
      tf[term] = before + 1;
      if (before === 0) touched.push(term);
    };
    // This write's postings, flat: (term, row id, count) in row order (see `writePostings`).
    const flat = this.flat;
    flat.clear();
    // Term → how many of these rows nominated it (a large write, an import's, nominates a word in
    // many), and the last row that did: a row counts once, however often the word stands in it.
    const nominated = new Map<string, number>();
    const nominatedIn = new Map<string, number>();
    let id = 0;
    const nominate = (term: string): void => {
      if (nominatedIn.get(term) === id) return;
      nominatedIn.set(term, id);
      nominated.set(term, (nominated.get(term) ?? 0) + 1);
    };
    const lengths = new Map<number, Uint8Array>();
    for (const [rowid, text] of rows) {
      id = Number(rowid);
      const dl = this.cutter!.cut(text, id, count, nominate);
      for (const term of touched) {
        flat.push(term, id, tf[term]!);
        tf[term] = 0;
      }
      touched.length = 0;
      const chunk = Math.floor(id / LENGTH_CHUNK);
      let block = lengths.get(chunk);
      if (!block) lengths.set(chunk, (block = lengthsChunk(this.stmts.getLengths.get(chunk))));
      new DataView(block.buffer).setUint32((id % LENGTH_CHUNK) * 4, dl, true);
    }
    for (const [chunk, block] of lengths) this.stmts.putLengths.run(chunk, block);
    this.writePostings(flat);
    const write: NominatingWrite = { first, newest, snapshot: this.snapshotBound(), deferFirst: rows.length >= DEFER_FIRST_CHECK_ROWS };
    this.newNominees = 0;
    const crossed: Array<[term: string, df: number]> = [];
    for (const [term, inRows] of nominated) {
      const df = this.nominate(term, inRows, write);
      if (df !== undefined) crossed.push([term, df]);
    }
    this.makeCommon(crossed, newest);
    this.keepNominees(write);
    this.sinceCrossingCheck += rows.length;
    if (this.sinceCrossingCheck >= this.crossingCheckRows) this.checkCrossing(newest);
  }

  /** The lengths of the rows with ids in [first, last] as FTS5 counted them (its docsize table). */
  private lengthsFromFts(first: number, last: number): void {
    const lengths = new Map<number, Uint8Array>();
    const at = { i: 0 };
    for (const [id, sz] of this.stmts.docsizes.iterate(first, last)) {
      const chunk = Math.floor(id / LENGTH_CHUNK);
      let block = lengths.get(chunk);
      if (!block) lengths.set(chunk, (block = lengthsChunk(this.stmts.getLengths.get(chunk))));
      at.i = 0;
      new DataView(block.buffer).setUint32((id % LENGTH_CHUNK) * 4, sqliteVarint(sz, at), true);
    }
    for (const [chunk, block] of lengths) this.stmts.putLengths.run(chunk, block);
  }

  /**
   * Ends a bulk writer's run, in the caller's transaction. After deferred writes (see
   * `TermIndexOptions.bulk`): every word FTS5 now holds in `threshold` messages or more made common,
   * and a snapshot taken. After counted ones: each word that could have crossed checked once.
   */
  finish(): void {
    if (this.deferred) {
      this.deferred = false;
      this.finished = true;
      // The snapshot makes every word in threshold messages common, the crossing ones among them.
      this.crossing.clear();
      this.snapshot();
      return;
    }
    if (this.crossing.size === 0) return;
    this.refresh();
    this.checkCrossing(this.known.newestRow.get() ?? 0);
  }

  /** The words that could have crossed since the last time, checked once each (see `crossing`). */
  private checkCrossing(newest: number): void {
    this.sinceCrossingCheck = 0;
    const crossed: Array<[term: string, df: number]> = [];
    for (const term of this.crossing) {
      const df = this.common.has(term) ? undefined : this.check(term, newest);
      if (df !== undefined) crossed.push([term, df]);
    }
    this.crossing.clear();
    this.makeCommon(crossed, newest);
  }


  /**
   * A term nominated in `inRows` of the new rows: its message count if FTS5 now holds it in
   * `threshold` messages (the caller makes it common), else what the store knows of it updated. A
   * check reads the word's whole list in FTS5 (~0.5 ms on the 10x bench store), so it is made only
   * when the word could have crossed: its last known bound, plus the rows written since, or, when
   * fewer, NOMINATE_ONE_IN for each row that nominated it (with three standard deviations and three
   * rows to spare). Every writer's nominations are kept in the store, so a process knows what the
   * ones before it saw. A word never nominated since the last snapshot is bounded by the snapshot;
   * with none (a phrase, or a store whose loader was killed while deferring), by the rows the store
   * held before this write. On the 10x bench store, 3,000 new sessions made 3,882 checks (2.3 s of
   * the writer thread) when every process started from that last bound.
   */
  private nominate(term: string, inRows: number, write: NominatingWrite): number | undefined {
    if (this.common.has(term)) return undefined;
    const stored = this.known.nominee.get(term);
    const bySnapshot = !stored && write.snapshot !== undefined && !term.includes(' ');
    const known = stored ?? (bySnapshot ? write.snapshot! : { bound: write.first - 1, idAt: write.first - 1, rows: 0 });
    if (!stored) this.newNominees++;
    const rows = known.rows + inRows;
    if (!stored && !bySnapshot && write.deferFirst && inRows === 1) {
      this.known.putNominee.run(term, known.bound, known.idAt, rows);
      return undefined;
    }
    const below = known.bound + Math.min(write.newest - known.idAt, sampledBound(rows)) < this.threshold;
    if (below || this.bulk) {
      this.known.putNominee.run(term, known.bound, known.idAt, rows);
      // Made common at finish, its postings read from FTS5 then, the rows written meanwhile with them.
      if (!below) this.crossing.add(term);
      return undefined;
    }
    return this.check(term, write.newest);
  }

  /**
   * Reads how many messages FTS5 holds `term` in: that count if it reached the threshold (the caller
   * makes it common), else undefined, and the count kept as the word's bound.
   */
  private check(term: string, newest: number): number | undefined {
    this.checks++;
    const df = this.messagesHolding(term);
    if (df >= this.threshold) return df;
    this.known.putNominee.run(term, df, newest, 0);
    return undefined;
  }

  /** How many messages FTS5 holds `term` in (a word's whole list read, or a phrase's matches counted). */
  private messagesHolding(term: string): number {
    return term.includes(' ') ? (this.stmts.phraseDf.get(`"${term}"`) ?? 0) : (this.stmts.dfOf.get(term) ?? 0);
  }

  /** Words a write took over the threshold made common, the terms reloaded once for all of them. */
  private makeCommon(crossed: ReadonlyArray<[term: string, df: number]>, newest: number): void {
    if (crossed.length === 0) return;
    for (const [term, df] of crossed) {
      if (this.insertCommon(term)) this.known.dropNominee.run(term);
      // A phrase whose counts cannot be read back stays with FTS5, checked again when next nominated.
      else this.known.putNominee.run(term, df, newest, 0);
    }
    // The new terms are counted from the next row on (refresh sees the new version).
    this.refresh();
  }

  /** The snapshot's bound for every word it does not name (see TERM_NOMINEES_SCHEMA), if one holds. */
  private snapshotBound(): Nominee | undefined {
    const bound = this.known.setting.get('unknown_bound');
    const idAt = this.known.setting.get('unknown_at');
    return bound === undefined || idAt === undefined ? undefined : { bound, idAt, rows: 0 };
  }

  /**
   * Past `memoTerms` kept words, the half least likely to become common are forgotten, and every
   * word the store does not name is bounded from then on by the most any of them could hold.
   */
  private keepNominees(write: NominatingWrite): void {
    if (this.newNominees === 0) return;
    const kept = (this.known.setting.get('nominees') ?? 0) + this.newNominees;
    if (kept < this.memoTerms) {
      this.known.putSetting.run('nominees', kept);
      return;
    }
    const most = (n: Nominee): number => n.bound + Math.min(write.newest - n.idAt, sampledBound(n.rows));
    const all = this.known.allNominees.all().map(([term, bound, idAt, rows]) => ({ term, most: most({ bound, idAt, rows }) }));
    all.sort((a, b) => a.most - b.most);
    const forgotten = all.slice(0, Math.ceil(all.length / 2));
    for (const { term } of forgotten) this.known.dropNominee.run(term);
    this.known.putSetting.run('nominees', all.length - forgotten.length);
    // Without a snapshot, a word not named is bounded by the rows written, already at least this.
    if (write.snapshot === undefined) return;
    this.known.putSetting.run('unknown_bound', Math.max(forgotten.at(-1)?.most ?? 0, most(write.snapshot)));
    this.known.putSetting.run('unknown_at', write.newest);
  }

  /** Nothing known of any word (deferred rows nominated none): every word bounded by the rows written. */
  private forgetNominees(): void {
    this.known.clearNominees.run();
    this.known.dropUnknown.run();
  }

  /**
   * Every word FTS5 holds in `threshold` messages or more, made common (the terms reloaded once,
   * after all); returns the words it holds in `from` messages or more but fewer than that, with
   * their counts (one read of FTS5's whole vocabulary either way).
   */
  private promoteCommonWords(from?: number): Array<[word: string, doc: number]> {
    // The threshold as the store has it: read by refresh.
    this.refresh();
    const words = this.db.prepare<[number], [string, number]>('SELECT term, doc FROM term_index_vocab_row WHERE doc >= ?').raw().all(from ?? this.threshold);
    const below: Array<[word: string, doc: number]> = [];
    for (const [word, doc] of words) {
      if (doc < this.threshold) below.push([word, doc]);
      else if (!this.common.has(word)) this.insertCommon(word);
    }
    this.refresh();
    return below;
  }

  /**
   * Every word FTS5 holds in `threshold` messages or more made common, and what the store knows of
   * the others started afresh from FTS5's counts (one read of its whole vocabulary, ~1.5 s on the
   * 10x bench store): each word in a SNAPSHOT_FLOOR_SHARE of the threshold's messages or more by
   * name, every other word bounded below that.
   */
  snapshot(): void {
    this.refresh();
    const floor = Math.max(1, Math.floor(this.threshold / SNAPSHOT_FLOOR_SHARE));
    const newest = this.known.newestRow.get() ?? 0;
    const near = this.promoteCommonWords(floor);
    this.forgetNominees();
    for (const [word, doc] of near) this.known.putNominee.run(word, doc, newest, 0);
    this.known.putSetting.run('nominees', near.length);
    // No word holds more messages than there are rows (nor, from there, than the floor).
    this.known.putSetting.run('unknown_bound', Math.min(floor - 1, newest));
    this.known.putSetting.run('unknown_at', newest);
  }

  /** `term`'s row in the term table and its postings; false when a phrase's counts cannot be read back. */
  private insertCommon(term: string): boolean {
    const docs = term.includes(' ') ? this.phrasePostings(term) : this.wordPostings(term);
    if (!docs) return false;
    const termId = this.stmts.insertTerm.get(term, docs.ids.length)!;
    const out = new Bytes();
    forEachChunk(docs.ids, (chunk, from, to) => {
      encodePostings(out, docs.ids, docs.tfs, from, to, chunk * POSTING_CHUNK - 1);
      this.stmts.putPosting.run(chunk * CHUNK_KEY + termId, docs.ids[to - 1]!, out.take());
    });
    return true;
  }

  /** A word's postings: FTS5's instances of it (fts5vocab), one per occurrence, by row. */
  private wordPostings(stem: string): Postings {
    const list = this.stmts.instances.get(stem);
    const docs: Postings = { ids: [], tfs: [] };
    if (!list) return docs;
    let v = 0;
    for (let i = 0; i <= list.length; i++) {
      const c = i < list.length ? list.charCodeAt(i) : 44;
      if (c !== 44) {
        v = v * 10 + c - 48;
        continue;
      }
      if (docs.ids.length > 0 && docs.ids[docs.ids.length - 1] === v) docs.tfs[docs.tfs.length - 1]!++;
      else {
        docs.ids.push(v);
        docs.tfs.push(1);
      }
      v = 0;
    }
    return docs;
  }

  /**
   * A phrase's postings. FTS5 gives a phrase's count in a row only through bm25(), so it is read
   * back from that: bm25 = -idf·tf·(k1+1) / (tf + k1·(1-b+b·dl/avgdl)), solved for tf with the
   * row's length, and checked (undefined, and the phrase stays with FTS5, should one not fit).
   */
  private phrasePostings(phrase: string): Postings | undefined {
    this.totals = readIndexTotals(this.db);
    const rows = this.stmts.phraseScores.all(`"${phrase}"`).sort((a, b) => a[0] - b[0]);
    const c1 = bm25Idf(this.totals.rows, rows.length) * (K1 + 1);
    const avgdl = this.totals.tokens / Math.max(1, this.totals.rows);
    const docs: Postings = { ids: [], tfs: [] };
    const lengths = new Map<number, DataView>();
    for (const [id, bm25] of rows) {
      const chunk = Math.floor(id / LENGTH_CHUNK);
      let view = lengths.get(chunk);
      if (!view) lengths.set(chunk, (view = new DataView(lengthsChunk(this.stmts.getLengths.get(chunk)).buffer)));
      const dl = view.getUint32((id % LENGTH_CHUNK) * 4, true);
      const k = K1 * (1 - B + (B * dl) / avgdl);
      const s = -bm25 / c1;
      const tf = Math.round((s * k) / (1 - s));
      if (!(tf >= 1) || Math.abs((c1 * tf) / (tf + k) + bm25) > 1e-9 * -bm25) return undefined;
      docs.ids.push(id);
      docs.tfs.push(tf);
    }
    return docs;
  }

  /**
   * A write's postings, by term, into the index: as a delta, or, once the deltas would hold
   * DELTA_MERGE_BYTES or DELTA_MERGE_ROWS with it, into their chunks, the deltas before it first:
   * the same chunks as storing it as a delta and merging them all, without storing and decoding it.
   */
  private writePostings(flat: Triples): void {
    if (flat.length === 0) return;
    const sections = new Map<number, PostingsView>();
    for (const [term, p] of flat.byTerm(this.termIds.length)) {
      const termId = this.termIds[term]!;
      sections.set(termId, p);
      this.stmts.addDf.run(p.ids.length, termId);
    }
    const delta = encodeDelta(new Bytes(), sections);
    const { n, bytes } = this.stmts.deltaSize.get() ?? { n: 0, bytes: 0 };
    if (n + 1 < DELTA_MERGE_ROWS && bytes + delta.length < DELTA_MERGE_BYTES) {
      this.stmts.addDelta.run(delta);
      return;
    }
    if (n > 0) this.mergeDeltas();
    const out = new Bytes();
    for (const [termId, p] of sections) {
      forEachChunk(p.ids, (chunk, from, to) => this.appendToChunk(out, chunk * CHUNK_KEY + termId, p, from, to));
    }
  }

  /** Moves the deltas' postings into their chunks. */
  mergeDeltas(): void {
    const byKey = new Map<number, Postings>();
    for (const data of this.stmts.deltas.all()) {
      decodeDelta(data, undefined, (termId, id, tf) => {
        const key = Math.floor(id / POSTING_CHUNK) * CHUNK_KEY + termId;
        let p = byKey.get(key);
        if (!p) byKey.set(key, (p = { ids: [], tfs: [] }));
        p.ids.push(id);
        p.tfs.push(tf);
      });
    }
    if (byKey.size === 0) return;
    const out = new Bytes();
    for (const key of [...byKey.keys()].sort((a, b) => a - b)) {
      const add = byKey.get(key)!;
      this.appendToChunk(out, key, add, 0, add.ids.length);
    }
    this.stmts.clearDeltas.run();
  }

  /** Postings `[from, to)` of `add` (ids ascending, all in the chunk of `key`) into that chunk's row. */
  private appendToChunk(out: Bytes, key: number, add: PostingsView, from: number, to: number): void {
    const chunkStart = Math.floor(key / CHUNK_KEY) * POSTING_CHUNK;
    const row = this.stmts.getPosting.get(key);
    if (row && add.ids[from]! <= row.last) {
      // Not an append (never expected: row ids only grow): merge whole.
      const merged = new Map<number, number>();
      decodePostings(row.data, 0, row.data.length, chunkStart - 1, (id, tf) => merged.set(id, tf));
      for (let i = from; i < to; i++) merged.set(add.ids[i]!, add.tfs[i]!);
      const ids = [...merged.keys()].sort((a, b) => a - b);
      encodePostings(out, ids, ids.map((id) => merged.get(id)!), 0, ids.length, chunkStart - 1);
      this.stmts.putPosting.run(key, ids[ids.length - 1]!, out.take());
      return;
    }
    if (row) out.bytes(row.data);
    encodePostings(out, add.ids, add.tfs, from, to, row ? row.last : chunkStart - 1);
    this.stmts.putPosting.run(key, add.ids[to - 1]!, out.take());
  }

  /** Forgets rows (deleted from FTS5 in the same transaction): their lengths and postings, their words' counts. */
  remove(rowids: readonly number[]): void {
    if (rowids.length === 0) return;
    this.mergeDeltas();
    const gone = new Set(rowids);
    const lengths = new Map<number, Uint8Array>();
    for (const id of rowids) {
      const chunk = Math.floor(id / LENGTH_CHUNK);
      let block = lengths.get(chunk);
      if (!block) lengths.set(chunk, (block = lengthsChunk(this.stmts.getLengths.get(chunk))));
      new DataView(block.buffer).setUint32((id % LENGTH_CHUNK) * 4, 0, true);
    }
    for (const [chunk, block] of lengths) this.stmts.putLengths.run(chunk, block);
    const out = new Bytes();
    for (const chunk of new Set(rowids.map((id) => Math.floor(id / POSTING_CHUNK)))) {
      const chunkStart = chunk * POSTING_CHUNK;
      for (const row of this.stmts.chunkPostings.all(chunk * CHUNK_KEY, (chunk + 1) * CHUNK_KEY)) {
        const ids: number[] = [];
        const tfs: number[] = [];
        let removed = 0;
        decodePostings(row.data, 0, row.data.length, chunkStart - 1, (id, tf) => {
          if (gone.has(id)) removed++;
          else {
            ids.push(id);
            tfs.push(tf);
          }
        });
        if (removed === 0) continue;
        const termId = row.id - chunk * CHUNK_KEY;
        this.stmts.addDf.run(-removed, termId);
        if (ids.length === 0) {
          this.stmts.deletePosting.run(row.id);
          continue;
        }
        encodePostings(out, ids, tfs, 0, ids.length, chunkStart - 1);
        this.stmts.putPosting.run(row.id, ids[ids.length - 1]!, out.take());
      }
    }
  }

  /**
   * Builds the index for rows FTS5 already holds (migration 11): every row's length from FTS5's
   * docsize table, and every word in `threshold` messages or more made common.
   */
  build(): void {
    this.lengthsFromFts(0, Number.MAX_SAFE_INTEGER);
    this.promoteCommonWords();
  }
}

/** Calls `each(chunk, from, to)` for each run `ids[from..to)` of ascending ids in one posting chunk. */
function forEachChunk(ids: ArrayLike<number>, each: (chunk: number, from: number, to: number) => void): void {
  for (let from = 0; from < ids.length; ) {
    const chunk = Math.floor(ids[from]! / POSTING_CHUNK);
    let to = from;
    while (to < ids.length && Math.floor(ids[to]! / POSTING_CHUNK) === chunk) to++;
    each(chunk, from, to);
    from = to;
  }
}

/**
 * A write's postings as it counts them: (term, row id, count) triples in row order, grown as needed
 * and kept off the JavaScript heap (a large write holds millions: as arrays per term they were
 * most of the writer thread's garbage collection).
 */
class Triples {
  private terms = new Int32Array(1024);
  private ids = new Float64Array(1024);
  private tfs = new Int32Array(1024);
  private size = 0;

  get length(): number {
    return this.size;
  }

  clear(): void {
    this.size = 0;
  }

  push(term: number, id: number, tf: number): void {
    const at = this.size;
    if (at === this.terms.length) this.grow();
    this.terms[at] = term;
    this.ids[at] = id;
    this.tfs[at] = tf;
    this.size = at + 1;
  }

  private grow(): void {
    const terms = new Int32Array(2 * this.size);
    const ids = new Float64Array(2 * this.size);
    const tfs = new Int32Array(2 * this.size);
    terms.set(this.terms);
    ids.set(this.ids);
    tfs.set(this.tfs);
    this.terms = terms;
    this.ids = ids;
    this.tfs = tfs;
  }

  /** Each term's postings (of `terms` terms), ids ascending as the rows came: one counting sort. */
  byTerm(terms: number): Map<number, PostingsView> {
    const start = new Int32Array(terms + 1);
    for (let k = 0; k < this.size; k++) start[this.terms[k]! + 1]!++;
    for (let t = 0; t < terms; t++) start[t + 1]! += start[t]!;
    const next = start.slice(0, terms);
    const ids = new Float64Array(this.size);
    const tfs = new Int32Array(this.size);
    for (let k = 0; k < this.size; k++) {
      const at = next[this.terms[k]!]!++;
      ids[at] = this.ids[k]!;
      tfs[at] = this.tfs[k]!;
    }
    const out = new Map<number, PostingsView>();
    for (let t = 0; t < terms; t++) {
      if (start[t + 1]! > start[t]!) out.set(t, { ids: ids.subarray(start[t], start[t + 1]), tfs: tfs.subarray(start[t], start[t + 1]) });
    }
    return out;
  }
}

/** The lowest and highest row id of a write. */
function idRange(rows: readonly IndexedRow[]): { first: number; newest: number } {
  let first = Infinity;
  let newest = 0;
  for (const [rowid] of rows) {
    first = Math.min(first, Number(rowid));
    newest = Math.max(newest, Number(rowid));
  }
  return { first, newest };
}

/** FTS5's idf. */
export function bm25Idf(rows: number, df: number): number {
  const idf = Math.log((rows - df + 0.5) / (df + 0.5));
  return idf <= 0 ? 1e-6 : idf;
}

// ---------------------------------------------------------------------------------------------
// Reading

export interface CommonTerm {
  id: number;
  df: number;
}

/** What a query reads of the term index, in one read transaction (see search-ranking). */
export class TermIndexReader {
  private readonly stmts;
  private terms = new Map<string, CommonTerm>();
  private lengths = new Map<number, DataView>();
  /** The chunk lengthOf read last: a scan asks for ids in order, so it mostly asks that chunk again. */
  private lastChunk = -1;
  private lastView: DataView | undefined;
  private version = '';

  constructor(db: Database.Database) {
    this.stmts = {
      terms: db.prepare<[], { id: number; term: string; df: number }>('SELECT id, term, df FROM term_index_terms'),
      lengths: db.prepare<[], { chunk: number; data: Buffer }>('SELECT chunk, data FROM term_index_lengths'),
      postings: db.prepare<[string], { id: number; data: Buffer }>('SELECT id, data FROM term_index_postings WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id'),
      maxChunk: db.prepare<[], number | null>('SELECT max(chunk) FROM term_index_lengths').pluck(),
      deltas: db.prepare<[], Buffer>('SELECT data FROM term_index_deltas ORDER BY seq').pluck(),
    };
  }

  /** Reloads what changed since `version` (the database's change counter). */
  refresh(version: string): void {
    if (version === this.version) return;
    this.version = version;
    this.terms = new Map(this.stmts.terms.all().map((t) => [t.term, { id: t.id, df: t.df }]));
    this.lengths = new Map(this.stmts.lengths.all().map((r) => [r.chunk, new DataView(r.data.buffer, r.data.byteOffset, r.data.byteLength)]));
    this.lastChunk = -1;
    this.lastView = undefined;
  }

  term(stem: string): CommonTerm | undefined {
    return this.terms.get(stem);
  }

  /** A row's token count (0 when it has no index row). */
  lengthOf(id: number): number {
    const chunk = Math.floor(id / LENGTH_CHUNK);
    if (chunk !== this.lastChunk) {
      this.lastChunk = chunk;
      this.lastView = this.lengths.get(chunk);
    }
    const view = this.lastView;
    return view ? view.getUint32((id - chunk * LENGTH_CHUNK) * 4, true) : 0;
  }

  /**
   * Calls `each(termId, id, tf)` for every posting of these words, chunk by chunk (all postings of
   * chunk c come before chunk c+1's; `chunkDone(c)` after each).
   */
  scan(termIds: readonly number[], each: (termId: number, id: number, tf: number) => void, chunkDone: (chunk: number) => void): void {
    const lastChunk = Math.floor(((this.stmts.maxChunk.get() ?? -1) + 1) * LENGTH_CHUNK / POSTING_CHUNK);
    const keys: number[] = [];
    for (let chunk = 0; chunk <= lastChunk; chunk++) for (const t of termIds) keys.push(chunk * CHUNK_KEY + t);
    // Recent postings (not yet merged), by chunk.
    const recent = new Map<number, Array<[number, number, number]>>();
    const wanted = new Set(termIds);
    for (const data of this.stmts.deltas.all()) {
      decodeDelta(data, wanted, (termId, id, tf) => {
        const chunk = Math.floor(id / POSTING_CHUNK);
        let list = recent.get(chunk);
        if (!list) recent.set(chunk, (list = []));
        list.push([termId, id, tf]);
      });
    }
    let current = -1;
    const finish = (upTo: number): void => {
      for (let c = current; c < upTo; c++) {
        if (c < 0) continue;
        for (const [termId, id, tf] of recent.get(c) ?? []) each(termId, id, tf);
        chunkDone(c);
      }
    };
    for (const row of keys.length > 0 ? this.stmts.postings.all(JSON.stringify(keys)) : []) {
      const chunk = Math.floor(row.id / CHUNK_KEY);
      if (chunk !== current) {
        finish(chunk);
        current = chunk;
      }
      const termId = row.id - chunk * CHUNK_KEY;
      decodePostings(row.data, 0, row.data.length, chunk * POSTING_CHUNK - 1, (id, tf) => each(termId, id, tf));
    }
    finish(lastChunk + 1);
  }
}
