/**
 * Credential masking for everything that is stored or uploaded (secrets never leave the machine).
 * A masked value becomes `[REDACTED:<rule>]`. The rules are data, in ./secret-rules.ts: one table of
 * rule id, keywords and pattern, covering provider token formats and generic credentials.
 *
 * Speed: `redactText` scans once for every keyword of every rule; only rules whose keyword occurs
 * run, and every pattern is linear (see the table's notes), so hostile input (`'sk-'.repeat(…)`, a
 * BEGIN without END, `password=` repeated) stays fast.
 */
import { isPlainObject } from '../core/json.js';
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
const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

function keywordRegex(keywords: Iterable<string>, flags: string): RegExp {
  return new RegExp(
    [...keywords]
      .sort((a, b) => b.length - a.length)
      .map(escapeRegex)
      .join('|'),
    flags,
  );
}

const ALL_KEYWORDS = [...RULES_BY_KEYWORD.keys()];
const KEYWORD_ENTRIES = [...RULES_BY_KEYWORD.entries()];
/** Every keyword, longest first (`sk-ant-` before `sk-`). */
const WALK = keywordRegex(ALL_KEYWORDS, 'gi');
/** Past this many keyword hits in one text (hostile repetition), only unseen keywords are searched for. */
const MAX_WALKED_HITS = 64;

function markIn(found: string, hits: boolean[], unseen: Set<string>): void {
  for (const [keyword, rules] of KEYWORD_ENTRIES) {
    if (!found.includes(keyword)) continue;
    unseen.delete(keyword);
    for (const index of rules) hits[index] = true;
  }
}

/**
 * Which rules can match, in one pass over the text for every keyword at once: most texts hold none
 * and cost exactly that pass. A keyword found inside a longer one (`sk-` in `sk-ant-`) counts too.
 * Past a few dozen hits the rest of the text is searched only for keywords not seen yet (the regex
 * rebuilt when a new one turns up), so hostile repetition costs one pass per distinct keyword.
 */
function candidateRules(s: string): boolean[] | undefined {
  let search = WALK;
  search.lastIndex = 0;
  let m = search.exec(s);
  if (m === null) return undefined;
  const hits = new Array<boolean>(SECRET_RULES.length).fill(false);
  const unseen = new Set(ALL_KEYWORDS);
  for (let walked = 1; m !== null; m = search.exec(s), walked++) {
    const found = m[0].toLowerCase();
    const isNew = unseen.has(found);
    if (isNew) markIn(found, hits, unseen);
    if (unseen.size === 0) break;
    if (walked >= MAX_WALKED_HITS && (isNew || search === WALK)) {
      const from = search.lastIndex;
      search = keywordRegex(unseen, 'gi');
      search.lastIndex = from;
    }
  }
  return hits;
}

type Groups = Record<string, string | undefined>;

function quoteOf(secret: string): string {
  const q = secret.charAt(0);
  return (q === '"' || q === "'") && secret.length >= 2 && secret.endsWith(q) ? q : '';
}

function applyRule(rule: SecretRule, s: string): string {
  if (rule.apply) return rule.apply(s);
  rule.pattern.lastIndex = 0;
  if (rule.replace) return s.replace(rule.pattern, rule.replace);
  return s.replace(rule.pattern, (...args: unknown[]) => {
    const match = args[0] as string;
    const last = args.at(-1);
    const groups: Groups | undefined = typeof last === 'object' && last !== null ? (last as Groups) : undefined;
    const secret = groups?.secret ?? match;
    if (rule.check && !rule.check(secret, groups ?? {})) return match;
    if (groups?.secret === undefined) return placeholder(rule.id);
    const q = quoteOf(secret);
    return `${groups.pre ?? ''}${q}${placeholder(rule.id)}${q}${groups.post ?? ''}`;
  });
}

/**
 * Masks every credential the rule table knows. One scan finds the keywords present; only their
 * rules run, in table order, so text with no keyword at all (the common case) costs that one scan.
 */
export function redactText(s: string): string {
  const hits = candidateRules(s);
  if (!hits) return s;
  let out = s;
  for (const [index, rule] of SECRET_RULES.entries()) {
    if (hits[index]) out = applyRule(rule, out);
  }
  return out;
}

/** Object keys whose string value is a credential whatever it looks like (`{"password": "hunter2"}`). */
const SECRET_KEY_NAME =
  /(?:password|passwd|passphrase|secret|secret[_-]?key|api[_-]?key|private[_-]?key|access[_-]?key|token|(?:^|[_.-])pass|[_.-]pwd|[_.-]key|[_.-]auth)$/i;
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
