import { ASCII_TOKEN, MAX_TOKEN_BYTES, stemInto, Unicode61 } from './fts-tokenizer.js';

/**
 * The term index's cut of one row (see term-index.ts): the row's tokens as FTS5 cuts them
 * (`fts-tokenizer.ts`), counted for the store's common terms and sampled for nomination. A cutter
 * is built from the common terms alone, and the writer builds a new one whenever they change.
 */

/**
 * A word is nominated for a check of whether it became common in about one row in this many
 * (2 ** NOMINATE_BITS) of the rows that hold it: every occurrence in a sampled row, none elsewhere.
 */
export const NOMINATE_BITS = 6;
/** Surface → word cache: slots, and the longest token it holds (longer ones are stemmed each time). */
const SLOTS = 1 << 16;
const SLOT_BYTES = 24;
/** Bits of the filter of the common words' stem hashes (see `vidOf`). */
const STEM_FILTER_BITS = 1 << 16;
/** Phrases of up to this many CJK characters can become common terms (longer ones stay with FTS5). */
const MAX_PHRASE = 6;
/**
 * Per byte: an ASCII token character folded (`| 0x20`, as unicode61 folds A–Z), or 0. One load a
 * byte in the cut's hottest loop, never out of bounds (a table of 128 read bytes of 0x80 and over).
 */
const FOLDED = new Uint8Array(256);
for (let c = 0; c < 128; c++) if (ASCII_TOKEN[c] === 1) FOLDED[c] = c | 0x20;

export class TermCutter {
  /** The stems common terms are made of → their id here, and each one's single-word term (or -1). */
  private readonly vocab = new Map<string, number>();
  private readonly singleOf: Int32Array;
  /** Phrases by the hash of their stems' ids (fnv1a), and each phrase term's stem ids. */
  private readonly phrases = new Map<number, number[]>();
  private readonly phraseVids: Array<number[] | undefined> = [];
  private readonly phraseLengths: number[];
  // Surface cache: a token's folded bytes → its stem's id in `vocab`, or -1.
  private readonly slotKeys = new Uint8Array(SLOTS * SLOT_BYTES);
  private readonly slotLens = new Int16Array(SLOTS).fill(-1);
  private readonly slotHash = new Int32Array(SLOTS);
  private readonly slotValue = new Int32Array(SLOTS);
  /** Scratch for a stem (see `stemmed`). */
  private stem = new Uint8Array(SLOT_BYTES + 64);
  private fold = new Uint8Array(256);
  /** The last MAX_PHRASE tokens of the current row: stem ids, and code points of CJK characters (else -1). */
  private readonly ringVid = new Int32Array(MAX_PHRASE);
  private readonly ringCp = new Int32Array(MAX_PHRASE);
  /** Bit h set when a common word's stem hashes to h (mod STEM_FILTER_BITS): most tokens are no common word. */
  private readonly stemFilter = new Uint32Array(STEM_FILTER_BITS / 32);

  /**
   * `terms`: the common terms (a stem, or the stems of a phrase joined by a space) in the order of
   * their ids; a term is counted by its index here. `tokenizer`: shared by the cutters of one
   * thread, which keeps what its oracle learnt.
   */
  constructor(
    terms: readonly string[],
    private readonly tokenizer: Unicode61,
  ) {
    const singles: Array<[number, number]> = [];
    const lengths = new Set<number>();
    const vidOf = (stem: string): number => {
      let vid = this.vocab.get(stem);
      if (vid === undefined) this.vocab.set(stem, (vid = this.vocab.size));
      return vid;
    };
    for (const [index, term] of terms.entries()) {
      const stems = term.split(' ');
      if (stems.length === 1) {
        singles.push([vidOf(term), index]);
        this.phraseVids.push(undefined);
        continue;
      }
      const vids = stems.map(vidOf);
      this.phraseVids.push(vids);
      lengths.add(vids.length);
      const hash = fnv1a(vids, 0, vids.length);
      this.phrases.set(hash, [...(this.phrases.get(hash) ?? []), index]);
    }
    this.phraseLengths = [...lengths].sort((a, b) => a - b);
    this.singleOf = new Int32Array(this.vocab.size).fill(-1);
    for (const [vid, index] of singles) this.singleOf[vid] = index;
    for (const stem of this.vocab.keys()) {
      const bytes = Buffer.from(stem, 'utf8');
      const h = fnv1a(bytes, 0, bytes.length) & (STEM_FILTER_BITS - 1);
      this.stemFilter[h >>> 5]! |= 1 << (h & 31);
    }
  }

  /** Stems the token `buf[0..len)` into `this.stem` (grown as needed); returns the stem's length. */
  private stemmed(buf: Uint8Array, len: number): number {
    if (this.stem.length < len + 2) this.stem = new Uint8Array(Math.max(len + 2, this.stem.length * 2));
    return stemInto(buf, len, this.stem);
  }

  private stemString(buf: Uint8Array, len: number): string {
    const n = this.stemmed(buf, len);
    return Buffer.from(this.stem.buffer, this.stem.byteOffset, n).toString('utf8');
  }

  /** The id in `vocab` of this token's stem, or -1 (through the surface cache). */
  private vidOf(buf: Uint8Array, len: number, hash: number): number {
    if (len > SLOT_BYTES) return this.stemVid(buf, len, hash);
    const slot = hash & (SLOTS - 1);
    if (this.slotLens[slot] === len && this.slotHash[slot] === (hash | 0) && sameBytes(this.slotKeys, slot * SLOT_BYTES, buf, len)) return this.slotValue[slot]!;
    const vid = this.stemVid(buf, len, hash);
    this.slotKeys.set(buf.subarray(0, len), slot * SLOT_BYTES);
    this.slotLens[slot] = len;
    this.slotHash[slot] = hash | 0;
    this.slotValue[slot] = vid;
    return vid;
  }

  /**
   * The id in `vocab` of this token's stem, or -1. On a large import a tenth of the tokens miss the
   * surface cache (numbers, hashes, ids: most seen once), so the miss is kept cheap: a token ending
   * in a digit is its own stem (every porter rule ends in a letter) and keeps the tokenizer's hash,
   * and a stem whose hash is not in the filter is no common word, with no string made for it.
   */
  private stemVid(buf: Uint8Array, len: number, hash: number): number {
    let stem = buf;
    let n = len;
    let h = hash;
    const last = buf[len - 1]!;
    if (!(last >= 48 && last <= 57 && len <= MAX_TOKEN_BYTES)) {
      n = this.stemmed(buf, len);
      stem = this.stem;
      h = fnv1a(stem, 0, n);
    }
    const bit = h & (STEM_FILTER_BITS - 1);
    if ((this.stemFilter[bit >>> 5]! & (1 << (bit & 31))) === 0) return -1;
    return this.vocab.get(Buffer.from(stem.buffer, stem.byteOffset, n).toString('utf8')) ?? -1;
  }

  /**
   * One row's tokens, as `Unicode61.tokenize` cuts them, counted for the common terms (`count`) and
   * sampled for nomination; returns the row's token count. Fused into one pass: an ASCII token
   * (most are) is hashed in place and copied only when it misses the surface cache, and only a
   * token with other characters goes through the tokenizer's general reader. Phrases and CJK runs
   * are looked for only where a CJK token stands.
   */
  cut(text: Uint8Array, id: number, count: (term: number) => void, nominate: (term: string) => void): number {
    const n = text.length;
    const { slotKeys, slotLens, slotHash, slotValue, ringVid, ringCp, tokenizer } = this;
    let pos = 0;
    let i = 0;
    for (;;) {
      while (i < n && FOLDED[text[i]!] === 0 && text[i]! < 0x80) i++;
      if (i < n && text[i]! >= 0x80) i = tokenizer.skip(text, i, n);
      if (i >= n) return pos;
      const start = i;
      let hash = 0x811c9dc5;
      let c = i < n ? FOLDED[text[i]!]! : 0;
      while (c !== 0) {
        hash = Math.imul(hash ^ c, 0x01000193);
        c = ++i < n ? FOLDED[text[i]!]! : 0;
      }
      let vid: number;
      let buf: Uint8Array | undefined;
      let len = i - start;
      const slot = hash & (SLOTS - 1);
      if (i < n && text[i]! >= 0x80) {
        // Other characters in (or starting) the token: the general reader, from the token's start.
        i = tokenizer.read(text, start, n);
        buf = tokenizer.token;
        len = tokenizer.length;
        hash = tokenizer.hash | 0;
        vid = this.vidOf(buf, len, hash >>> 0);
      } else if (len <= SLOT_BYTES && slotLens[slot] === len && slotHash[slot] === hash && sameFolded(slotKeys, slot * SLOT_BYTES, text, start, len)) {
        vid = slotValue[slot]!;
      } else {
        buf = this.folded(text, start, len);
        vid = this.vidOf(buf, len, hash >>> 0);
      }
      const at = pos % MAX_PHRASE;
      pos++;
      ringVid[at] = vid;
      const cjk = buf && buf === tokenizer.token ? singleCjk(buf, len) : -1;
      ringCp[at] = cjk;
      const single = vid >= 0 ? this.singleOf[vid]! : -1;
      if (single >= 0) count(single);
      else if (nominates(hash, id)) nominate(this.stemString(buf ?? this.folded(text, start, len), len));
      if (cjk < 0) continue;
      // Phrases ending here: common ones counted, runs of CJK characters nominated.
      for (const k of this.phraseLengths) {
        if (k > pos) break;
        const h = ringHash(ringVid, pos, k);
        if (h === undefined) continue;
        for (const term of this.phrases.get(h) ?? []) if (ringMatches(ringVid, pos, this.phraseVids[term]!)) count(term);
      }
      for (let k = 2; k <= MAX_PHRASE && k <= pos; k++) {
        const h = ringHash(ringCp, pos, k);
        if (h === undefined) break;
        if (nominates(h, id)) nominate(ringPhrase(ringCp, pos, k));
      }
    }
  }

  /** `text[start..start+len)` folded (ASCII token characters only), in a scratch buffer. */
  private folded(text: Uint8Array, start: number, len: number): Uint8Array {
    if (this.fold.length < len + 2) this.fold = new Uint8Array(Math.max(len + 2, this.fold.length * 2));
    const out = this.fold;
    for (let k = 0; k < len; k++) out[k] = text[start + k]! | 0x20;
    return out;
  }
}

/**
 * Whether one occurrence of a word (its hash) in row `id` nominates it: about one in
 * 2 ** NOMINATE_BITS, whichever rows the word stands in. The top bits of a multiplicative mix depend
 * on every bit of the row id; the low bits of `hash ^ id`, used before, depend on its low bits only,
 * so a word that stood in rows of one parity (a tool call every other row) was never nominated
 * when its hash had the other: on the 10x bench store 917 of the 1,896 words in 8,192 messages or
 * more (`grep` in 207,112) were never made common, and queries naming them were scored by FTS5.
 */
function nominates(hash: number, id: number): boolean {
  return Math.imul(hash ^ Math.imul(id, 0x9e3779b1), 0x85ebca6b) >>> (32 - NOMINATE_BITS) === 0;
}

/** Whether the cached key at `keys[at..]` is `text[start..start+len)` folded. */
function sameFolded(keys: Uint8Array, at: number, text: Uint8Array, start: number, len: number): boolean {
  for (let k = 0; k < len; k++) if (keys[at + k] !== (text[start + k]! | 0x20)) return false;
  return true;
}

function sameBytes(keys: Uint8Array, at: number, buf: Uint8Array, len: number): boolean {
  for (let i = 0; i < len; i++) if (keys[at + i] !== buf[i]) return false;
  return true;
}

/** FNV-1a over `values[from..to)`: a token's bytes (as the tokenizer hashes them), or a phrase's stem ids. */
function fnv1a(values: ArrayLike<number>, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < to; i++) h = Math.imul(h ^ values[i]!, 0x01000193);
  return h;
}

/** The hash of the last `n` ring entries before `pos` (undefined when one is -1: no term, no CJK). */
function ringHash(ring: Int32Array, pos: number, n: number): number | undefined {
  let h = 0x811c9dc5;
  for (let k = pos - n; k < pos; k++) {
    const v = ring[k % MAX_PHRASE]!;
    if (v < 0) return undefined;
    h = Math.imul(h ^ v, 0x01000193);
  }
  return h;
}

function ringMatches(ring: Int32Array, pos: number, vids: readonly number[]): boolean {
  const n = vids.length;
  for (let k = 0; k < n; k++) if (ring[(pos - n + k) % MAX_PHRASE] !== vids[k]) return false;
  return true;
}

function ringPhrase(ring: Int32Array, pos: number, n: number): string {
  const chars: string[] = [];
  for (let k = pos - n; k < pos; k++) chars.push(String.fromCodePoint(ring[k % MAX_PHRASE]!));
  return chars.join(' ');
}

/**
 * The code point of a token that is one character at or above U+1100 (a CJK character, which
 * toFtsText spaces into a token of its own), else -1.
 */
function singleCjk(buf: Uint8Array, len: number): number {
  if (len === 3 && buf[0]! >= 0xe1) return ((buf[0]! & 0x0f) << 12) | ((buf[1]! & 0x3f) << 6) | (buf[2]! & 0x3f);
  if (len === 4 && buf[0]! >= 0xf0) return ((buf[0]! & 0x07) << 18) | ((buf[1]! & 0x3f) << 12) | ((buf[2]! & 0x3f) << 6) | (buf[3]! & 0x3f);
  return -1;
}

