import Database from 'better-sqlite3';
import { gunzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { porterStem } from '../src/store/fts-porter.js';
import { indexTerms, Unicode61 } from '../src/store/fts-tokenizer.js';
import { toFtsText } from '../src/store/fts-text.js';
import { mulberry32 } from '../bench/prng.js';

/**
 * The JavaScript twin of the index's tokenizer must cut and stem exactly as FTS5 does: the term
 * index's scores are exact only if its counts are FTS5's. FTS5 itself is the reference here.
 */

/** FTS5's terms for each text, in order (rowid i+1 is texts[i]). */
function fts5Terms(texts: readonly string[]): string[][] {
  const db = new Database(':memory:');
  try {
    db.exec(`CREATE VIRTUAL TABLE f USING fts5 (t, content = '', tokenize = 'porter unicode61 remove_diacritics 2');
             CREATE VIRTUAL TABLE temp.fi USING fts5vocab (main, f, instance);`);
    const insert = db.prepare<[number, string]>('INSERT INTO f (rowid, t) VALUES (?, ?)');
    db.transaction(() => texts.forEach((t, i) => insert.run(i + 1, t)))();
    const out = texts.map((): string[] => []);
    for (const [doc, term, offset] of db.prepare<[], [number, string, number]>('SELECT doc, term, offset FROM fi').raw().all()) out[doc - 1]![offset] = term;
    return out;
  } finally {
    db.close();
  }
}

const tokenizer = new Unicode61();
afterAll(() => tokenizer.close());

describe('porter, as FTS5 stems', () => {
  it('stems 100,000 generated words and every word of the recall fixture as FTS5 does', () => {
    const rand = mulberry32(7);
    // Pieces that exercise every rule, the y rules and doubled consonants (where the `stemmer`
    // package and FTS5 disagree: "yying", "byyed").
    const parts = ('a e i o u y b c d l s t z ll ss ies sses eed ed ing ational tional enci anci izer bli alli entli eli ousli ization ' +
      'ation ator alism iveness fulness ousness aliti iviti biliti logi icate ative alize iciti ical ful ness al ance ence er ic able ' +
      'ible ant ement ment ent sion tion ou ism ate iti ous ive ize w x 0 9 yy ay oy at bl iz').split(' ');
    const words = new Set<string>();
    while (words.size < 100_000) {
      let w = '';
      for (let n = 1 + Math.floor(rand() * 5); n > 0; n--) w += parts[Math.floor(rand() * parts.length)];
      words.add(w);
    }
    const fixture = JSON.parse(gunzipSync(readFileSync(path.join(import.meta.dirname, '..', 'bench', 'recall', 'longmemeval-oracle.json.gz'))).toString('utf8')) as {
      sessions: Array<{ turns: Array<[string, string]> }>;
    };
    for (const s of fixture.sessions) for (const [, text] of s.turns) for (const w of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) words.add(w);
    const list = [...words];
    const expected = fts5Terms(list);
    const buf = new Uint8Array(128);
    const differ = list.filter((w, i) => {
      const bytes = Buffer.from(w);
      buf.set(bytes);
      return Buffer.from(buf.subarray(0, porterStem(buf, bytes.length))).toString() !== expected[i]![0];
    });
    expect(differ).toEqual([]);
    expect(list.length).toBeGreaterThan(130_000);
  });
});

describe('unicode61 + porter tokens, as FTS5 cuts them', () => {
  it('cuts text in any script, with diacritics, symbols, CJK and odd characters, into the terms FTS5 stores', () => {
    const samples = [
      'The Quick brown foxes JUMPED over 3 lazy dogs; running, runs, ran.',
      'café Über naïve résumé façade Ångström ﬁne ǅemal Straße İstanbul ΣΊΣΥΦΟΣ ſtop',
      "e\u0301cole cafe\u0301s \u0301leading dia\u0308eresis a\u20dd",
      toFtsText('优先级很高的payload优先处理，テストのキャッシュ設定、데이터베이스 설정 🎉 done ✔️'),
      'box ─┼─ arrows → ⇒ bullets • math ∑ ≠ emoji 👍🏽 flags 🇫🇷 ① ❶ ½ ² Ⅻ',
      'snake_case camelCase kebab-case dotted.name path/to/file.ts v2.4.0 0xDEADBEEF 1e-9 $HOME',
      'Привет мир, как дела? Ελληνικά γράμματα. עברית שלום. العربية مرحبا. हिन्दी नमस्ते. ไทย',
      `${'x'.repeat(70)} ${'abc'.repeat(30)}s ${'é'.repeat(40)}`,
      '\u0000nul\u0001ctl\u200bzero\u200dwidth\ufeffbom\ufffdrepl \ud83d lone',
      '',
    ];
    const rand = mulberry32(11);
    // Random strings over a mix of ranges: every block the tokenizer has to learn from FTS5.
    const ranges: Array<[number, number]> = [[0x20, 0x7e], [0xa0, 0x24f], [0x300, 0x36f], [0x370, 0x52f], [0x2000, 0x2bff], [0x3000, 0x30ff], [0x4e00, 0x4fff], [0xac00, 0xac80], [0xff00, 0xffef], [0x1f300, 0x1f6ff], [0x10000, 0x1007f]];
    for (let k = 0; k < 300; k++) {
      let s = '';
      for (let n = 5 + Math.floor(rand() * 60); n > 0; n--) {
        const [lo, hi] = ranges[Math.floor(rand() * ranges.length)]!;
        const cp = lo + Math.floor(rand() * (hi - lo + 1));
        s += rand() < 0.15 ? ' ' : String.fromCodePoint(cp);
      }
      samples.push(s);
    }
    const expected = fts5Terms(samples);
    samples.forEach((text, i) => expect(indexTerms(tokenizer, text), JSON.stringify(text)).toEqual(expected[i]));
  });
});
