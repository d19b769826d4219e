/**
 * Credential masking for everything that is stored or uploaded (secrets never leave the machine).
 * A masked value becomes `[REDACTED:<rule>]`; the rule names below are stable and documented:
 *
 * | rule             | what it masks                                                                   |
 * |------------------|---------------------------------------------------------------------------------|
 * | `private-key`    | a whole PEM `-----BEGIN … PRIVATE KEY-----` block (to its END line, or to the end of the base64 body when END is missing) |
 * | `url-password`   | the password of `scheme://user:password@host` (scheme, user and host kept)      |
 * | `jwt`            | `eyJ…` header `.` payload `.` signature (base64url)                             |
 * | `aws-access-key` | `AKIA`/`ASIA` + 16 upper-case alphanumerics                                     |
 * | `aws-secret-key` | a 40-char base64-ish value assigned to `aws_secret_access_key` / `SecretAccessKey` |
 * | `anthropic-key`  | `sk-ant-…`                                                                      |
 * | `openai-key`     | `sk-…` (incl. `sk-proj-…`)                                                      |
 * | `stripe-key`     | `sk_live_`, `sk_test_`, `rk_live_`, `rk_test_` keys                             |
 * | `github-token`   | `ghp_`, `gho_`, `ghs_`, `ghu_`, `ghr_`, `github_pat_` tokens                    |
 * | `slack-token`    | `xoxa-`, `xoxb-`, `xoxp-`, `xoxr-`, `xoxs-` tokens                              |
 * | `google-api-key` | `AIza` + 35 characters                                                          |
 * | `everme-token`   | `evt_…`, `emk_…`                                                                |
 * | `bearer-token`   | the token after `Bearer ` (the word is kept)                                    |
 * | `basic-auth`     | the credentials after `Authorization: Basic `                                   |
 * | `password`       | the value of a `password` / `passwd` / `passphrase` assignment                  |
 * | `secret`         | the value of a `secret` / `secret_key` / `api_key` / `apikey` / `private_key` / `…token` assignment |
 *
 * Assignments are `key=value`, `key: value`, `key := value`, `key => value`, with the key and the value
 * optionally quoted (`"password": "x"`, `PASSWORD="x"`, `{\"token\":\"x\"}`); only the value is masked.
 * Prefixed keys count (`DB_PASSWORD`, `client_secret`, `access_token`, `GITHUB_TOKEN`). Values that
 * cannot be credentials are left alone: empty, already masked, type names (`password: string`) and
 * env-var references (`PASSWORD=${DB_PASSWORD}`).
 *
 * `sk-`, `sk-ant-`, `evt_`/`emk_` and `Bearer` tokens are masked only when they look random (a digit,
 * or ≥ 20 chars of mixed case; bearer tokens also when ≥ 32 chars), so `sk-learn`, `evt_handler_…`
 * and "bearer authentication" survive. Git SHAs, UUIDs and hex match no rule.
 *
 * Speed: `redactText` first runs one cheap test for any trigger substring, then one per family of
 * rare triggers, then only the rules whose own trigger occurs. Every pattern starts at the beginning
 * of a run of token characters (lookbehind) and consumes that run once, so hostile input
 * (`'sk-'.repeat(…)`, a BEGIN without END, `password=` repeated) stays linear.
 */

import { isPlainObject } from '../core/json.js';

export const REDACTION_RULES = [
  'private-key',
  'url-password',
  'jwt',
  'aws-access-key',
  'aws-secret-key',
  'anthropic-key',
  'openai-key',
  'stripe-key',
  'github-token',
  'slack-token',
  'google-api-key',
  'everme-token',
  'bearer-token',
  'basic-auth',
  'password',
  'secret',
] as const;

export type RedactionRule = (typeof REDACTION_RULES)[number];

export function placeholder(rule: RedactionRule): string {
  return `[REDACTED:${rule}]`;
}

/**
 * Triggers tested together before one by one: a text that matches none of a family's triggers, the
 * common case, is scanned once for the whole family rather than once per rule. A family's regex
 * must match wherever any of its members' triggers does.
 */
interface TriggerFamily {
  /** Position in the per-text memo of `redactText`. */
  slot: number;
  test: RegExp;
}

const RARE_TOKENS: TriggerFamily = {
  slot: 0,
  test: /PRIVATE KEY|eyJ|AKIA|ASIA|sk-|[sr]k_(?:live|test)_|gh[oprsu]_|github_pat_|xox[abprs]-|AIza|evt_|emk_/,
};
const AUTH_WORDS: TriggerFamily = { slot: 1, test: /secret_?access_?key|bearer|basic/i };
const FAMILIES = 2;

interface Rule {
  family?: TriggerFamily;
  /** Cheap test: the rule's pattern cannot match unless this does. Never global (no lastIndex state). */
  trigger: RegExp;
  apply(s: string): string;
}

function inFamily(family: TriggerFamily, rule: Rule): Rule {
  return { ...rule, family };
}

/**
 * Prefixes like `sk-` or `evt_` also start ordinary kebab/snake identifiers; a real key is random,
 * so it has a digit or (long enough) both letter cases.
 */
function looksRandom(body: string): boolean {
  if (/[0-9]/.test(body)) return true;
  return body.length >= 20 && /[a-z]/.test(body) && /[A-Z]/.test(body);
}

function regexRule(trigger: RegExp, pattern: RegExp, replace: (match: string, ...groups: string[]) => string): Rule {
  return { trigger, apply: (s) => s.replace(pattern, replace) };
}

function tokenRule(rule: RedactionRule, trigger: RegExp, pattern: RegExp, check?: (match: string) => boolean): Rule {
  return regexRule(trigger, pattern, (m) => (check && !check(m) ? m : placeholder(rule)));
}

// ---- private-key: by hand, since a lazy `[\s\S]*?` from every BEGIN would be quadratic without END.
const PEM_BEGIN = /-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----/g;
const PEM_END = /-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----/g;
/**
 * Body of a truncated block: lines that are entirely base64 (or `Name: value` PEM headers), separated
 * by real newlines or by escaped ones as they appear in JSON text. The first line that is anything
 * else (prose) ends it.
 */
const PEM_LINE_END = String.raw`(?=\r?\n|(?:\\r)?\\n|["',]|$)`;
const PEM_BODY = new RegExp(
  String.raw`(?:[ \t]*[A-Za-z0-9+/=]+${PEM_LINE_END})?(?:(?:\r?\n|(?:\\r)?\\n)(?:[A-Za-z-]+:[^\n\\]*|[A-Za-z0-9+/=]*${PEM_LINE_END}))*`,
  'y',
);

function maskPrivateKeys(s: string): string {
  PEM_BEGIN.lastIndex = 0;
  let begin = PEM_BEGIN.exec(s);
  if (!begin) return s;
  const parts: string[] = [];
  let from = 0;
  let endSearchFailed = false;
  while (begin) {
    const afterBegin = begin.index + begin[0].length;
    let stop: number;
    let end: RegExpExecArray | null = null;
    if (!endSearchFailed) {
      PEM_END.lastIndex = afterBegin;
      end = PEM_END.exec(s);
      if (!end) endSearchFailed = true;
    }
    if (end) {
      stop = end.index + end[0].length;
    } else {
      // Truncated key material is still key material: mask the body that follows.
      PEM_BODY.lastIndex = afterBegin;
      PEM_BODY.exec(s);
      stop = PEM_BODY.lastIndex;
      while (stop > afterBegin && /\s/.test(s.charAt(stop - 1))) stop--;
    }
    parts.push(s.slice(from, begin.index), placeholder('private-key'));
    from = stop;
    PEM_BEGIN.lastIndex = stop;
    begin = PEM_BEGIN.exec(s);
  }
  parts.push(s.slice(from));
  return parts.join('');
}

/** Optional quote closing a key or opening a value, also in JSON-inside-a-string form (`\"`). */
const Q = `(?:\\\\?["'])?`;
const SEP = `${Q}[ \\t]*(?::=|=>|[:=])[ \\t]*`;

/** Values that are clearly not secrets: type names and unset markers in code, env-var references. */
const NOT_A_SECRET =
  /^(?:string|number|boolean|bool|str|int|any|unknown|void|null|nil|none|undefined|true|false|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)$/i;

function isMaskable(value: string): boolean {
  return value.trim() !== '' && !value.startsWith('[REDACTED:') && !NOT_A_SECRET.test(value);
}

const ASSIGNMENT_KEY = `(password|passwd|passphrase|secret[_-]?key|secret|api[_-]?key|private[_-]?key|token)(?![A-Za-z0-9_])`;
const ASSIGNMENT = new RegExp(
  `${ASSIGNMENT_KEY}(${SEP})(?:"([^"\\n]*)"|'([^'\\n]*)'|\\\\"([^"\\\\\\n]*)\\\\"|([^\\s"'\\\\&,;)\\]}>:=][^\\s"'\\\\&,;)\\]}>]*))`,
  'gi',
);

function assignmentRule(key: string): RedactionRule {
  return /pass/i.test(key) ? 'password' : 'secret';
}

function maskAssignment(
  match: string,
  key: string,
  sep: string,
  dq: string | undefined,
  sq: string | undefined,
  edq: string | undefined,
  bare: string | undefined,
): string {
  const value = dq ?? sq ?? edq ?? bare ?? '';
  if (!isMaskable(value)) return match;
  const mask = placeholder(assignmentRule(key));
  if (dq !== undefined) return `${key}${sep}"${mask}"`;
  if (sq !== undefined) return `${key}${sep}'${mask}'`;
  if (edq !== undefined) return `${key}${sep}\\"${mask}\\"`;
  return `${key}${sep}${mask}`;
}

const AWS_SECRET = new RegExp(
  `((?:aws_?)?secret_?access_?key${SEP}${Q})([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])`,
  'gi',
);

/** Applied in this order: blocks and URLs first, specific prefixes before the generic ones. */
const RULES: readonly Rule[] = [
  { family: RARE_TOKENS, trigger: /PRIVATE KEY/, apply: maskPrivateKeys },
  regexRule(
    /:\/\//,
    /(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s:/@]*:)([^\s@/]+)@/g,
    (_m, head: string) => `${head}${placeholder('url-password')}@`,
  ),
  inFamily(RARE_TOKENS, tokenRule('jwt', /eyJ/, /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*/g)),
  inFamily(RARE_TOKENS, tokenRule('aws-access-key', /AKIA|ASIA/, /(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/g)),
  inFamily(AUTH_WORDS, regexRule(/secret_?access_?key/i, AWS_SECRET, (_m, head: string) => `${head}${placeholder('aws-secret-key')}`)),
  inFamily(
    RARE_TOKENS,
    tokenRule('anthropic-key', /sk-ant-/, /(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}/g, (m) => looksRandom(m.slice(7))),
  ),
  inFamily(RARE_TOKENS, tokenRule('openai-key', /sk-/, /(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}/g, (m) => looksRandom(m.slice(3)))),
  inFamily(RARE_TOKENS, tokenRule('stripe-key', /[sr]k_(?:live|test)_/, /(?<![A-Za-z0-9_])[sr]k_(?:live|test)_[A-Za-z0-9]{10,}/g)),
  inFamily(
    RARE_TOKENS,
    tokenRule('github-token', /gh[oprsu]_|github_pat_/, /(?<![A-Za-z0-9_])(?:gh[oprsu]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/g),
  ),
  inFamily(RARE_TOKENS, tokenRule('slack-token', /xox[abprs]-/, /(?<![A-Za-z0-9_-])xox[abprs]-[A-Za-z0-9-]{10,}/g)),
  inFamily(RARE_TOKENS, tokenRule('google-api-key', /AIza/, /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}/g)),
  inFamily(
    RARE_TOKENS,
    tokenRule('everme-token', /evt_|emk_/, /(?<![A-Za-z0-9_-])(?:evt|emk)_[A-Za-z0-9_-]{8,}/g, (m) => looksRandom(m.slice(4))),
  ),
  inFamily(
    AUTH_WORDS,
    regexRule(/bearer/i, /\b(Bearer[ \t]+)([A-Za-z0-9._~+/=-]{8,})/gi, (m, head: string, token: string) =>
      looksRandom(token) || token.length >= 32 ? `${head}${placeholder('bearer-token')}` : m,
    ),
  ),
  inFamily(
    AUTH_WORDS,
    regexRule(
      /basic/i,
      new RegExp(`(Authorization${SEP}${Q}Basic[ \\t]+)([A-Za-z0-9+/]{6,}={0,2})`, 'gi'),
      (_m, head: string) => `${head}${placeholder('basic-auth')}`,
    ),
  ),
  regexRule(/pass|secret|api[_-]?key|private[_-]?key|token/i, ASSIGNMENT, maskAssignment),
];

/** One pass over the input that fails fast for text with no trigger at all (the common case). */
const ANY_TRIGGER =
  /PRIVATE KEY|:\/\/|eyJ|AKIA|ASIA|secret|sk-|[sr]k_|gh[oprsu]_|github_pat_|xox[abprs]-|AIza|evt_|emk_|bearer|basic|pass|api[_-]?key|private[_-]?key|token/i;

export function redactText(s: string): string {
  if (!ANY_TRIGGER.test(s)) return s;
  let out = s;
  // Per family: undefined until tested against the current text.
  let familyHit: Array<boolean | undefined> = new Array<boolean | undefined>(FAMILIES);
  for (const rule of RULES) {
    const { family } = rule;
    if (family) {
      familyHit[family.slot] ??= family.test.test(out);
      if (!familyHit[family.slot]) continue;
    }
    if (!rule.trigger.test(out)) continue;
    const next = rule.apply(out);
    if (next !== out) {
      out = next;
      familyHit = new Array<boolean | undefined>(FAMILIES);
    }
  }
  return out;
}

/** Object keys whose string value is a credential whatever it looks like (`{"password": "hunter2"}`). */
const SECRET_KEY_NAME = /(?:password|passwd|passphrase|secret|secret[_-]?key|api[_-]?key|private[_-]?key|token)$/i;
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
