/**
 * SQLite FTS5's porter stemmer (`fts5_porter.c`, public domain), step for step, on a token's bytes.
 *
 * The term index (`term-index.ts`) counts the words of every message the way FTS5 indexed them, so
 * its scores equal FTS5's bm25() to the bit. That needs FTS5's own stemmer: the `stemmer` package
 * (used for snippets) is Porter too but differs from it on rare inputs (`yying`, `byyed`: FTS5 makes
 * `y` a vowel after a consonant `y`), and one different stem would make a score wrong. Tested
 * against FTS5 itself on real and generated words (test/fts-tokenizer.test.ts).
 *
 * Works in place on `buf[0..n)` (UTF-8 bytes, already case-folded by unicode61) and returns the new
 * length; `buf` needs 2 bytes of room past `n` (step 1b may append an `e`).
 */

/** Tokens longer than this (in bytes) pass through unstemmed, as in FTS5. */
export const PORTER_MAX_TOKEN = 64;

const A = 97;
const E = 101;
const I = 105;
const L = 108;
const O = 111;
const S = 115;
const T = 116;
const U = 117;
const W = 119;
const X = 120;
const Y = 121;
const Z = 122;

function isVowel(c: number, yIsVowel: boolean): boolean {
  return c === A || c === E || c === I || c === O || c === U || (yIsVowel && c === Y);
}

/** One vowel-consonant sequence from `from`: the index after it (relative to `from`), or 0. */
function gobbleVC(buf: Uint8Array, from: number, n: number, prevCons: boolean): number {
  let cons = prevCons;
  let i = 0;
  for (; i < n; i++) {
    cons = !isVowel(buf[from + i]!, cons);
    if (!cons) break;
  }
  for (i++; i < n; i++) {
    cons = !isVowel(buf[from + i]!, cons);
    if (cons) return i + 1;
  }
  return 0;
}

/** (m > 0) */
function mGt0(buf: Uint8Array, n: number): boolean {
  return gobbleVC(buf, 0, n, false) !== 0;
}

/** (m > 1) */
function mGt1(buf: Uint8Array, n: number): boolean {
  const k = gobbleVC(buf, 0, n, false);
  return k !== 0 && gobbleVC(buf, k, n - k, true) !== 0;
}

/** (m = 1) */
function mEq1(buf: Uint8Array, n: number): boolean {
  const k = gobbleVC(buf, 0, n, false);
  return k !== 0 && gobbleVC(buf, k, n - k, true) === 0;
}

/** (*o): ends consonant-vowel-consonant, the last not w, x or y. */
function oStar(buf: Uint8Array, n: number): boolean {
  const last = buf[n - 1];
  if (last === W || last === X || last === Y) return false;
  let mask = 0;
  let cons = false;
  for (let i = 0; i < n; i++) {
    cons = !isVowel(buf[i]!, cons);
    mask = ((mask << 1) + (cons ? 1 : 0)) & 0xffff;
  }
  return (mask & 0x7) === 0x5;
}

/** (m > 1 and (*S or *T)) */
function mGt1AndSorT(buf: Uint8Array, n: number): boolean {
  return (buf[n - 1] === S || buf[n - 1] === T) && mGt1(buf, n);
}

/** (*v*) */
function hasVowel(buf: Uint8Array, n: number): boolean {
  for (let i = 0; i < n; i++) if (isVowel(buf[i]!, i > 0)) return true;
  return false;
}

type Condition = (buf: Uint8Array, n: number) => boolean;

/** A rule: when the word ends in `suffix` (and is longer than it), replace it if `cond` holds of the rest. */
interface Rule {
  suffix: Uint8Array;
  cond: Condition;
  to: Uint8Array;
}

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));
const rules = (list: Array<[string, Condition, string]>): Rule[] => list.map(([suffix, cond, to]) => ({ suffix: ascii(suffix), cond, to: ascii(to) }));

// The generated steps of fts5_porter.c, in its order: the first suffix that matches decides, whether
// or not its condition holds (C's `if … else if` chains; two suffixes of one step that both match
// share their last two letters, so they sit in the same `switch` case there).
const STEP2 = rules([
  ['ational', mGt0, 'ate'],
  ['tional', mGt0, 'tion'],
  ['enci', mGt0, 'ence'],
  ['anci', mGt0, 'ance'],
  ['izer', mGt0, 'ize'],
  ['logi', mGt0, 'log'],
  ['bli', mGt0, 'ble'],
  ['alli', mGt0, 'al'],
  ['entli', mGt0, 'ent'],
  ['eli', mGt0, 'e'],
  ['ousli', mGt0, 'ous'],
  ['ization', mGt0, 'ize'],
  ['ation', mGt0, 'ate'],
  ['ator', mGt0, 'ate'],
  ['alism', mGt0, 'al'],
  ['iveness', mGt0, 'ive'],
  ['fulness', mGt0, 'ful'],
  ['ousness', mGt0, 'ous'],
  ['aliti', mGt0, 'al'],
  ['iviti', mGt0, 'ive'],
  ['biliti', mGt0, 'ble'],
]);

const STEP3 = rules([
  ['ical', mGt0, 'ic'],
  ['ness', mGt0, ''],
  ['icate', mGt0, 'ic'],
  ['iciti', mGt0, 'ic'],
  ['ful', mGt0, ''],
  ['ative', mGt0, ''],
  ['alize', mGt0, 'al'],
]);

const STEP4 = rules([
  ['al', mGt1, ''],
  ['ance', mGt1, ''],
  ['ence', mGt1, ''],
  ['er', mGt1, ''],
  ['ic', mGt1, ''],
  ['able', mGt1, ''],
  ['ible', mGt1, ''],
  ['ant', mGt1, ''],
  ['ement', mGt1, ''],
  ['ment', mGt1, ''],
  ['ent', mGt1, ''],
  ['ion', mGt1AndSorT, ''],
  ['ou', mGt1, ''],
  ['ism', mGt1, ''],
  ['ate', mGt1, ''],
  ['iti', mGt1, ''],
  ['ous', mGt1, ''],
  ['ive', mGt1, ''],
  ['ize', mGt1, ''],
]);

function endsWith(buf: Uint8Array, n: number, suffix: Uint8Array): boolean {
  const k = suffix.length;
  if (n <= k) return false;
  for (let i = 0; i < k; i++) if (buf[n - k + i] !== suffix[i]) return false;
  return true;
}

function applyRules(buf: Uint8Array, n: number, list: readonly Rule[]): number {
  for (const rule of list) {
    if (!endsWith(buf, n, rule.suffix)) continue;
    const stem = n - rule.suffix.length;
    if (!rule.cond(buf, stem)) return n;
    buf.set(rule.to, stem);
    return stem + rule.to.length;
  }
  return n;
}

const EED = ascii('eed');
const ED = ascii('ed');
const ING = ascii('ing');
const STEP1B2 = [ascii('at'), ascii('bl'), ascii('iz')];

function step1A(buf: Uint8Array, n: number): number {
  if (buf[n - 1] !== S) return n;
  if (buf[n - 2] === E) {
    if ((n > 4 && buf[n - 4] === S && buf[n - 3] === S) || (n > 3 && buf[n - 3] === I)) return n - 2;
    return n - 1;
  }
  return buf[n - 2] !== S ? n - 1 : n;
}

/** Stems `buf[0..n)` in place; returns the stem's length. */
export function porterStem(buf: Uint8Array, n: number): number {
  if (n > PORTER_MAX_TOKEN || n < 3) return n;

  n = step1A(buf, n);

  // Step 1b.
  let stripped = false;
  if (endsWith(buf, n, EED)) {
    if (mGt0(buf, n - 3)) n -= 1;
  } else if (endsWith(buf, n, ED)) {
    if (hasVowel(buf, n - 2)) {
      n -= 2;
      stripped = true;
    }
  } else if (endsWith(buf, n, ING)) {
    if (hasVowel(buf, n - 3)) {
      n -= 3;
      stripped = true;
    }
  }
  if (stripped) {
    const grown = STEP1B2.find((suffix) => endsWith(buf, n, suffix));
    if (grown) {
      buf[n++] = E;
    } else {
      const c = buf[n - 1]!;
      if (!isVowel(c, false) && c !== L && c !== S && c !== Z && c === buf[n - 2]) {
        n--;
      } else if (mEq1(buf, n) && oStar(buf, n)) {
        buf[n++] = E;
      }
    }
  }

  // Step 1c.
  if (buf[n - 1] === Y && hasVowel(buf, n - 1)) buf[n - 1] = I;

  n = applyRules(buf, n, STEP2);
  n = applyRules(buf, n, STEP3);
  n = applyRules(buf, n, STEP4);

  // Step 5a.
  if (buf[n - 1] === E && (mGt1(buf, n - 1) || (mEq1(buf, n - 1) && !oStar(buf, n - 1)))) n--;

  // Step 5b.
  if (n > 1 && buf[n - 1] === L && buf[n - 2] === L && mGt1(buf, n - 1)) n--;

  return n;
}
