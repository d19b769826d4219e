import Database from 'better-sqlite3';
import { porterStem, PORTER_MAX_TOKEN } from './fts-porter.js';

/**
 * The index's tokenizer (`porter unicode61 remove_diacritics 2`) in JavaScript, token for token:
 * the term index (`term-index.ts`) counts each message's words and length exactly as FTS5 stored
 * them, so a score computed from its counts equals FTS5's bm25().
 *
 * ASCII is handled here (letters and digits are token characters, A–Z folds to a–z). For any other
 * character, whether it is a token character and what it folds to come from FTS5 itself: the first
 * time a character of a 256-character block is met, the block is tokenized by an in-memory FTS5
 * table with the same options, and the answers are kept. Nothing about Unicode is guessed here, so
 * a newer Unicode in Node than in SQLite cannot make the two disagree.
 */

/** FTS5 stores at most this many bytes of a token (FTS5_MAX_TOKEN_SIZE). */
export const MAX_TOKEN_BYTES = 32_768;

/** A token as folded by unicode61, before stemming: `buf[0..len)`, its FNV-1a hash. */
export type TokenSink = (buf: Uint8Array, len: number, hash: number) => void;

/** sqlite3Fts5UnicodeIsdiacritic: combining marks that continue a token (and fold away). */
function isDiacritic(c: number): boolean {
  if (c < 768 || c > 817) return false;
  return c < 800 ? (0x08029fdf & (1 << (c - 768))) !== 0 : (0x000361f8 & (1 << (c - 800))) !== 0;
}

/** 1 for the ASCII characters unicode61 keeps in tokens (letters and digits: each folds with `| 0x20`). */
export const ASCII_TOKEN = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  ASCII_TOKEN[c] = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) ? 1 : 0;
}

/** Per code point: bit 0 = a token character; bits 1+ = what it folds to (0: nothing). */
const TOKEN_CHAR = 1;
const BLOCK_BITS = 8;

/**
 * Asks FTS5 how unicode61 (remove_diacritics 2) treats each code point of a block: `a<c>a` shows what
 * `c` folds to inside a token, `c` alone whether it can start one.
 */
class FoldOracle {
  private readonly db = new Database(':memory:');
  private readonly insert;
  private readonly read;

  constructor() {
    this.db.exec(`
      CREATE VIRTUAL TABLE o USING fts5 (t, tokenize = 'unicode61 remove_diacritics 2');
      CREATE VIRTUAL TABLE temp.ov USING fts5vocab (main, o, instance);
    `);
    this.insert = this.db.prepare<[number, string]>('INSERT INTO o (rowid, t) VALUES (?, ?)');
    this.read = this.db.prepare<[], [number, string, number]>('SELECT doc, term, offset FROM ov').raw();
  }

  block(block: number): Int32Array {
    const base = block << BLOCK_BITS;
    const out = new Int32Array(1 << BLOCK_BITS);
    this.db.transaction(() => {
      this.db.exec('DELETE FROM o');
      for (let j = 0; j < out.length; j++) {
        const cp = base + j;
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) continue;
        const ch = String.fromCodePoint(cp);
        this.insert.run(2 * j + 1, `a${ch}a`);
        this.insert.run(2 * j + 2, ch);
      }
    })();
    const tokens = new Map<number, string[]>();
    for (const [doc, term, offset] of this.read.all()) {
      const list = tokens.get(doc) ?? [];
      list[offset] = term;
      tokens.set(doc, list);
    }
    for (let j = 0; j < out.length; j++) {
      const inner = tokens.get(2 * j + 1) ?? [];
      const alone = tokens.get(2 * j + 2) ?? [];
      // One token: the character continues a token (a token character, or a diacritic); two: a separator.
      if (inner.length !== 1) continue;
      const folded = inner[0]!.slice(1, -1);
      const cp = folded.length === 0 ? 0 : folded.codePointAt(0)!;
      if (folded.length > 0 && String.fromCodePoint(cp) !== folded) throw new Error(`unicode61 folds U+${(base + j).toString(16)} to more than one character`);
      out[j] = (cp << 1) | (alone.length > 0 ? TOKEN_CHAR : 0);
    }
    return out;
  }

  close(): void {
    this.db.close();
  }
}

export class Unicode61 {
  private readonly blocks = new Map<number, Int32Array>();
  private oracle: FoldOracle | undefined;
  private buf = new Uint8Array(256);

  /** How unicode61 treats code point `cp` (>= 0x80): see TOKEN_CHAR. */
  private classOf(cp: number): number {
    const block = cp >>> BLOCK_BITS;
    let table = this.blocks.get(block);
    if (!table) {
      this.oracle ??= new FoldOracle();
      table = this.oracle.block(block);
      this.blocks.set(block, table);
    }
    return table[cp & ((1 << BLOCK_BITS) - 1)]!;
  }

  /** Releases the oracle's in-memory database (the classes learnt stay). */
  close(): void {
    this.oracle?.close();
    this.oracle = undefined;
  }

  /**
   * Splits UTF-8 `text` into unicode61 tokens, calling `sink` with each (folded, unstemmed); returns
   * how many there were (FTS5's token count for the row).
   */
  tokenize(text: Uint8Array, sink: TokenSink): number {
    const n = text.length;
    let count = 0;
    let i = this.skip(text, 0, n);
    while (i < n) {
      i = this.read(text, i, n);
      count++;
      sink(this.buf, this.length, this.hash);
      i = this.skip(text, i, n);
    }
    return count;
  }

  /** The folded bytes of the token `read` last found: `token[0..length)`, and its FNV-1a hash. */
  get token(): Uint8Array {
    return this.buf;
  }

  length = 0;
  hash = 0;

  /** Where the next token at or after `i` starts (`n` when there is none): separators skipped. */
  skip(text: Uint8Array, i: number, n: number): number {
    while (i < n) {
      const b = text[i]!;
      if (b < 0x80) {
        if (ASCII_TOKEN[b]) return i;
        i++;
        continue;
      }
      const cp = readUtf8(text, i, n);
      if (this.classOf(cp) & TOKEN_CHAR) return i;
      i = readEnd;
    }
    return n;
  }

  /** Reads the token starting at `i` (where `skip` stopped): folds it into `token`, sets `length` and `hash`; returns where it ends. */
  read(text: Uint8Array, i: number, n: number): number {
    let len = 0;
    let hash = 0x811c9dc5;
    while (i < n) {
      if (len + 4 > this.buf.length) this.grow();
      const b = text[i]!;
      if (b < 0x80) {
        if (!ASCII_TOKEN[b]) break;
        const c = b | 0x20;
        this.buf[len++] = c;
        hash = Math.imul(hash ^ c, 0x01000193);
        i++;
        continue;
      }
      const cp = readUtf8(text, i, n);
      const cls = this.classOf(cp);
      if (!(cls & TOKEN_CHAR) && !isDiacritic(cp)) break;
      i = readEnd;
      const folded = cls >>> 1;
      if (folded !== 0) {
        const start = len;
        len = writeUtf8(this.buf, len, folded);
        for (let k = start; k < len; k++) hash = Math.imul(hash ^ this.buf[k]!, 0x01000193);
      }
    }
    this.length = len;
    this.hash = hash >>> 0;
    return i;
  }

  private grow(): void {
    const bigger = new Uint8Array(this.buf.length * 2);
    bigger.set(this.buf);
    this.buf = bigger;
  }
}

/** Where the last `readUtf8` stopped (a module-level out-parameter: no allocation per character). */
let readEnd = 0;

/** SQLite's READ_UTF8: decodes one character at `i`, sets `readEnd`. */
function readUtf8(text: Uint8Array, i: number, n: number): number {
  let c = text[i++]!;
  if (c >= 0xc0) {
    c = c < 0xe0 ? c & 0x1f : c < 0xf0 ? c & 0x0f : c < 0xf8 ? c & 0x07 : c < 0xfc ? c & 0x03 : c < 0xfe ? c & 0x01 : 0;
    while (i < n && (text[i]! & 0xc0) === 0x80) c = (c << 6) + (text[i++]! & 0x3f);
    if (c < 0x80 || (c & 0xfffff800) === 0xd800 || (c & 0xfffffffe) === 0xfffe) c = 0xfffd;
  }
  readEnd = i;
  return c;
}

function writeUtf8(buf: Uint8Array, at: number, c: number): number {
  if (c < 0x80) {
    buf[at++] = c;
  } else if (c < 0x800) {
    buf[at++] = 0xc0 | (c >> 6);
    buf[at++] = 0x80 | (c & 0x3f);
  } else if (c < 0x10000) {
    buf[at++] = 0xe0 | (c >> 12);
    buf[at++] = 0x80 | ((c >> 6) & 0x3f);
    buf[at++] = 0x80 | (c & 0x3f);
  } else {
    buf[at++] = 0xf0 | (c >> 18);
    buf[at++] = 0x80 | ((c >> 12) & 0x3f);
    buf[at++] = 0x80 | ((c >> 6) & 0x3f);
    buf[at++] = 0x80 | (c & 0x3f);
  }
  return at;
}

const stemScratch = new Uint8Array(PORTER_MAX_TOKEN + 8);

/**
 * A folded token as the index stores it: stemmed by porter, at most MAX_TOKEN_BYTES bytes. Returns
 * the stem's length in `out` (which needs room for the token plus 2 bytes).
 */
export function stemInto(token: Uint8Array, len: number, out: Uint8Array): number {
  if (len > PORTER_MAX_TOKEN || len < 3) {
    const kept = Math.min(len, MAX_TOKEN_BYTES);
    out.set(token.subarray(0, kept));
    return kept;
  }
  out.set(token.subarray(0, len));
  return porterStem(out, len);
}

/** The index's terms for `text`, in order: what FTS5 would store for it. For queries and tests. */
export function indexTerms(tokenizer: Unicode61, text: string): string[] {
  const terms: string[] = [];
  tokenizer.tokenize(Buffer.from(text, 'utf8'), (buf, len) => {
    const out = len + 2 <= stemScratch.length ? stemScratch : new Uint8Array(len + 2);
    const n = stemInto(buf, len, out);
    terms.push(Buffer.from(out.buffer, out.byteOffset, n).toString('utf8'));
  });
  return terms;
}
