/**
 * Text ⇄ FTS5 (unicode61) for a store that must find CJK substrings of any length.
 *
 * unicode61 reads a run of Han/Kana/Hangul as ONE token, so `优先` inside `优先级` is invisible to
 * it, and the trigram tokenizer cannot find 1–2 character substrings. Instead every CJK character
 * is spaced into its own token at index time, and a CJK query becomes a phrase of consecutive
 * single-character tokens: an exact substring match with BM25 ranking, on the stock tokenizer.
 */

/**
 * Code point ranges of scripts written without spaces between words: Hangul Jamo, CJK radicals
 * through Unified Ideographs (with CJK punctuation, Kana, Bopomofo and Ext A on the way), Hangul
 * syllables, compatibility ideographs, halfwidth Kana/Hangul, Kana supplements, Ext B and beyond.
 * One table drives both the indexer and the query side, so they can never disagree.
 */
const CJK_RANGES: ReadonlyArray<readonly [number, number]> = [
  [0x1100, 0x11ff],
  [0x2e80, 0x9fff],
  [0xa960, 0xa97f],
  [0xac00, 0xd7ff],
  [0xf900, 0xfaff],
  [0xff61, 0xffdc],
  [0x16fe0, 0x16fff],
  [0x1b000, 0x1b16f],
  [0x20000, 0x3ffff],
];

const CJK_CLASS = `[${CJK_RANGES.map(([a, b]) => `\\u{${a.toString(16)}}-\\u{${b.toString(16)}}`).join('')}]`;
const HAS_CJK = new RegExp(CJK_CLASS, 'u');
/** Cheap pre-check without the `u` flag: nothing at or above U+1100 means nothing to space. */
const MAYBE_CJK = /[\u1100-\uffff]/;
/** A letter or digit of a space-delimited script: the stuff unicode61 glues into one token. */
const WORD_CHAR = `(?:(?!${CJK_CLASS})[\\p{L}\\p{N}\\p{Co}])`;
/**
 * Query tokens: one CJK letter or digit (CJK punctuation is a separator), or a run of word
 * characters; combining marks ride along, never lead.
 */
const QUERY_TOKENS = new RegExp(`(?=[\\p{L}\\p{N}])${CJK_CLASS}\\p{M}*|(?:${WORD_CHAR}\\p{M}*)+`, 'gu');

function isCjkCodePoint(cp: number): boolean {
  for (const [from, to] of CJK_RANGES) {
    if (cp < from) return false;
    if (cp <= to) return true;
  }
  return false;
}

/** The gateway's own query limit; longer input is cut, never rejected. */
export const MAX_QUERY_CHARS = 1024;
export const MAX_QUERY_TERMS = 32;
/** Prefix matching below this length floods results (`log` → login, logic, logger…). */
export const MIN_PREFIX_CHARS = 4;
const MAX_LOOSE_PHRASES = 64;

export const SNIPPET_CHARS = 160;
const SNIPPET_LEAD = 60;

// Reused output buffer: a per-character string concatenation is ~8× slower on CJK-heavy text.
let scratch = new Uint16Array(3 * 32 * 1024);
let scratchBytes = Buffer.from(scratch.buffer);

/** Spaces out CJK characters; text without any (most code and English) is returned untouched. */
export function toFtsText(text: string): string {
  if (!MAYBE_CJK.test(text)) return text;
  const n = text.length;
  if (scratch.length < 3 * n) {
    scratch = new Uint16Array(3 * n);
    scratchBytes = Buffer.from(scratch.buffer);
  }
  const out = scratch;
  let o = 0;
  let spaced = false;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x1100) {
      out[o++] = c;
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
      const low = text.charCodeAt(i + 1);
      const isPair = low >= 0xdc00 && low <= 0xdfff;
      if (isPair && isCjkCodePoint(((c - 0xd800) << 10) + (low - 0xdc00) + 0x10000)) {
        out[o++] = 0x20;
        out[o++] = c;
        out[o++] = low;
        out[o++] = 0x20;
        spaced = true;
      } else {
        out[o++] = c;
        if (isPair) out[o++] = low;
      }
      if (isPair) i++;
    } else if (isCjkCodePoint(c)) {
      out[o++] = 0x20;
      out[o++] = c;
      out[o++] = 0x20;
      spaced = true;
    } else {
      out[o++] = c;
    }
  }
  return spaced ? scratchBytes.toString('utf16le', 0, o * 2) : text;
}

/** Cuts at `max` UTF-16 units without splitting a surrogate pair. */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

/** Long text as its opening and its ending (where errors and summaries sit), joined by an ellipsis. */
export function headAndTail(text: string, head: number, tail: number): string {
  if (text.length <= head + tail) return text;
  let from = text.length - tail;
  const code = text.charCodeAt(from);
  if (code >= 0xdc00 && code <= 0xdfff) from++;
  return `${capText(text, head)}\n…\n${text.slice(from)}`;
}

export interface QueryTerm {
  tokens: string[];
  /** The last token also matches longer words that start with it. */
  prefix: boolean;
}

export interface FtsQuery {
  /** All terms must match (phrases joined by FTS5's implicit AND). */
  strict: string;
  /** Any term, or any two-character piece of a longer CJK run, may match; absent when it would add nothing. */
  loose?: string;
  terms: QueryTerm[];
}

function isCjk(token: string): boolean {
  return HAS_CJK.test(token);
}

function phrase(tokens: string[], prefix: boolean): string {
  // Tokens hold no quote today; doubling keeps the phrase closed whatever the token rule becomes.
  return `"${tokens.join(' ').replaceAll('"', '""')}"${prefix ? ' *' : ''}`;
}

/**
 * Turns arbitrary user input into FTS5 MATCH expressions. Every term is a quoted phrase built from
 * letters and digits only, so operators, quotes, `*`, `:`, `^`, `-`, parentheses and NEAR/AND/OR/NOT
 * are plain words or dropped separators, never syntax. Undefined when nothing searchable is left.
 */
export function buildFtsQuery(query: string): FtsQuery | undefined {
  const terms: QueryTerm[] = [];
  for (const word of capText(query, MAX_QUERY_CHARS).split(/\s+/u)) {
    const tokens = word.match(QUERY_TOKENS);
    if (!tokens) continue;
    const last = tokens[tokens.length - 1]!;
    terms.push({ tokens, prefix: !isCjk(last) && [...last].length >= MIN_PREFIX_CHARS });
    if (terms.length === MAX_QUERY_TERMS) break;
  }
  if (terms.length === 0) return undefined;

  const phrases = terms.map((t) => phrase(t.tokens, t.prefix));
  const loose = new Set(phrases);
  for (const term of terms) {
    for (const run of cjkRuns(term.tokens)) {
      if (run.length < 3) continue;
      for (let i = 0; i + 1 < run.length && loose.size < MAX_LOOSE_PHRASES; i++) loose.add(phrase([run[i]!, run[i + 1]!], false));
    }
  }
  return {
    strict: phrases.join(' '),
    loose: loose.size > 1 ? [...loose].join(' OR ') : undefined,
    terms,
  };
}

function cjkRuns(tokens: string[]): string[][] {
  const runs: string[][] = [];
  let run: string[] = [];
  for (const token of tokens) {
    if (isCjk(token)) {
      run.push(token);
    } else if (run.length > 0) {
      runs.push(run);
      run = [];
    }
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The regex twin of a phrase match, to find and mark terms in the original (unspaced) text. */
function termPattern(term: QueryTerm): string {
  const { tokens } = term;
  let pattern = isCjk(tokens[0]!) ? '' : `(?<!${WORD_CHAR})`;
  tokens.forEach((token, i) => {
    if (i > 0) {
      // Two word tokens need a separator between them; next to a CJK character none is needed.
      const bothWords = !isCjk(tokens[i - 1]!) && !isCjk(token);
      pattern += bothWords ? '[^\\p{L}\\p{N}]+' : '[^\\p{L}\\p{N}]*';
    }
    pattern += escapeRegExp(token);
  });
  const last = tokens[tokens.length - 1]!;
  if (!isCjk(last)) pattern += term.prefix ? `(?:${WORD_CHAR}|\\p{M})*` : `(?!${WORD_CHAR})`;
  return pattern;
}

function snapToCharBoundary(text: string, index: number): number {
  const code = text.charCodeAt(index);
  return index > 0 && code >= 0xdc00 && code <= 0xdfff ? index - 1 : index;
}

/**
 * A short excerpt of `text` around the first match of any term, matches marked `**like this**`,
 * whitespace collapsed. Without a findable match (e.g. a diacritic-folded hit) it is the opening.
 */
export function makeSnippet(text: string, terms: QueryTerm[], width = SNIPPET_CHARS): string {
  const patterns = terms.map(termPattern).sort((a, b) => b.length - a.length);
  const matcher = patterns.length > 0 ? new RegExp(patterns.join('|'), 'giu') : undefined;
  const first = matcher?.exec(text);

  let start = 0;
  if (first) {
    start = Math.max(0, first.index - SNIPPET_LEAD);
    if (start + width > text.length) start = Math.max(0, text.length - width);
  }
  start = snapToCharBoundary(text, start);
  const end = snapToCharBoundary(text, Math.min(text.length, start + width));

  let out = '';
  let at = start;
  if (matcher && first) {
    matcher.lastIndex = start;
    for (let m = matcher.exec(text); m && m.index < end; m = matcher.exec(text)) {
      const from = Math.max(m.index, at);
      const to = Math.min(m.index + m[0].length, end);
      if (to <= from) continue;
      out += `${text.slice(at, from)}**${text.slice(from, to)}**`;
      at = to;
    }
  }
  out += text.slice(at, end);
  out = out.replace(/\s+/gu, ' ').trim();
  return `${start > 0 ? '…' : ''}${out}${end < text.length ? '…' : ''}`;
}

/** A one-line preview: whitespace collapsed, cut at `max` characters with an ellipsis. */
export function excerpt(text: string, max: number): string {
  const head = capText(text, max * 4);
  const flat = head.replace(/\s+/gu, ' ').trim();
  if (flat.length <= max && head.length === text.length) return flat;
  return `${capText(flat, max - 1).trimEnd()}…`;
}
