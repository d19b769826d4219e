import type Database from 'better-sqlite3';
import { PROJECT_FILTER, type ProjectParams } from './conversation-list.js';
import { phrase, type FtsQuery } from './fts-text.js';

/**
 * How a search ranks messages, in two stages.
 *
 * 1. **BM25 over every match.** Each term is looked up on its own (its document frequency), rarest
 *    first. Messages that hold a rare term are scored exactly, on every term of the query, by FTS5's
 *    bm25; a message holding only the common terms can score at most the sum of their BM25 ceilings
 *    (idf × (k1 + 1)), so once the `DEPTH`th best score is above that sum, no such message can enter
 *    the top and none of them needs scoring. When it is not, the next term joins the scored set,
 *    down to scoring every match of every term. No match is ever left out by age or count: the old
 *    "newest 10,000 matches" cap is gone; what bounds the work is the query's selectivity.
 * 2. **Signals on the top `DEPTH`**, each chosen by measurement on the recall bench (bench/recall):
 *    the message's role (what the user and the assistant wrote against tool output), its turn (the
 *    score of the message just before it in its conversation: the question an answer answers, or the
 *    call a tool result belongs to, and of the one just after it).
 */

/**
 * Below this many matching rows (summed over the terms) every match is scored in one query: the
 * pruning's extra queries would cost more than they save.
 */
const SCORE_ALL_ROWS = 20_000;

/** A term in more than this share of all messages counts as common (see stage 1). */
const COMMON_SHARE = 0.02;

/** FTS5's bm25 constants (k1 = 1.2, b = 0.75): the ceiling of one term is idf × (k1 + 1). */
const K1 = 1.2;

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
  /** A term matches longer words by its opening only when it is no word of its own in the store. */
  prefixFallback: boolean;
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
  prefixFallback: true,
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
  /** FTS5's per-row token count (a varint per column; one column here). */
  sz: Buffer | null;
}

function tokensOf(sz: Buffer | null): number {
  if (!sz) return 0;
  let n = 0;
  for (let i = 0, shift = 0; i < sz.length; i++, shift += 7) {
    n += (sz[i]! & 0x7f) * 2 ** shift;
    if ((sz[i]! & 0x80) === 0) break;
  }
  return n;
}

interface Term {
  /** The FTS5 phrase (or `(a OR b)` group) this term is matched by. */
  match: string;
  df: number;
  idf: number;
}

function orOf(matches: string[]): string {
  return matches.length === 1 ? matches[0]! : matches.map((m) => `(${m})`).join(' OR ');
}

export class MessageRanker {
  private readonly count;
  private readonly total;
  private readonly metaStmt;
  private readonly version: () => string;
  private dfCache = new Map<string, number>();
  private cacheVersion = '';
  private totalRows = 0;
  private readonly scoreStmts = new Map<string, Database.Statement<Record<string, unknown>, ScoredRow>>();

  constructor(private readonly db: Database.Database) {
    this.count = db.prepare<[string], number>('SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?').pluck();
    this.total = db.prepare<[], number>('SELECT count(*) FROM messages').pluck();
    this.metaStmt = db.prepare<[string], MetaRow>(
      `SELECT m.id, m.role, m.conversation_id, d.sz FROM messages m LEFT JOIN messages_fts_docsize d ON d.id = m.id
       WHERE m.id IN (SELECT value FROM json_each(?))`,
    );
    // data_version moves when another connection commits; total_changes when this one writes.
    const changes = db.prepare<[], number>('SELECT total_changes()').pluck();
    this.version = () => `${String(db.pragma('data_version', { simple: true }))}:${changes.get() ?? 0}`;
  }

  /** Document frequencies and the row count, kept while the database is unchanged. */
  private freshStats(): void {
    const version = this.version();
    if (version === this.cacheVersion) return;
    this.cacheVersion = version;
    this.dfCache = new Map();
    this.totalRows = this.total.get() ?? 0;
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
    // FTS5's own formula, so the bound below is in the units bm25() returns.
    const idf = Math.log((this.totalRows - df + 0.5) / (df + 0.5));
    return idf <= 0 ? 1e-6 : idf;
  }

  private scoreStmt(projectFiltered: boolean): Database.Statement<Record<string, unknown>, ScoredRow> {
    const key = projectFiltered ? 'project' : 'all';
    let stmt = this.scoreStmts.get(key);
    if (!stmt) {
      stmt = projectFiltered
        ? this.db.prepare<Record<string, unknown>, ScoredRow>(
            `SELECT messages_fts.rowid AS id, bm25(messages_fts) AS bm25
             FROM messages_fts
             JOIN messages m ON m.id = messages_fts.rowid
             JOIN conversations c ON c.conversation_id = m.conversation_id
             WHERE messages_fts MATCH @match AND ${PROJECT_FILTER}
             ORDER BY bm25 LIMIT @depth`,
          )
        : this.db.prepare<Record<string, unknown>, ScoredRow>(
            'SELECT rowid AS id, bm25(messages_fts) AS bm25 FROM messages_fts WHERE messages_fts MATCH @match ORDER BY bm25 LIMIT @depth',
          );
      this.scoreStmts.set(key, stmt);
    }
    return stmt;
  }

  /** The query's terms as matched: a word by its stem, or by its opening when it is no word of its own here. */
  private terms(fts: FtsQuery, params: RankingParams): Term[] {
    const terms: Term[] = [];
    fts.terms.forEach((t, i) => {
      let match = fts.phrases[i]!;
      let df = this.df(match);
      if (df === 0 && t.prefix && params.prefixFallback) {
        match = phrase(t.tokens, true);
        df = this.df(match);
      }
      if (df > 0) terms.push({ match, df, idf: this.idf(df) });
    });
    for (const p of fts.pieces) {
      const df = this.df(p);
      if (df > 0) terms.push({ match: p, df, idf: this.idf(df) });
    }
    return terms;
  }

  rank(fts: FtsQuery, limit: number, project: ProjectParams, overrides: Partial<RankingParams> = {}): Ranked[] {
    const params = { ...DEFAULT_RANKING, ...overrides };
    this.freshStats();
    const terms = this.terms(fts, params).sort((a, b) => a.df - b.df);
    if (terms.length === 0) return [];
    const depth = Math.max(params.depth, limit);
    const filtered = project.project !== null;
    const stmt = this.scoreStmt(filtered);
    // SQLite keeps only the best `depth` rows of each query (a bounded sort): every match is scored,
    // none is carried into JavaScript but the top.
    const run = (match: string): ScoredRow[] => stmt.all({ ...project, match, depth });
    const maxWeight = Math.max(params.user, params.assistant, params.tool);

    // Stage 1: the smallest set of rarest terms whose matches provably hold BM25's top `depth`.
    // Few matches in all are scored at once; otherwise the rare set starts as the fewest terms
    // that can fill `depth`, and grows until the bound holds.
    // Each try scores every match of its rare terms, so only two are made: the terms that are not
    // common (each in at most COMMON_SHARE of the messages), then, if the bound does not hold,
    // every term. A query of common terms only is scored whole at once.
    const allRows = terms.reduce((sum, t) => sum + t.df, 0);
    const uncommon = terms.filter((t) => t.df <= COMMON_SHARE * this.totalRows).length;
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
      // (common)` sums all phrases). The two tops together hold the top of the whole: a message
      // of the second kind is ranked by its full score, one of the first by its rare-term score.
      for (const row of run(`(${rareMatch}) AND (${orOf(common.map((t) => t.match))})`)) scores.set(row.id, -row.bm25);
      const ceiling = common.reduce((sum, t) => sum + t.idf * (K1 + 1), 0);
      if (scores.size >= depth && kthLargest([...scores.values()], depth) > ceiling) break;
    }

    // Stage 2: signals on the top of the exact BM25 ranking.
    const top = [...scores].sort((a, b) => b[1] - a[1] || b[0] - a[0]).slice(0, depth);
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
    const lengths = new Map(top.map(([id]) => [id, tokensOf(meta.get(id)?.sz ?? null)]));
    const meanLength = Math.max(1, [...lengths.values()].reduce((a, b) => a + b, 0) / Math.max(1, lengths.size));
    const best = new Map<string, number[]>();
    if (params.conversation > 0) {
      for (const [id, bm25] of top) {
        const c = meta.get(id)?.conversation_id;
        if (c !== undefined) best.set(c, [...(best.get(c) ?? []), bm25].sort((a, b) => b - a).slice(0, 2));
      }
    }
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
      return { id, score: score / maxWeight };
    });
    return ranked.sort((a, b) => b.score - a.score || b.id - a.id).slice(0, limit);
  }
}

function kthLargest(values: number[], k: number): number {
  values.sort((a, b) => b - a);
  return values[k - 1] ?? -Infinity;
}
