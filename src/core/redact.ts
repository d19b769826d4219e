/**
 * Credential masking for everything that is stored or uploaded (secrets never leave the machine).
 * A masked value becomes `[REDACTED:<rule>]`. The rules are data, in ./secret-rules.ts: one table of
 * rule id, keywords and pattern, covering provider token formats and generic credentials.
 *
 * Speed: `redactText` scans once for every keyword of every rule (see `candidateRules`); only rules
 * whose keyword occurs run, and every pattern is linear (see the table's notes), so hostile input (`'sk-'.repeat(…)`, a
 * BEGIN without END, `password=` repeated) stays fast. An anchored rule (the generic assignment,
 * whose keywords such as `token` or `_key` are in most long tool outputs) is tried only where its
 * keywords stand (`applyAnchored`): scanning every position, its regex was ~14% of a plan worker's
 * time importing the bench tree with 8x tool outputs, and redacting that tree's texts took 2.2–2.5 s
 * against 4.0–5.1 s (bench/redact-throughput.ts, two runs each).
 */
import { isPlainObject } from '../core/json.js';
import { looksRandom } from './redact-output.js';
import { assignmentRule, isMaskable, placeholder, SECRET_RULES, type SecretRule } from './secret-rules.js';

export { placeholder } from './secret-rules.js';

/** Every placeholder name a masked value may carry, in table order. */
export const REDACTION_RULES: readonly string[] = [...new Set(SECRET_RULES.flatMap((r) => [r.id, ...(r.emits ?? [])]))];

export type RedactionRule = string;

/** Keywords to the rules that need them, and one scan that finds which keywords a text holds. */
const RULES_BY_KEYWORD = new Map<string, number[]>();
for (const [index, rule] of SECRET_RULES.entries()) {
  for (const keyword of rule.keywords) {
    const list = RULES_BY_KEYWORD.get(keyword) ?? [];
    list.push(index);
    RULES_BY_KEYWORD.set(keyword, list);
  }
}
/**
 * A JSON `\u` escape, found by the same scan (no rule of its own): text holding one is looked at
 * again with its ASCII escapes decoded (see `maskEscaped`), so text without one costs nothing more.
 */
const ESCAPE_KEYWORD = '\\u';
RULES_BY_KEYWORD.set(ESCAPE_KEYWORD, RULES_BY_KEYWORD.get(ESCAPE_KEYWORD) ?? []);
/**
 * The keyword scan: every keyword is ASCII and at least two characters long, so a table indexed by
 * a position's two characters (ASCII letters folded to lower case) names the keywords that can start
 * there, and only those are compared. One pass over the text whatever it holds, each position
 * costing a lookup and at most a few short comparisons: linear, hostile repetition included.
 * Measured on the bench corpus (120 M characters of tool output): ~0.85 s, against ~1.4–2.1 s for
 * one case-insensitive regex alternating all keywords.
 */
const FOLD = new Uint8Array(128);
for (let c = 0; c < 128; c++) FOLD[c] = c >= 65 && c <= 90 ? c + 32 : c;

/** Bigram (two folded characters, 7 bits each) → index into KEYWORDS_AT + 1; 0 = none. */
const BIGRAM_SLOT = new Uint16Array(128 * 128);
const KEYWORDS_AT: Array<Array<{ keyword: string; rules: number[] }>> = [];
for (const [keyword, rules] of RULES_BY_KEYWORD) {
  if (keyword.length < 2 || !/^[\x00-\x7f]+$/.test(keyword) || keyword !== keyword.toLowerCase()) {
    throw new Error(`secret rule keyword ${JSON.stringify(keyword)} must be lower-case ASCII of two characters or more`);
  }
  const bigram = (keyword.charCodeAt(0) << 7) | keyword.charCodeAt(1);
  if (BIGRAM_SLOT[bigram] === 0) {
    KEYWORDS_AT.push([]);
    BIGRAM_SLOT[bigram] = KEYWORDS_AT.length;
  }
  KEYWORDS_AT[BIGRAM_SLOT[bigram]! - 1]!.push({ keyword, rules });
}
/**
 * The same table indexed by the two characters as they stand (every case of a letter filled in):
 * the scan's lookup a position then costs one load, not three.
 */
const RAW_BIGRAM_SLOT = new Uint16Array(128 * 128);
for (let a = 0; a < 128; a++) for (let b = 0; b < 128; b++) RAW_BIGRAM_SLOT[(a << 7) | b] = BIGRAM_SLOT[(FOLD[a]! << 7) | FOLD[b]!]!;

/**
 * Per slot, 128 flags: the third characters (either case) some keyword of the slot goes on with. A
 * slot holding a two-character keyword (`SHORT_SLOT`) lets any third character through. Most bigram
 * hits are common English pairs ("da", "be", "ma": ~12 M keyword comparisons on the bench corpus's
 * 96 M characters, where ~20 k keywords stand), and the third character turns nearly all of them
 * away with one load. Profiled over that corpus's texts, the scan took 0.56 s against 1.05 s, and
 * all of redaction 0.94x the time (0.92x on the tree with 8x tool outputs).
 */
const THIRD_CHAR = new Uint8Array((KEYWORDS_AT.length + 1) << 7);
const SHORT_SLOT = new Uint8Array(KEYWORDS_AT.length + 1);
for (const [k, keywords] of KEYWORDS_AT.entries()) {
  const slot = k + 1;
  for (const { keyword } of keywords) {
    if (keyword.length === 2) SHORT_SLOT[slot] = 1;
    for (let c = 0; c < 128 && keyword.length > 2; c++) if (FOLD[c] === keyword.charCodeAt(2)) THIRD_CHAR[(slot << 7) | c] = 1;
  }
}

/** Whether a keyword of `slot` can go on with `third` (128 or more, non-ASCII or past the text's end: only a two-character one). */
function thirdCharFits(slot: number, third: number): boolean {
  return SHORT_SLOT[slot] === 1 || (third < 128 && THIRD_CHAR[(slot << 7) | third] === 1);
}

/** Whether `keyword` (lower case) occurs at `at`, its first two characters already known to match. */
function keywordAt(s: string, at: number, keyword: string): boolean {
  if (at + keyword.length > s.length) return false;
  for (let j = 2; j < keyword.length; j++) {
    const c = s.charCodeAt(at + j);
    if (c > 127 || FOLD[c] !== keyword.charCodeAt(j)) return false;
  }
  return true;
}

/** What the keyword scan found: the rules that can match, and where an anchored rule's matches can start. */
interface Candidates {
  hits: boolean[];
  /** Whether a `\u` escape stands in the text. */
  escapes: boolean;
  /** Per anchored rule (by index), the positions its pattern is tried at, ascending. */
  starts: Map<number, number[]>;
}

/** Where a match of an anchored rule can start, given a keyword at `at` (see SecretRule.anchored). */
function anchoredStart(keyword: string, at: number): number {
  const first = keyword.charCodeAt(0);
  return first === 0x5f || first === 0x2d || first === 0x2e ? at + 1 : at;
}

const ANCHORED = SECRET_RULES.map((rule) => rule.anchored === true);

/**
 * Calls `visit` for every keyword in `s` (case-insensitively, overlaps counted), in order of
 * position: the one scan both `candidateRules` and `splittableCandidates` make.
 */
function forEachKeyword(s: string, visit: (keyword: string, rules: readonly number[], at: number) => void): void {
  const n = s.length;
  let next = n > 0 ? s.charCodeAt(0) : 0;
  for (let i = 0; i + 1 < n; i++) {
    const c = next;
    next = s.charCodeAt(i + 1);
    if ((c | next) > 127) continue;
    const slot = RAW_BIGRAM_SLOT[(c << 7) | next]!;
    // Never read past the end: an out-of-bounds charCodeAt deoptimized this scan in the plan workers.
    if (slot === 0 || !thirdCharFits(slot, i + 2 < n ? s.charCodeAt(i + 2) : 128)) continue;
    for (const { keyword, rules } of KEYWORDS_AT[slot - 1]!) if (keywordAt(s, i, keyword)) visit(keyword, rules, i);
  }
}

/**
 * Which rules can match: those with a keyword in the text (case-insensitively, overlaps counted),
 * and where each anchored rule's matches can start. Most texts hold none and cost exactly the scan.
 */
function candidateRules(s: string): Candidates | undefined {
  let found: Candidates | undefined;
  forEachKeyword(s, (keyword, rules, at) => {
    found ??= { hits: new Array<boolean>(SECRET_RULES.length).fill(false), escapes: false, starts: new Map() };
    if (keyword === ESCAPE_KEYWORD) found.escapes = true;
    for (const index of rules) {
      found.hits[index] = true;
      if (!ANCHORED[index]) continue;
      const starts = found.starts.get(index);
      // Keywords are met in order of their position, so the starts come ascending (a keyword's
      // start is its position or the one after).
      if (starts) starts.push(anchoredStart(keyword, at));
      else found.starts.set(index, [anchoredStart(keyword, at)]);
    }
  });
  return found;
}

type Groups = Record<string, string | undefined>;

function quoteOf(secret: string): string {
  const q = secret.charAt(0);
  return (q === '"' || q === "'") && secret.length >= 2 && secret.endsWith(q) ? q : '';
}

/** The replacement of one match of `rule` (the arguments `String.prototype.replace` gives a function). */
function replacement(rule: SecretRule): (...args: unknown[]) => string {
  return (...args: unknown[]) => {
    const match = args[0] as string;
    const last = args.at(-1);
    const groups: Groups | undefined = typeof last === 'object' && last !== null ? (last as Groups) : undefined;
    const secret = groups?.secret ?? match;
    if (rule.check && !rule.check(secret, groups ?? {})) return match;
    if (groups?.secret === undefined) return placeholder(rule.id);
    const q = quoteOf(secret);
    return `${groups.pre ?? ''}${q}${placeholder(rule.id)}${q}${groups.post ?? ''}`;
  };
}

function applyRule(rule: SecretRule, s: string): string {
  if (rule.apply) return rule.apply(s);
  rule.pattern.lastIndex = 0;
  if (rule.replace) return s.replace(rule.pattern, rule.replace);
  return s.replace(rule.pattern, replacement(rule));
}

/** Each anchored rule's pattern, sticky: tried at one position, as a global scan reaching it would. */
const STICKY = SECRET_RULES.map((rule) => (rule.anchored ? new RegExp(rule.pattern.source, `${rule.pattern.flags.replace('g', '')}y`) : undefined));

/**
 * `applyRule` for an anchored rule, trying its pattern only where a match can start. The same as
 * the global scan: that finds, left to right from the end of the last match, the first position
 * where the pattern matches, and no other position can match. Each try is what the scan would try
 * there (a sticky regex at that position), and its function gets the same arguments.
 */
function applyAnchored(index: number, s: string, starts: readonly number[]): string {
  const rule = SECRET_RULES[index]!;
  const re = STICKY[index]!;
  const replace = rule.replace ?? replacement(rule);
  const parts: string[] = [];
  let from = 0;
  let tried = -1;
  for (const start of starts) {
    if (start < from || start === tried) continue;
    tried = start;
    re.lastIndex = start;
    const m = re.exec(s);
    if (m === null) continue;
    const args: unknown[] = [...m, m.index, s];
    if (m.groups) args.push(m.groups);
    parts.push(s.slice(from, start), (replace as (...a: unknown[]) => string)(...args));
    from = start + m[0].length;
  }
  if (parts.length === 0) return s;
  parts.push(s.slice(from));
  return parts.join('');
}

/** Characters a token can be made of, either side of a line break that may have split it (ASCII codes). */
const TOKEN_CHAR = new Uint8Array(128);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.+/=~') TOKEN_CHAR[c.charCodeAt(0)] = 1;
/** Bound on each side of a break: no real key is longer (see MAX_TOKEN in secret-rules.ts). */
const MAX_JOIN_SIDE = 1024;
/** Real keys of the table are at least this long, prefix included: shorter joins are words, not keys. */
const MIN_JOINED_KEY = 20;
/** Line breaks joined into one key at most: MAX_TOKEN characters wrapped at 80 columns take 13. */
const MAX_CHAINED_BREAKS = 16;

/** Rules that find a token by its own shape (prefix and body), the ones a line break can split. */
const SPLITTABLE = SECRET_RULES.map((rule) => rule.apply === undefined && rule.replace === undefined);

function isTokenChar(s: string, i: number): boolean {
  const c = s.charCodeAt(i);
  return c < 128 && TOKEN_CHAR[c] === 1;
}

/**
 * Where a key split by a line break (wrapped terminal output: `sk-proj-…` with a newline in its
 * middle, or in its prefix: `sk-pr⏎oj-…`) matches a rule only across the break, the break moves
 * to after the key, so the rules then see it whole and mask both halves. A key that takes the whole
 * next line is looked at across that line's break too, and so on (a long key wrapped twice). The part after the break
 * must look random (a digit, or both letter cases): a key that ends a line is not glued to the
 * next line's first word. Linear: each line's edges are looked at once, bounded on each side.
 */
export function joinSplitKeys(s: string): string {
  if (s.length < MIN_JOINED_KEY || !s.includes('\n')) return s;
  const parts: string[] = [];
  let from = 0;
  // A key wrapped over several lines: its parts joined so far, and the breaks moved after it.
  let chain = '';
  let moved = '';
  let chained = 0;
  const endChain = (): void => {
    if (moved !== '') parts.push(moved);
    chain = '';
    moved = '';
    chained = 0;
  };
  // Repeated lines (logs, tables) ask the same question again: answered once.
  const answered = new Map<string, number | undefined>();
  for (let nl = s.indexOf('\n'); nl !== -1; nl = s.indexOf('\n', nl + 1)) {
    const breakStart = nl > 0 && s.charCodeAt(nl - 1) === 0x0d ? nl - 1 : nl;
    // A break right where the key joined so far took a whole line: the key may go on past it.
    const continues = chain !== '' && breakStart === from;
    if (!continues) endChain();
    if ((!continues && breakStart <= from) || !isTokenChar(s, breakStart - 1) || !isTokenChar(s, nl + 1)) continue;
    const after = tokenRunAfter(s, nl + 1);
    if (after === undefined) continue;
    let a = breakStart;
    while (a > from && breakStart - a < MAX_JOIN_SIDE && isTokenChar(s, a - 1)) a--;
    const before = continues ? chain : s.slice(a, breakStart);
    // Too short together to be any key of the table.
    if (before.length + after.length < MIN_JOINED_KEY) continue;
    const question = `${before}\n${after}`;
    let keyEnd: number | undefined;
    if (answered.has(question)) keyEnd = answered.get(question);
    else {
      keyEnd = splitKeyEnd(before, after);
      if (answered.size >= 1024) answered.clear();
      answered.set(question, keyEnd);
    }
    if (keyEnd === undefined) continue;
    // The key whole, then the line break(s), then the rest of the last line.
    parts.push(s.slice(from, breakStart), after.slice(0, keyEnd));
    moved += s.slice(breakStart, nl + 1);
    from = nl + 1 + keyEnd;
    chain = before + after.slice(0, keyEnd);
    // Only a key that took the whole next line can go on past its end (a 164-character key at 80
    // columns breaks twice); bounded, so lines of random text are not glued together without end.
    if (keyEnd < after.length || ++chained >= MAX_CHAINED_BREAKS) endChain();
  }
  if (from === 0) return s;
  endChain();
  parts.push(s.slice(from));
  return parts.join('');
}

/**
 * The run of token characters starting at `at`, after a line break, when it looks random (a digit, or
 * both letter cases in 20 characters or more; see splitKeyEnd): most breaks are between words, and
 * end here without looking back.
 */
function tokenRunAfter(s: string, at: number): string | undefined {
  let b = at;
  let digit = false;
  let upper = false;
  let lower = false;
  while (b < s.length && b - at < MAX_JOIN_SIDE && isTokenChar(s, b)) {
    const c = s.charCodeAt(b);
    if (c >= 48 && c <= 57) digit = true;
    else if (c >= 65 && c <= 90) upper = true;
    else if (c >= 97 && c <= 122) lower = true;
    b++;
  }
  return digit || (b - at >= 20 && upper && lower) ? s.slice(at, b) : undefined;
}

/**
 * The splittable rules whose keywords occur in `s`: the keyword scan of `candidateRules`, collecting
 * rule indices into a short list instead of a flag per rule (it runs once per line break).
 */
function splittableCandidates(s: string): number[] {
  const out: number[] = [];
  forEachKeyword(s, (_keyword, rules) => {
    for (const index of rules) if (SPLITTABLE[index] && !out.includes(index)) out.push(index);
  });
  return out;
}

/** How much of `after` belongs to a key that only matches with `before` joined to it; undefined when none does. */
function splitKeyEnd(before: string, after: string): number | undefined {
  const joined = before + after;
  const junction = before.length;
  for (const index of splittableCandidates(joined)) {
    const rule = SECRET_RULES[index]!;
    const re = rule.pattern;
    re.lastIndex = 0;
    for (let m = re.exec(joined); m !== null; m = re.exec(joined)) {
      const end = m.index + m[0].length;
      if (m[0].length === 0) re.lastIndex++;
      if (m.index >= junction) break;
      if (end <= junction) continue;
      const groups = m.groups ?? {};
      if (rule.check && !rule.check(groups.secret ?? m[0], groups)) continue;
      if (looksRandom(after.slice(0, end - junction))) return end - junction;
    }
  }
  return undefined;
}

/**
 * Masks every credential the rule table knows. One scan finds the keywords present; only their
 * rules run, in table order, so text with no keyword at all (the common case) costs that one scan.
 * A key split by a line break is joined first (see `joinSplitKeys`).
 */
export function redactText(input: string): string {
  const s = joinSplitKeys(input);
  const found = candidateRules(s);
  if (!found) return s;
  let out = s;
  for (const [index, rule] of SECRET_RULES.entries()) {
    if (!found.hits[index]) continue;
    const starts = found.starts.get(index);
    // The starts were found in `s`: once an earlier rule masked something, they no longer hold.
    out = starts && out === s ? applyAnchored(index, s, starts) : applyRule(rule, out);
  }
  return found.escapes ? maskEscaped(out, redactText) : out;
}

/**
 * Whether an id holds a credential, also one glued to a prefix (`call_ghp_…`, `key-evt_…`): the rules
 * want a credential to start a word, so every part of the id after a `_` or `-` is looked at too.
 * Such an id is never stored: an export line carrying one is refused, and so is forgetting one.
 */
export function holdsCredential(id: string): boolean {
  const starts = [0, ...Array.from(id.matchAll(/[-_]/g), (m) => (m.index ?? 0) + 1)];
  return starts.some((at) => {
    const part = id.slice(at);
    return redactText(part) !== part;
  });
}

/**
 * `\u0020`–`\u007e` but `\u0022` and `\u005c`: an ASCII character JSON may write escaped (Go's
 * encoding/json writes `&` as `\u0026`, so kubectl, gh and docker do), decoded the JSON string stays
 * valid.
 */
const ASCII_ESCAPE = /\\u00(?!22|5[cC])([2-6][0-9a-fA-F]|7[0-9a-eA-E])/g;

/**
 * Masks what an ASCII escape hid from the rules (`sig=…` after `\u0026`, `\u0073k_live_…`): the text
 * with those escapes decoded is masked again, and kept decoded only when that masked something more.
 */
function maskEscaped(masked: string, redact: (text: string) => string): string {
  const decoded = masked.replace(ASCII_ESCAPE, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
  if (decoded === masked) return masked;
  const again = redact(decoded);
  return again === decoded ? masked : again;
}

/**
 * `redactText` by definition: every rule of the table, in table order, scanning the whole text,
 * with no keyword scan choosing the rules and no anchors choosing where they are tried. A test
 * compares the two, so a keyword the scan misses, or a start an anchored rule skips, shows up as a
 * difference; nothing else uses it.
 */
export function redactTextByEveryRule(input: string): string {
  let out = joinSplitKeys(input);
  for (const rule of SECRET_RULES) out = applyRule(rule, out);
  return /\\u/i.test(out) ? maskEscaped(out, redactTextByEveryRule) : out;
}

/** Object keys whose string value is a credential whatever it looks like (`{"password": "hunter2"}`). */
const SECRET_KEY_NAME =
  /(?:password|passwd|passphrase|secret|secret[_-]?key|secret[_-]?key[_-]?base|api[_-]?key|private[_-]?key|access[_-]?key|token|(?:^|[_.-])pass|[_.-]pwd|[_.-]key|[_.-]auth)$/i;
const AWS_SECRET_KEY_NAME = /secret_?access_?key$/i;

const AUTHORIZATION_KEY_NAME = /^(?:proxy-)?authorization$/i;

function redactByKey(key: string, value: string): string | undefined {
  if (!isMaskable(value)) return undefined;
  if (AUTHORIZATION_KEY_NAME.test(key)) {
    const scheme = /^(Basic|Bearer)([ \t]+)/i.exec(value);
    if (!scheme) return placeholder('bearer-token');
    const rule = scheme[1]!.toLowerCase() === 'basic' ? 'basic-auth' : 'bearer-token';
    return `${scheme[0]}${placeholder(rule)}`;
  }
  if (AWS_SECRET_KEY_NAME.test(key)) return placeholder('aws-secret-key');
  const m = SECRET_KEY_NAME.exec(key);
  return m ? placeholder(assignmentRule(m[0])) : undefined;
}

const WHOLE_PLACEHOLDER = /^\[REDACTED:[a-z-]+\]$/;

/** A value a specific rule recognised whole keeps that rule's more precise name. */
function redactStringUnder(key: string, value: string): string {
  const redacted = redactText(value);
  if (WHOLE_PLACEHOLDER.test(redacted)) return redacted;
  return redactByKey(key, value) ?? redacted;
}

/**
 * Masks every string inside a JSON value (objects and arrays walked; keys kept). A string stored
 * under a credential-named key (`password`, `…secret`, `…token`, `apiKey`, `SecretAccessKey`,
 * `Authorization`, …) is masked whole, unless a specific rule already recognised it whole; an
 * `Authorization` value keeps its `Basic`/`Bearer` word. The result is a new value and the input is
 * not changed; since only string contents change, its JSON encoding stays valid.
 */
export function redactJsonValue(v: unknown): unknown {
  if (typeof v === 'string') return redactText(v);
  if (Array.isArray(v)) return v.map((item) => redactJsonValue(item));
  if (!isPlainObject(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(v)) {
    // defineProperty: a `__proto__` key from JSON.parse must stay a plain own key.
    Object.defineProperty(out, key, {
      value: typeof value === 'string' ? redactStringUnder(key, value) : redactJsonValue(value),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}
