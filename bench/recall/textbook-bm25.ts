import Database from 'better-sqlite3';
import type { TurnRef } from './metrics.js';

/**
 * The baseline the issue names: SQLite FTS5 with the porter tokenizer, one row per turn, the
 * question's words minus English stopwords joined by OR, ranked by bm25. About thirty lines, on
 * purpose: it is the bar, not a competitor.
 */

/** NLTK's English stopword list (the usual "English stopwords"). */
export const ENGLISH_STOPWORDS = new Set(
  (
    "i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him his himself " +
    "she she's her hers herself it it's its itself they them their theirs themselves what which who whom this that that'll " +
    'these those am is are was were be been being have has had having do does did doing a an the and but if or because as ' +
    'until while of at by for with about against between into through during before after above below to from up down in ' +
    'out on off over under again further then once here there when where why how all any both each few more most other some ' +
    "such no nor not only own same so than too very s t can will just don don't should should've now d ll m o re ve y ain " +
    "aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't " +
    "mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't"
  ).split(' '),
);

export class TextbookBm25 {
  private readonly db = new Database(':memory:');
  private readonly refs: TurnRef[] = [];
  private readonly insert;

  constructor() {
    this.db.exec(`CREATE VIRTUAL TABLE turns USING fts5 (text, tokenize = 'porter')`);
    this.insert = this.db.prepare<[number, string]>('INSERT INTO turns (rowid, text) VALUES (?, ?)');
  }

  add(ref: TurnRef, text: string): void {
    this.refs.push(ref);
    this.insert.run(this.refs.length, text);
  }

  search(question: string, limit: number): TurnRef[] {
    const words = (question.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? []).filter((w) => !ENGLISH_STOPWORDS.has(w));
    const terms = [...new Set(words.map((w) => w.replace(/'/g, '')).filter((w) => w !== ''))];
    if (terms.length === 0) return [];
    const match = terms.map((t) => `"${t}"`).join(' OR ');
    const rows = this.db.prepare<[string, number], { rowid: number }>('SELECT rowid FROM turns WHERE turns MATCH ? ORDER BY bm25(turns) LIMIT ?').all(match, limit);
    return rows.map((r) => this.refs[r.rowid - 1]!);
  }

  close(): void {
    this.db.close();
  }
}
