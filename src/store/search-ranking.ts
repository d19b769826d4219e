import type Database from 'better-sqlite3';
import { isScoped, SCOPE_FILTER, type SearchScope } from './search-scope.js';
import { phrase, type FtsQuery } from './fts-text.js';
import { indexTerms, Unicode61 } from './fts-tokenizer.js';
import { POSTING_CHUNK_BITS, readIndexTotals, TermIndexReader, type IndexTotals } from './term-index.js';
import { withinTransaction } from './within-transaction.js';

/**
 * How a search ranks messages, in two stages.
 *
 * 1. **Exact BM25 over every match** (FTS5's bm25(): k1 1.2, b 0.75, its idf), computed in two
 *    parts that add up. A query's *common* words (those in thousands of messages: the term index,
 *    `term-index.ts`) are scored in JavaScript from their postings, every posting of every one of
 *    them; the rest (rarer words, phrases, CJK runs, prefixes) by FTS5 itself, whose work is small
 *    because each of those words is in fewer messages than the common threshold. The cost of a
 *    query is so bounded by what it asks for, not by luck: ~20 ns per posting of its common words
 *    plus ~1 µs per match of the others, where scoring a common word in FTS5 cost ~1 µs per match
 *    (300 ms for three common words on the 10x bench tree). Nothing is cut by age or count.
 *    FTS5's part is fetched whole while it is small; when it is large, only its best rows are
 *    fetched, and the result is checked to be exact (a row left out scores at most the last row
 *    fetched plus the best common-word score); if it is not, every row is fetched.
 * 2. **Signals on the top `depth`**, each chosen by measurement on the recall bench (bench/recall):
 *    the message's role (what the user and the assistant wrote against tool output), its turn (the
 *    score of the message just before it in its conversation: the question an answer answers, or the
 *    call a tool result belongs to, and of the one just after it), its conversation. Adopted: user
 *    ×1.5 and cover 0.5 (0.2–1.0 tried on the tune half). Cover: a message gains a share of another
 *    top message of its conversation's score for the query words that one holds and it lacks (their
 *    part of its matched words' idf), the best over the conversation: a conversation earns it by
 *    completing the question (the user names the subject, the assistant gives the value). The older
 *    `conversation` share (of the best other match, whatever its words: 0.5 until cover) rewarded
 *    repetition: beside real conversational history, long conversations that keep returning to
 *    "birthday" or "running" outranked a short session holding the fact. Cover on the recall bench:
 *    hit@10 all 78.9 → 80.5%, tune half 81.6 → 81.6%, report half 76.2 → 79.4%, coding 79.2 → 83.3%.
 *    The words each top message holds are recorded as stage 1 reads them (the term index's
 *    postings) or asked of FTS5 per word among the top's shared conversations (see `wordsOf`).
 */

const POSTING_CHUNK = 2 ** POSTING_CHUNK_BITS;

/** FTS5's bm25 constants. */
const K1 = 1.2;
const B = 0.75;

/** Without common words: below this many matching rows (summed over the terms) every match is scored in one query. */
const SCORE_ALL_ROWS = 20_000;

/** Without common words, a term in more than this share of all messages counts as common (see rankByFts). */
const COMMON_SHARE = 0.02;

export interface RankingParams {
  /** Messages re-ranked in stage 2 (and proven to be BM25's top in stage 1). */
  depth: number;
  /** Score multipliers by role. */
  user: number;
  assistant: number;
  tool: number;
  /** Share of the previous message's (its turn's) score a message gets. */
  turn: number;
  /** Share of the next message's score a message gets (an answer that confirms the question). */
  reply: number;
  /** Extra length normalisation: the score is divided by (tokens / mean tokens of the top) ^ this. */
  length: number;
  /** Share of the best score among the other top messages of the same conversation a message gets. */
  conversation: number;
  /**
   * Share of another top message of the same conversation's score a message gets for the query
   * words that message holds and this one lacks (their share of its matched words' idf): the best
   * such share over the conversation. A conversation earns it by completing the question (the user
   * names the subject, the assistant gives the value), never by repeating the same words.
   */
  cover: number;
  /** A term matches longer words by its opening only when it is no word of its own in the store. */
  prefixFallback: boolean;
  /** Score common words from the term index (false: FTS5 scores everything, the reference the tests compare with). */
  termIndex: boolean;
  /** Try rankByRare's bound before reading common words' postings (false: always read them; tests cover both). */
  rareFirst: boolean;
  /**
   * With common words: when the other terms match at most this many rows (summed), rankWithIndex
   * fetches FTS5's scores of every one of them at once (0: never; tests cover both).
   */
  wholeFtsRows: number;
  /** Above that, it fetches their best this many rows first, and every row only when those cannot prove the top. */
  ftsPartRows: number;
}

export const DEFAULT_RANKING: RankingParams = {
  depth: 200,
  user: 1.5,
  assistant: 1,
  tool: 1,
  turn: 0,
  reply: 0,
  length: 0,
  conversation: 0,
  cover: 0.5,
  prefixFallback: true,
  termIndex: true,
  rareFirst: true,
  wholeFtsRows: 20_000,
  ftsPartRows: 2000,
};

export interface Ranked {
  id: number;
  score: number;
}

interface ScoredRow {
  id: number;
  bm25: number;
}

interface MetaRow {
  id: number;
  role: string;
  conversation_id: string;
}

interface FtsTerm {
  /** The FTS5 phrase (or `(a OR b)` group) this term is matched by. */
  match: string;
  df: number;
  idf: number;
}

interface IndexTerm {
  id: number;
  /** The FTS5 phrase that matches it too (for the bound in rankByRare). */
  match: string;
  df: number;
  idf: number;
}

/** Stage 1's top, (id, BM25) best first, and the common words each holds when it read their postings (see `QueryWords`). */
interface Stage1 {
  top: Array<[number, number]>;
  commonWords?: Map<number, number>;
}

/** The cover signal tells apart a query's first this many terms (one bit each of an Int32): MAX_QUERY_TERMS words, and common CJK pieces past them go unseen. */
const WORD_BITS = 32;

/**
 * Which query words each of some messages holds: bit i for term i of `[...index, ...fts]` (the
 * first WORD_BITS), and the words' weight (their idf summed), for the cover signal.
 */
class QueryWords {
  constructor(
    private readonly idfs: readonly number[],
    private readonly held: ReadonlyMap<number, number>,
  ) {}

  of(id: number): number {
    return this.held.get(id) ?? 0;
  }

  weight(bits: number): number {
    let sum = 0;
    for (let b = bits; b !== 0; b &= b - 1) sum += this.idfs[31 - Math.clz32(b & -b)]!;
    return sum;
  }
}

function orOf(matches: string[]): string {
  return matches.length === 1 ? matches[0]! : matches.map((m) => `(${m})`).join(' OR ');
}

/**
 * The `k` best (score, id) pairs seen, best first on `sorted()`; ties go to the higher id (the newer
 * message). Each carries the bits of the query words it holds (see `QueryWords`).
 */
class TopK {
  private readonly scores: Float64Array;
  private readonly ids: Float64Array;
  private readonly words: Int32Array;
  size = 0;

  constructor(private readonly k: number) {
    this.scores = new Float64Array(k);
    this.ids = new Float64Array(k);
    this.words = new Int32Array(k);
  }

  /** The score a newcomer must beat once full (-Infinity before). */
  get floor(): number {
    return this.size < this.k ? -Infinity : this.scores[0]!;
  }

  private less(i: number, j: number): boolean {
    return this.scores[i]! < this.scores[j]! || (this.scores[i] === this.scores[j] && this.ids[i]! < this.ids[j]!);
  }

  private swap(i: number, j: number): void {
    const s = this.scores[i]!;
    this.scores[i] = this.scores[j]!;
    this.scores[j] = s;
    const d = this.ids[i]!;
    this.ids[i] = this.ids[j]!;
    this.ids[j] = d;
    const w = this.words[i]!;
    this.words[i] = this.words[j]!;
    this.words[j] = w;
  }

  push(score: number, id: number, words: number): void {
    if (this.size < this.k) {
      let i = this.size++;
      this.scores[i] = score;
      this.ids[i] = id;
      this.words[i] = words;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!this.less(i, parent)) break;
        this.swap(i, parent);
        i = parent;
      }
      return;
    }
    if (score < this.scores[0]! || (score === this.scores[0] && id <= this.ids[0]!)) return;
    this.scores[0] = score;
    this.ids[0] = id;
    this.words[0] = words;
    for (let i = 0; ; ) {
      const l = 2 * i + 1;
      let m = i;
      if (l < this.size && this.less(l, m)) m = l;
      if (l + 1 < this.size && this.less(l + 1, m)) m = l + 1;
      if (m === i) break;
      this.swap(i, m);
      i = m;
    }
  }

  sorted(): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    for (let i = 0; i < this.size; i++) out.push([this.ids[i]!, this.scores[i]!]);
    return out.sort((a, b) => b[1] - a[1] || b[0] - a[0]);
  }

  /** Each id's word bits. */
  wordsById(): Map<number, number> {
    const out = new Map<number, number>();
    for (let i = 0; i < this.size; i++) out.set(this.ids[i]!, this.words[i]!);
    return out;
  }
}

export class MessageRanker {
  private readonly count;
  private readonly metaStmt;
  private readonly scopeIds;
  private readonly version: () => string;
  private readonly reader: TermIndexReader;
  private readonly tokenizer = new Unicode61();
  private readonly snapshot: <T>(fn: () => T) => T;
  private dfCache = new Map<string, number>();
  private cacheVersion = '';
  private totals: IndexTotals = { rows: 0, tokens: 0 };
  private readonly scoreStmts = new Map<string, Database.Statement<Record<string, unknown>, ScoredRow>>();
  private readonly acc = new Float64Array(POSTING_CHUNK);
  private readonly touched = new Int32Array(POSTING_CHUNK);
  private readonly wordAcc = new Int32Array(POSTING_CHUNK);
  private readonly holding;

  constructor(private readonly db: Database.Database) {
    this.count = db.prepare<[string], number>('SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?').pluck();
    this.metaStmt = db.prepare<[string], MetaRow>('SELECT id, role, conversation_id FROM messages WHERE id IN (SELECT value FROM json_each(?))');
    this.scopeIds = db
      .prepare<SearchScope, string | null>(
        `SELECT group_concat(m.id) FROM conversations c JOIN messages m ON m.conversation_id = c.conversation_id WHERE ${SCOPE_FILTER}`,
      )
      .pluck();
    // `+rowid`: handed the ids as a rowid constraint, FTS5 runs the MATCH again for each of them
    // (~100 µs an id); filtered after it, FTS5 only walks the phrase's matches, unscored.
    this.holding = db.prepare<[string, string], number>('SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? AND +rowid IN (SELECT value FROM json_each(?))').pluck();
    this.reader = new TermIndexReader(db);
    // data_version moves when another connection commits; total_changes when this one writes.
    const changes = db.prepare<[], number>('SELECT total_changes()').pluck();
    this.version = () => `${String(db.pragma('data_version', { simple: true }))}:${changes.get() ?? 0}`;
    // Every read of one search in one snapshot: a commit in between (the writer never waits for
    // readers) would otherwise pair one state's postings with another's counts.
    this.snapshot = withinTransaction(db);
  }

  /** Document frequencies, the index's totals and the term index, kept while the database is unchanged. */
  private freshStats(): void {
    const version = this.version();
    if (version === this.cacheVersion) return;
    this.cacheVersion = version;
    this.dfCache = new Map();
    this.totals = readIndexTotals(this.db);
    this.reader.refresh(version);
  }

  private df(match: string): number {
    let n = this.dfCache.get(match);
    if (n === undefined) {
      n = this.count.get(match) ?? 0;
      this.dfCache.set(match, n);
    }
    return n;
  }

  private idf(df: number): number {
    // FTS5's own formula, so scores computed here add up with the ones bm25() returns.
    const idf = Math.log((this.totals.rows - df + 0.5) / (df + 0.5));
    return idf <= 0 ? 1e-6 : idf;
  }

  private scoreStmt(scoped: boolean, limited: boolean): Database.Statement<Record<string, unknown>, ScoredRow> {
    const key = `${scoped}:${limited}`;
    let stmt = this.scoreStmts.get(key);
    if (!stmt) {
      const limit = limited ? 'ORDER BY bm25 LIMIT @depth' : '';
      stmt = scoped
        ? this.db.prepare<Record<string, unknown>, ScoredRow>(
            `SELECT messages_fts.rowid AS id, bm25(messages_fts) AS bm25
             FROM messages_fts
             JOIN messages m ON m.id = messages_fts.rowid
             JOIN conversations c ON c.conversation_id = m.conversation_id
             WHERE messages_fts MATCH @match AND ${SCOPE_FILTER} ${limit}`,
          )
        : this.db.prepare<Record<string, unknown>, ScoredRow>(
            `SELECT rowid AS id, bm25(messages_fts) AS bm25 FROM messages_fts WHERE messages_fts MATCH @match ${limit}`,
          );
      this.scoreStmts.set(key, stmt);
    }
    return stmt;
  }

  /**
   * The query's terms: a single word held by the term index is scored from it; everything else (a
   * rarer word by its stem, or by its opening when it is no word of its own here; a phrase; a CJK
   * piece) by FTS5.
   */
  private terms(fts: FtsQuery, params: RankingParams): { index: IndexTerm[]; fts: FtsTerm[] } {
    const index: IndexTerm[] = [];
    const byFts: FtsTerm[] = [];
    // A word, or a phrase (a run of CJK characters, a piece of one), the term index holds.
    const common = (tokens: readonly string[], match: string): boolean => {
      if (!params.termIndex) return false;
      const stems = indexTerms(this.tokenizer, tokens.join(' '));
      const term = stems.length > 0 ? this.reader.term(stems.join(' ')) : undefined;
      if (!term || term.df === 0) return false;
      index.push({ id: term.id, match, df: term.df, idf: this.idf(term.df) });
      return true;
    };
    fts.terms.forEach((t, i) => {
      if (common(t.tokens, fts.phrases[i]!)) return;
      let match = fts.phrases[i]!;
      let df = this.df(match);
      if (df === 0 && t.prefix && params.prefixFallback) {
        match = phrase(t.tokens, true);
        df = this.df(match);
      }
      if (df > 0) byFts.push({ match, df, idf: this.idf(df) });
    });
    fts.pieces.forEach((p, i) => {
      if (common(fts.pieceTokens[i]!, p)) return;
      const df = this.df(p);
      if (df > 0) byFts.push({ match: p, df, idf: this.idf(df) });
    });
    return { index, fts: byFts };
  }

  rank(fts: FtsQuery, limit: number, scope: SearchScope, overrides: Partial<RankingParams> = {}): Ranked[] {
    return this.snapshot(() => this.rankInSnapshot(fts, limit, scope, { ...DEFAULT_RANKING, ...overrides }));
  }

  private rankInSnapshot(fts: FtsQuery, limit: number, scope: SearchScope, params: RankingParams): Ranked[] {
    this.freshStats();
    const terms = this.terms(fts, params);
    if (terms.index.length === 0 && terms.fts.length === 0) return [];
    const depth = Math.max(params.depth, limit);
    const rare = terms.index.length > 0 && params.rareFirst ? this.rankByRare(terms.index, terms.fts, depth, scope) : undefined;
    const stage1: Stage1 =
      terms.index.length === 0
        ? { top: this.rankByFts(terms.fts, depth, scope) }
        : rare ? { top: rare } : this.rankWithIndex(terms.index, terms.fts, depth, scope, params);
    return this.signals(stage1.top, limit, params, (ids) => this.wordsOf(ids, terms, stage1.commonWords));
  }

  /**
   * The query words each of `ids` holds (see `QueryWords`). Common words come from stage 1 when it
   * read their postings; else (rankByRare's top, every message of which holds a rarer word) FTS5 is
   * asked for each within the rarer words' matches, so no common word's postings are walked. Each
   * rarer word is asked once, among these ids: FTS5 walks its matches without scoring them (~0.1 µs
   * a match, where bm25() costs ~1 µs), and they are fewer than the common threshold.
   */
  private wordsOf(ids: number[], terms: { index: IndexTerm[]; fts: FtsTerm[] }, commonWords: Map<number, number> | undefined): QueryWords {
    const held = new Map(ids.map((id) => [id, commonWords?.get(id) ?? 0]));
    const json = JSON.stringify(ids);
    const mark = (match: string, bit: number): void => {
      for (const id of this.holding.all(match, json)) held.set(id, held.get(id)! | bit);
    };
    const all = [...terms.index, ...terms.fts].slice(0, WORD_BITS);
    const rare = orOf(terms.fts.map((t) => t.match));
    all.forEach((t, i) => {
      if (i >= terms.index.length) mark(t.match, 1 << i);
      else if (!commonWords) mark(`(${rare}) AND (${t.match})`, 1 << i);
    });
    return new QueryWords(
      all.map((t) => t.idf),
      held,
    );
  }

  /**
   * Stage 1 with common words, when the rarer words decide alone: if the `depth`th best score on
   * the rarer words only is above the most the common words can give a message (the sum of their
   * ceilings, idf × (k1 + 1)), no message without a rarer word can enter the top, and the top is
   * the rarer words' matches scored on every word by FTS5 (rankByFts's first try). No posting of
   * a common word is read: a question's rare words often decide (measured on the recall bench's
   * questions at 10x: rankWithIndex alone was slower for them than FTS5 with this bound).
   * Undefined when the bound does not hold.
   */
  private rankByRare(index: IndexTerm[], byFts: FtsTerm[], depth: number, scope: SearchScope): Array<[number, number]> | undefined {
    if (matchesOf(byFts) < depth) return undefined;
    const ceiling = ceilingOf(index);
    const stmt = this.scoreStmt(isScoped(scope), true);
    const rareMatch = orOf(byFts.map((t) => t.match));
    const rare = stmt.all({ ...scope, match: rareMatch, depth });
    // Rare-only scores are each message's least score: the bound holds for the full scores too.
    if (rare.length < depth || -Math.max(...rare.map((r) => r.bm25)) <= ceiling) return undefined;
    const scores = new Map(rare.map((r) => [r.id, -r.bm25]));
    for (const row of stmt.all({ ...scope, match: `(${rareMatch}) AND (${orOf(index.map((t) => t.match))})`, depth })) scores.set(row.id, -row.bm25);
    return [...scores].sort((a, b) => b[1] - a[1] || b[0] - a[0]).slice(0, depth);
  }

  /**
   * Stage 1 with common words: their scores from the term index, every posting, plus FTS5's for
   * the other terms, exact (see the class comment).
   */
  private rankWithIndex(index: IndexTerm[], byFts: FtsTerm[], depth: number, scope: SearchScope, { wholeFtsRows, ftsPartRows: partRows }: RankingParams): Stage1 {
    let allowed: Set<number> | undefined;
    if (isScoped(scope)) {
      const list = this.scopeIds.get(scope);
      allowed = new Set(list ? list.split(',').map(Number) : []);
    }
    const ftsScores = (all: boolean): { rows: ScoredRow[]; last: number } => {
      if (byFts.length === 0) return { rows: [], last: 0 };
      const stmt = this.scoreStmt(isScoped(scope), !all);
      const rows = stmt.all({ ...scope, match: orOf(byFts.map((t) => t.match)), depth: partRows });
      // Fetched whole when fewer came back than asked; else a row left out scores at most the last.
      const last = !all && rows.length === partRows ? -Math.max(...rows.map((r) => r.bm25)) : 0;
      return { rows, last };
    };
    // Each term's idf × (k1 + 1), by term id: an array, since the loop over every posting reads it (a
    // Map lookup there cost more than the scoring). One word asked twice ("test tests") counts twice,
    // as in FTS5's bm25 over both phrases.
    const weight: number[] = [];
    for (const t of index) weight[t.id] = (weight[t.id] ?? 0) + maxScore(t);
    // Each term id's bits (QueryWords), recorded as the postings go by: the cover signal needs no second read.
    const bits = bitsById(index);
    const termIds = [...new Set(index.map((t) => t.id))];
    const combine = (fetched: { rows: ScoredRow[]; last: number }): { top: TopK; bestCommon: number } => {
      const extra = new Map<number, number>();
      for (const row of fetched.rows) extra.set(row.id, -row.bm25);
      const kb = K1 * (1 - B);
      const kd = (K1 * B) / Math.max(1e-9, this.totals.tokens / Math.max(1, this.totals.rows));
      const top = new TopK(depth);
      let bestCommon = 0;
      // A chunk's scores in a typed array: its postings arrive chunk by chunk (term-index.ts).
      const acc = this.acc;
      const touched = this.touched;
      const words = this.wordAcc;
      let n = 0;
      let base = 0;
      this.reader.scan(
        termIds,
        (termId, id, tf) => {
          const off = id % POSTING_CHUNK;
          if (acc[off] === 0) {
            touched[n++] = off;
            base = id - off;
          }
          acc[off] = acc[off]! + (weight[termId]! * tf) / (tf + kb + kd * this.reader.lengthOf(id));
          words[off] = words[off]! | bits[termId]!;
        },
        () => {
          for (let i = 0; i < n; i++) {
            const off = touched[i]!;
            const common = acc[off]!;
            const held = words[off]!;
            acc[off] = 0;
            words[off] = 0;
            const id = base + off;
            if (allowed && !allowed.has(id)) continue;
            if (common > bestCommon) bestCommon = common;
            const rare = extra.get(id);
            if (rare !== undefined) extra.delete(id);
            top.push(common + (rare ?? 0), id, held);
          }
          n = 0;
        },
      );
      for (const [id, rare] of extra) top.push(rare, id, 0);
      return { top, bestCommon };
    };
    // Every row at once while they are few: FTS5 scores every match even to return its best few, so
    // a first part that could not prove the top cost that scoring again ("query schema" on the 1x
    // bench store, `schema` in 7,908 messages: 30.7 ms median, 19.6 ms fetching every row at once).
    let fetched = ftsScores(matchesOf(byFts) <= wholeFtsRows);
    const first = combine(fetched);
    const bestCommon = first.bestCommon;
    let top = first.top;
    if (fetched.last > 0 && top.floor <= fetched.last + bestCommon) {
      fetched = ftsScores(true);
      top = combine(fetched).top;
    }
    return { top: top.sorted(), commonWords: top.wordsById() };
  }

  /**
   * Stage 1 without common words: FTS5's bm25 over every match, pruned by a bound (rare terms
   * first). Messages that hold a rare term are scored exactly, on every term; one holding only the
   * common terms can score at most the sum of their ceilings (idf × (k1 + 1)), so once the `depth`th
   * best score is above that sum, none of them needs scoring.
   */
  private rankByFts(unsorted: FtsTerm[], depth: number, scope: SearchScope): Array<[number, number]> {
    const terms = [...unsorted].sort((a, b) => a.df - b.df);
    const stmt = this.scoreStmt(isScoped(scope), true);
    // SQLite keeps only the best `depth` rows of each query (a bounded sort): every match is scored,
    // none is carried into JavaScript but the top.
    const run = (match: string): ScoredRow[] => stmt.all({ ...scope, match, depth });
    // Each try scores every match of its rare terms, so only two are made: the terms that are not
    // common (each in at most COMMON_SHARE of the messages), then, if the bound does not hold,
    // every term. A query of common terms only is scored whole at once.
    const allRows = matchesOf(terms);
    const uncommon = terms.filter((t) => t.df <= COMMON_SHARE * this.totals.rows).length;
    const tries = allRows <= SCORE_ALL_ROWS || uncommon === 0 || uncommon === terms.length ? [terms.length] : [uncommon, terms.length];
    let scores = new Map<number, number>();
    for (const r of tries) {
      const rare = terms.slice(0, r);
      const common = terms.slice(r);
      scores = new Map();
      const rareMatch = orOf(rare.map((t) => t.match));
      // Scored on the rare terms only: exact for the messages that hold no common term.
      for (const row of run(rareMatch)) scores.set(row.id, -row.bm25);
      if (common.length === 0) break;
      // The messages that also hold a common term, scored on every term (bm25 of `(rare) AND
      // (common)` sums all phrases). The two tops together hold the top of the whole.
      for (const row of run(`(${rareMatch}) AND (${orOf(common.map((t) => t.match))})`)) scores.set(row.id, -row.bm25);
      const ceiling = ceilingOf(common);
      if (scores.size >= depth && kthLargest([...scores.values()], depth) > ceiling) break;
    }
    return [...scores].sort((a, b) => b[1] - a[1] || b[0] - a[0]).slice(0, depth);
  }

  /** Stage 2: signals on the top of the exact BM25 ranking. */
  private signals(top: Array<[number, number]>, limit: number, params: RankingParams, wordsOf: (ids: number[]) => QueryWords): Ranked[] {
    const scores = new Map(top);
    const maxWeight = Math.max(params.user, params.assistant, params.tool);
    const wanted = new Set<number>();
    for (const [id] of top) {
      wanted.add(id);
      if (params.turn > 0) wanted.add(id - 1);
      if (params.reply > 0) wanted.add(id + 1);
    }
    const meta = new Map(this.metaStmt.all(JSON.stringify([...wanted])).map((m) => [m.id, m]));
    const weight = (role: string | undefined): number => (role === 'user' ? params.user : role === 'tool' ? params.tool : params.assistant);
    const neighbour = (id: number, other: number): number => {
      const a = meta.get(id);
      const b = meta.get(other);
      if (!a || !b || a.conversation_id !== b.conversation_id) return 0;
      return (scores.get(other) ?? 0) * weight(b.role);
    };
    const lengths = new Map(top.map(([id]) => [id, this.reader.lengthOf(id)]));
    const meanLength = Math.max(1, [...lengths.values()].reduce((a, b) => a + b, 0) / Math.max(1, lengths.size));
    const best = new Map<string, number[]>();
    if (params.conversation > 0) {
      for (const [id, bm25] of top) {
        const c = meta.get(id)?.conversation_id;
        if (c !== undefined) best.set(c, [...(best.get(c) ?? []), bm25].sort((a, b) => b - a).slice(0, 2));
      }
    }
    // The cover signal: only messages that share their conversation with another top one need their words.
    const members = new Map<string, number[]>();
    if (params.cover > 0) {
      for (const [id] of top) {
        const c = meta.get(id)?.conversation_id;
        if (c === undefined) continue;
        const list = members.get(c);
        if (list) list.push(id);
        else members.set(c, [id]);
      }
    }
    const shared = [...members.values()].filter((ids) => ids.length > 1).flat();
    const words = shared.length > 0 ? wordsOf(shared) : undefined;
    const cover = (id: number, conversation: string): number => {
      const mine = words!.of(id);
      let most = 0;
      for (const other of members.get(conversation)!) {
        if (other === id) continue;
        const theirs = words!.of(other);
        const held = words!.weight(theirs);
        if (held > 0) most = Math.max(most, (scores.get(other)! * words!.weight(theirs & ~mine)) / held);
      }
      return most;
    };
    const ranked = top.map(([id, bm25]) => {
      const m = meta.get(id);
      let score = bm25 * weight(m?.role);
      if (params.turn > 0) score += params.turn * neighbour(id, id - 1);
      if (params.reply > 0) score += params.reply * neighbour(id, id + 1);
      if (params.length > 0) score /= Math.max(0.25, lengths.get(id)! / meanLength) ** params.length;
      if (params.conversation > 0 && m) {
        const [first = 0, second = 0] = best.get(m.conversation_id) ?? [];
        score += params.conversation * (first === bm25 ? second : first);
      }
      if (words && m && members.get(m.conversation_id)!.length > 1) score += params.cover * cover(id, m.conversation_id);
      return { id, score: score / maxWeight };
    });
    return ranked.sort((a, b) => b.score - a.score || b.id - a.id).slice(0, limit);
  }
}

/** Each common word's bits in QueryWords, by term id (a word asked twice has both its terms' bits). */
function bitsById(index: readonly IndexTerm[]): number[] {
  const bits: number[] = [];
  index.forEach((t, i) => {
    bits[t.id] = (bits[t.id] ?? 0) | (i < WORD_BITS ? 1 << i : 0);
  });
  return bits;
}

/** The matches of these terms, summed (a message holding two counts twice): what FTS5 scores for them. */
function matchesOf(terms: readonly { df: number }[]): number {
  return terms.reduce((sum, t) => sum + t.df, 0);
}

/** The most one term adds to a message's BM25 score, however often the message holds it: idf × (k1 + 1). */
function maxScore(term: { idf: number }): number {
  return term.idf * (K1 + 1);
}

/** The most these terms together add to any message's score: the bound both early stops test against. */
function ceilingOf(terms: readonly { idf: number }[]): number {
  return terms.reduce((sum, t) => sum + maxScore(t), 0);
}

function kthLargest(values: number[], k: number): number {
  values.sort((a, b) => b - a);
  return values[k - 1] ?? -Infinity;
}
