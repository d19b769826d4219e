import { stemmer } from 'stemmer';

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
  /** The last token also matches longer words that start with it (used only when it is no word of its own: see search-ranking). */
  prefix: boolean;
}

export interface FtsQuery {
  /** What to look for, stopwords left out (unless nothing else was asked). */
  terms: QueryTerm[];
  /** One FTS5 phrase per term, in order: letters and digits only, never syntax. */
  phrases: string[];
  /** Two-character pieces of CJK runs of three or more: a partial CJK match, ranked below whole ones. */
  pieces: string[];
  /** Each piece's two characters. */
  pieceTokens: string[][];
}

/**
 * English stopwords (NLTK's list, the usual one): left out of a query's terms, so "what is the
 * widget version" looks for `widget version` and no snippet marks "the". A query of nothing but
 * stopwords keeps them (`the who` still finds something).
 */
export const STOPWORDS: ReadonlySet<string> = new Set(
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

function isCjk(token: string): boolean {
  return HAS_CJK.test(token);
}

function isStopTerm(term: QueryTerm): boolean {
  return term.tokens.length === 1 && STOPWORDS.has(term.tokens[0]!.toLowerCase());
}

export function phrase(tokens: string[], prefix: boolean): string {
  // Tokens hold no quote today; doubling keeps the phrase closed whatever the token rule becomes.
  return `"${tokens.join(' ').replaceAll('"', '""')}"${prefix ? ' *' : ''}`;
}

/**
 * Turns arbitrary user input into FTS5 phrases. Every term is a quoted phrase built from letters
 * and digits only, so operators, quotes, `*`, `:`, `^`, `-`, parentheses and NEAR/AND/OR/NOT are
 * plain words or dropped separators, never syntax. Undefined when nothing searchable is left.
 */
export function buildFtsQuery(query: string): FtsQuery | undefined {
  // The cap counts the words a query looks for, not its stopwords: a question an agent asks in
  // full sentences ("Earlier this month, while we were …, which file is the build script") holds
  // more stopwords than words, and counting them dropped the words at its end.
  const kept: QueryTerm[] = [];
  const stops: QueryTerm[] = [];
  const seen = new Set<string>();
  for (const word of capText(query, MAX_QUERY_CHARS).split(/\s+/u)) {
    for (const part of word.split(/(?<=\p{L}|\p{N})'(?=\p{L})/u)) {
      const tokens = part.match(QUERY_TOKENS);
      if (!tokens) continue;
      const key = tokens.join(' ').toLowerCase();
      if (seen.has(key)) continue;
      seen.add(key);
      const last = tokens[tokens.length - 1]!;
      const term = { tokens, prefix: !isCjk(last) && [...last].length >= MIN_PREFIX_CHARS };
      if (!isStopTerm(term)) kept.push(term);
      else if (stops.length < MAX_QUERY_TERMS) stops.push(term);
      if (kept.length === MAX_QUERY_TERMS) break;
    }
    if (kept.length === MAX_QUERY_TERMS) break;
  }
  if (kept.length === 0 && stops.length === 0) return undefined;
  const terms = kept.length > 0 ? kept : stops;

  const phrases = terms.map((t) => phrase(t.tokens, false));
  const pieces = new Map<string, string[]>();
  for (const term of terms) {
    for (const run of cjkRuns(term.tokens)) {
      if (run.length < 3) continue;
      for (let i = 0; i + 1 < run.length && pieces.size < MAX_LOOSE_PHRASES; i++) pieces.set(phrase([run[i]!, run[i + 1]!], false), [run[i]!, run[i + 1]!]);
    }
  }
  const loose = [...pieces].filter(([p]) => !phrases.includes(p));
  return { terms, phrases, pieces: loose.map(([p]) => p), pieceTokens: loose.map(([, tokens]) => tokens) };
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

/** A single word (not CJK): matched by its stem, like the index matches it. */
function isWordTerm(term: QueryTerm): boolean {
  return term.tokens.length === 1 && !isCjk(term.tokens[0]!);
}

/** What the porter tokenizer makes of a word: lower case, diacritics off, stemmed. */
export function stemOf(word: string): string {
  return stemmer(word.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase());
}

function commonPrefix(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return a.slice(0, i);
}

/**
 * The regex twin of a phrase match, to find and mark terms in the original (unspaced) text. A word
 * term matches any word sharing its stem's opening; `WordStems.accepts` then keeps the ones whose
 * stem is the term's (so `painted` marks `painting`, not `paintbrush`).
 */
function termPattern(term: QueryTerm): string {
  const { tokens } = term;
  if (isWordTerm(term)) {
    const token = tokens[0]!.toLowerCase();
    const opening = commonPrefix(token, stemOf(token)) || token.slice(0, 1);
    return `(?<!${WORD_CHAR})${escapeRegExp(opening)}(?:${WORD_CHAR}|\\p{M})*`;
  }
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

/** Decides which regex candidates really match a word term (see `termPattern`). */
class WordStems {
  private readonly exact = new Set<string>();
  private readonly prefixes: string[] = [];

  constructor(terms: QueryTerm[]) {
    for (const term of terms.filter(isWordTerm)) {
      const stem = stemOf(term.tokens[0]!);
      this.exact.add(stem);
      if (term.prefix) this.prefixes.push(term.tokens[0]!.toLowerCase());
    }
  }

  accepts(match: string): boolean {
    if (isCjk(match) || /[^\p{L}\p{N}\p{M}]/u.test(match)) return true;
    if (this.exact.has(stemOf(match))) return true;
    const lower = match.toLowerCase();
    return this.prefixes.some((p) => lower.startsWith(p));
  }
}

function snapToCharBoundary(text: string, index: number): number {
  const code = text.charCodeAt(index);
  return index > 0 && code >= 0xdc00 && code <= 0xdfff ? index - 1 : index;
}

/**
 * How a snippet marks its matches. `markdown`, `**like this**`: what the CLI and the MCP tools show,
 * where a `**` of the stored text looks the same. `sentinels`: between `MARK_OPEN` and `MARK_CLOSE`,
 * two Unicode noncharacters (for a program's internal use, never text) taken out of the stored text
 * first, so nothing stored can open or close a mark: the viewer makes them `<mark>`.
 */
export type SnippetMarks = 'markdown' | 'sentinels';
export const MARK_OPEN = '\uFDD0';
export const MARK_CLOSE = '\uFDD1';
const MARK_CHARS = /[\uFDD0\uFDD1]/gu;

/**
 * A short excerpt of `text` around the first match of any term, matches marked (`marks`),
 * whitespace collapsed. Without a findable match (e.g. a diacritic-folded hit) it is the opening.
 */
export function makeSnippet(stored: string, terms: QueryTerm[], marks: SnippetMarks = 'markdown', width = SNIPPET_CHARS): string {
  // U+FFFD, the same length: match positions stay where they were.
  const text = marks === 'sentinels' ? stored.replace(MARK_CHARS, '\uFFFD') : stored;
  const [open, close] = marks === 'sentinels' ? [MARK_OPEN, MARK_CLOSE] : ['**', '**'];
  const patterns = terms.map(termPattern).sort((a, b) => b.length - a.length);
  const matcher = patterns.length > 0 ? new RegExp(patterns.join('|'), 'giu') : undefined;
  const stems = new WordStems(terms);
  const next = (): RegExpExecArray | null => {
    for (let m = matcher!.exec(text); m; m = matcher!.exec(text)) if (stems.accepts(m[0])) return m;
    return null;
  };
  const first = matcher ? next() : undefined;

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
    for (let m = next(); m && m.index < end; m = next()) {
      const from = Math.max(m.index, at);
      const to = Math.min(m.index + m[0].length, end);
      if (to <= from) continue;
      out += `${text.slice(at, from)}${open}${text.slice(from, to)}${close}`;
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
