/**
 * The credential formats everme masks, as data: one row per rule, with the keywords that must occur
 * (case-insensitively) before its pattern is even tried, and the pattern. Coverage follows the
 * widely used secret-scanning rule sets (gitleaks, GitHub secret scanning): cloud, source hosting,
 * package registries, payment, messaging, email, AI and observability providers, then generic
 * credentials (assignments, CLI flags, connection strings, URL parameters).
 *
 * Every pattern must stay linear on hostile input:
 * - a token pattern starts with a lookbehind that rejects every character its body can contain, so
 *   a match can only begin at the start of a run and each run is scanned once (`'npm_'.repeat(n)`);
 * - a pattern anchored on a context (`AccountKey=`, `--password`) has a bounded body;
 * - no nested quantifiers, no lazy scan that is not bounded.
 *
 * Replacement: the whole match becomes `[REDACTED:<id>]`, unless the pattern names groups: then
 * `pre` and `post` are kept and only `secret` is masked (keeping its quotes).
 */
import { looksRandom } from './redact-output.js';

export interface SecretRule {
  /** Stable name, shown in the placeholder `[REDACTED:<id>]`. */
  readonly id: string;
  /** Lower-case substrings, one of which must occur (case-insensitively) for the pattern to run. */
  readonly keywords: readonly string[];
  /** Global. */
  readonly pattern: RegExp;
  /** A match that fails this (given the secret part) is left alone: not random enough, a type name… */
  readonly check?: (secret: string, groups: Readonly<Record<string, string | undefined>>) => boolean;
  /** Replaces a match itself (rules whose placeholder or kept parts depend on the match). */
  readonly replace?: (match: string, ...groups: string[]) => string;
  /** Rules that are not one regex (a key block searched BEGIN to END by hand). Overrides `pattern`. */
  readonly apply?: (text: string) => string;
  /** Placeholder names a `replace`/`apply` rule may emit besides its id. */
  readonly emits?: readonly string[];
  /**
   * Every match of `pattern` starts where one of `keywords` starts, or one character into a keyword
   * that starts with a separator (`_key`: the match starts at `k`). The pattern is then tried only
   * there (see redact.ts), not at every position of a long text.
   */
  readonly anchored?: boolean;
}

/** How every masked value begins: `[REDACTED:<rule>]`. */
export const MASK_PREFIX = '[REDACTED:';

export function placeholder(rule: string): string {
  return `${MASK_PREFIX}${rule}]`;
}

/** Start of a run: no character of `cls` (a character-class body) right before. */
function start(cls: string): string {
  // Also not right after a shell line continuation, which the token bodies below may contain.
  return `(?<![${cls}])(?<!\\\\\\r?\\n)`;
}

function end(cls: string): string {
  return `(?![${cls}])`;
}

/**
 * No real token is longer than this. Bodies are bounded: V8's regex engine keeps a backtrack entry
 * per character of an unbounded greedy loop, and on runs of a megabyte that turned superlinear.
 */
const MAX_TOKEN = 1024;

/**
 * `n` to `m` characters of `cls` (at most MAX_TOKEN). An open-ended body may go on after a few
 * backslash-newlines (a shell line continuation, as in a key pasted over several lines), so a key
 * split that way is masked whole.
 */
function body(cls: string, n: number, m?: number): string {
  if (m !== undefined) return `[${cls}]{${n},${m}}`;
  return `[${cls}]{${n},${MAX_TOKEN}}(?:\\\\\r?\n[${cls}]{1,${MAX_TOKEN}}){0,8}`;
}

function re(source: string, flags = 'g'): RegExp {
  return new RegExp(source, flags);
}

/**
 * A prefixed token: `prefix` then a body, starting where a run of `cls` characters starts. A bounded
 * body must also end where the run ends; an open-ended one masks at most MAX_TOKEN characters of a
 * longer run (no real key is that long, and the rest is not a key either).
 */
function token(prefix: string, cls: string, n: number, m?: number, flags = 'g'): RegExp {
  return re(`${start(cls)}${prefix}${body(cls, n, m)}${m === undefined ? '' : end(cls)}`, flags);
}

const ALNUM = 'A-Za-z0-9';
const TOKEN = 'A-Za-z0-9_\\-';

/** Values that are clearly not secrets: type names and unset markers in code, env-var references, placeholders. */
export const NOT_A_SECRET =
  /^(?:string|number|boolean|bool|str|int|any|unknown|void|null|nil|none|undefined|true|false|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^<>]*>|\*+|x+|\.{3}|…)$/i;

function unquote(value: string): string {
  const q = value.charAt(0);
  return (q === '"' || q === "'") && value.endsWith(q) && value.length >= 2 ? value.slice(1, -1) : value;
}

export function isMaskable(value: string): boolean {
  const v = unquote(value);
  return v.trim() !== '' && !v.startsWith(MASK_PREFIX) && !NOT_A_SECRET.test(v);
}

/** A flag or query value worth masking: not another flag, not a variable, not a placeholder. */
function maskableValue(secret: string): boolean {
  return isMaskable(secret) && !unquote(secret).startsWith('$');
}

/**
 * What a line shows before its first word: indentation, and a line number as a read tool (`  12→`)
 * or `cat -n` (`  12<TAB>`) prints it.
 */
/**
 * The start of a line, without the `m` flag: that flag on the assignment rule, tried wherever a
 * `token` or `_key` stands, cost 6% of redaction over the bench tree with 8x tool outputs.
 */
const LINE_START = '(?<![^\\n])';
const LINE_PREFIX = '[ \\t]*(?:[0-9]{1,9}(?:\u2192|\\t))?[ \\t]*';

// ---- private keys: by hand, since a lazy `[\s\S]*?` from every BEGIN would be quadratic without END.
const PEM_BEGIN = /-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----/g;
const PEM_END = /-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----/g;
/**
 * Body of a truncated block: lines that are entirely base64 (or `Name: value` PEM headers), separated
 * by real newlines or by escaped ones as they appear in JSON text. The first line that is anything
 * else (prose) ends it.
 */
const PEM_LINE_END = String.raw`(?=\r?\n|(?:\\r)?\\n|["',]|$)`;
function pemBody(linePrefix: string, headerName: string): RegExp {
  return new RegExp(
    String.raw`(?:[ \t]*[A-Za-z0-9+/=]+${PEM_LINE_END})?(?:(?:\r?\n|(?:\\r)?\\n)${linePrefix}(?:${headerName}:[^\n\\]*|[A-Za-z0-9+/=]*${PEM_LINE_END}))*`,
    'y',
  );
}
const PEM_BODY = pemBody('', '[A-Za-z-]+');
/**
 * The body of a block whose BEGIN line was indented (a YAML `key: |` block) or numbered (a read
 * tool's `   2→`, `cat -n`): its lines carry the same kind of prefix. Its headers are named as PEM
 * names them (`Proc-Type:`, `DEK-Info:`), so the YAML keys after the block (`cert: …`) stay.
 */
const PEM_BODY_PREFIXED = pemBody(LINE_PREFIX, '[A-Z][A-Za-z]*-[A-Za-z-]+');
const BEGIN_LINE_PREFIX = new RegExp(`^${LINE_PREFIX}$`);
/** Longer is not a prefix but text: looked back no further, so BEGIN repeated on one line stays linear. */
const MAX_LINE_PREFIX = 64;

/** Whether what stands before BEGIN on its line is indentation or a line number. */
function beginIsPrefixed(s: string, begin: number): boolean {
  let lineStart = begin;
  while (lineStart > 0 && begin - lineStart <= MAX_LINE_PREFIX && s.charCodeAt(lineStart - 1) !== 0x0a) lineStart--;
  const atLineStart = lineStart === 0 || s.charCodeAt(lineStart - 1) === 0x0a;
  return atLineStart && lineStart < begin && BEGIN_LINE_PREFIX.test(s.slice(lineStart, begin));
}

/** Where the body of a block without END stops: its base64 lines, prefixed as the BEGIN line was. */
function truncatedBodyEnd(s: string, begin: number, afterBegin: number): number {
  const body = beginIsPrefixed(s, begin) ? PEM_BODY_PREFIXED : PEM_BODY;
  body.lastIndex = afterBegin;
  body.exec(s);
  let stop = body.lastIndex;
  while (stop > afterBegin && /\s/.test(s.charAt(stop - 1))) stop--;
  return stop;
}

/** Every `-----BEGIN … PRIVATE KEY-----` block (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP …) to its END, or to the end of its body. */
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
    let found: RegExpExecArray | null = null;
    if (!endSearchFailed) {
      PEM_END.lastIndex = afterBegin;
      found = PEM_END.exec(s);
      if (!found) endSearchFailed = true;
    }
    if (found) {
      stop = found.index + found[0].length;
    } else {
      // Truncated key material is still key material: mask the body that follows.
      stop = truncatedBodyEnd(s, begin.index, afterBegin);
    }
    parts.push(s.slice(from, begin.index), placeholder('private-key'));
    from = stop;
    PEM_BEGIN.lastIndex = stop;
    begin = PEM_BEGIN.exec(s);
  }
  parts.push(s.slice(from));
  return parts.join('');
}

const NETRC_WORD = '[ \\t]+[^\\s]{1,256}';
const NETRC_SAME_LINE = `${LINE_START}${LINE_PREFIX}(?:machine${NETRC_WORD}|default)(?:[ \\t]+(?:login|account)${NETRC_WORD}){0,2}[ \\t]+`;
const NETRC_LINE_BEFORE = `${LINE_START}${LINE_PREFIX}(?:machine|login|account)${NETRC_WORD}[ \\t]*\\r?\\n${LINE_PREFIX}`;

/** Optional quote closing a key or opening a value, also in JSON-inside-a-string form (`\"`). */
const Q = `(?:\\\\?["'])?`;
const SEP = `${Q}[ \\t]*(?::=|=>|[:=])[ \\t]*`;

/**
 * Credential-named keys of an assignment, as the last word of the key (`DB_PASSWORD`, `client_secret`,
 * `GITHUB_TOKEN`, `MYSQL_PWD`, `SENDGRID_API_KEY`, `.npmrc`'s `_auth`, Rails' `SECRET_KEY_BASE`). `pass`, `pwd`, `key` and
 * `auth` count only after a separator (`DB_PASS`, not `bypass`; `ENCRYPTION_KEY`, not `monkey`).
 * Every alternative starts with a letter and looks behind only after it: a leading lookbehind would
 * keep the regex engine from skipping quickly to where a key word can start (3x slower imports).
 */
const ASSIGNMENT_KEY =
  `(password|passwd|passphrase|secret[_-]?key[_-]?base|secret[_-]?key|secret|api[_-]?key|private[_-]?key|access[_-]?key|token|p(?<=(?:[_.;-]|[^A-Za-z0-9]|^)p)ass|p(?<=[_.;-]p)wd|k(?<=[_.-]k)ey|a(?<=[_.-]a)uth)(?![A-Za-z0-9_])`;
/** An assignment's value inside other text: it ends where the text goes on. */
const BARE_VALUE = `[^\\s"'\\\\&,;)\\]}>:=][^\\s"'\\\\&,;)\\]}>]*`;
const BARE_AT_START = new RegExp(`^${BARE_VALUE}`);

/**
 * Everything before the value of an env-style line (`DB_PASSWORD=…`, `export API_TOKEN=…`, a `.env`
 * or ini file, a docker-compose `environment:` list's `- DB_PASSWORD=…`): the line is the
 * assignment, so its value runs to the end of the line, `&`, `;`, `,`, `)` and the like included,
 * where an assignment inside other text ends at them (code is told apart in `maskEnvValue`).
 */
const ENV_NAME = '[A-Za-z0-9_.-]+';
const ENV_LINE_HEAD = `${LINE_START}${LINE_PREFIX}(?:-[ \\t]+)?(?:export[ \\t]+)?${ENV_NAME}[ \\t]*=[ \\t]*`;
/**
 * The same assignment as one quoted string (`"Env": ["DB_PASSWORD=…", …]` in docker inspect or
 * kubectl JSON): its value runs to the quote that opened it, a JSON escape (`\"`) inside included.
 */
const QUOTED_ENV_VALUE = `(?<="${ENV_NAME}=)([^\\s"'\\\\](?:[^"\\\\\\r\\n]|\\\\.)*)(?=")|(?<='${ENV_NAME}=)([^\\s"'\\\\][^'\\r\\n]*)(?=')`;
const ASSIGNMENT = new RegExp(
  `${ASSIGNMENT_KEY}(${SEP})(?:"([^"\\n]*)"|'([^'\\n]*)'|\\\\"([^"\\\\\\n]*)\\\\"|(?<=${ENV_LINE_HEAD})([^\\s"'\\\\][^\\r\\n]*)|${QUOTED_ENV_VALUE}|(${BARE_VALUE}))`,
  'gi',
);

export function assignmentRule(key: string): 'password' | 'secret' {
  return /pass|pwd/i.test(key) ? 'password' : 'secret';
}

/**
 * An env-style line's value, to the end of the line: a trailing `# comment` and blanks stay. Left
 * alone when its first word is not a secret (`TOKEN=$GITHUB_TOKEN`, `KEY=<your key>`). A first word
 * that calls something (`SECRET_KEY = os.environ.get(…)`) makes the line code, not an env line:
 * masked as an assignment inside other text, so the rest of the line stays readable.
 */
function maskEnvValue(match: string, key: string, sep: string, line: string): string {
  const comment = line.search(/[ \t]#/);
  const value = (comment === -1 ? line : line.slice(0, comment)).trimEnd();
  const first = value.split(/[ \t]/, 1)[0]!;
  if (first.includes('(')) {
    const bare = BARE_AT_START.exec(line)?.[0];
    return bare !== undefined && isMaskable(bare) ? `${key}${sep}${placeholder(assignmentRule(key))}${line.slice(bare.length)}` : match;
  }
  if (!isMaskable(value) || !isMaskable(first)) return match;
  return `${key}${sep}${placeholder(assignmentRule(key))}${line.slice(value.length)}`;
}

function maskAssignment(match: string, key: string, sep: string, dq?: string, sq?: string, edq?: string, envLine?: string, quotedDq?: string, quotedSq?: string, bare?: string): string {
  if (envLine !== undefined) return maskEnvValue(match, key, sep, envLine);
  const value = dq ?? sq ?? edq ?? quotedDq ?? quotedSq ?? bare ?? '';
  if (!isMaskable(value)) return match;
  const mask = placeholder(assignmentRule(key));
  if (dq !== undefined) return `${key}${sep}"${mask}"`;
  if (sq !== undefined) return `${key}${sep}'${mask}'`;
  if (edq !== undefined) return `${key}${sep}\\"${mask}\\"`;
  return `${key}${sep}${mask}`;
}

/**
 * Between the two halves of a credential pair: quotes, commas, brackets, `=`/`:` and blanks (a line
 * break too: `Client(\n  "AC…",\n  "…")`), optionally a word that names the second half.
 */
const PAIR_GAP = `[\\s"'\`,:;=()\\[\\]{}|]{1,12}(?:(?:auth_?token|token|secret(?:_?access_?key)?|password)[\\s"'\`:=]{1,6})?`;

/**
 * A Twilio account SID (`AC` + 32 hex, not secret itself) right next to a 32-hex value: the
 * account's auth token, which has no prefix of its own (`Client("AC…", "…")`, `-u AC…:…`, CSV).
 * The SID stays; the token is masked.
 */
const TWILIO_PAIR = new RegExp(`AC(?<![A-Za-z0-9]AC)[0-9a-fA-F]{32}(?![A-Za-z0-9])(${PAIR_GAP})([0-9a-f]{32})(?![A-Za-z0-9])`, 'g');

function isHexCode(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70);
}

/** Whether `AC` followed by 32 hex digits occurs anywhere. */
function hasTwilioSid(s: string): boolean {
  for (let i = s.indexOf('AC'); i !== -1; i = s.indexOf('AC', i + 2)) {
    let n = 0;
    while (n < 32 && isHexCode(s.charCodeAt(i + 2 + n))) n++;
    if (n === 32) return true;
  }
  return false;
}

/**
 * An AWS access key id right next to a 40-character value: its secret access key, written without
 * the name that the `aws-secret-key` rule needs (`aws configure set … AKIA… wJal…`, a credentials
 * CSV, `("AKIA…", "…")`). Both are masked. The secret must mix upper and lower case, as every real
 * one does, so a 40-hex digest next to a key id stays.
 */
const AWS_PAIR = new RegExp(
  `(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)(?<![A-Za-z0-9](?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA))[A-Z0-9]{16}(?![A-Za-z0-9])(${PAIR_GAP})([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])`,
  'g',
);

/**
 * A secret access key after its name: the variable (`aws_secret_access_key = …`) or the label, as
 * `aws configure` prompts for it (`AWS Secret Access Key [None]: …`, the bracket holding the value
 * kept so far) and the AWS console names it (`Secret access key: …`).
 */
const AWS_SECRET = new RegExp(`((?:aws[_ ]?)?secret[_ ]?access[_ ]?key(?:[ \\t]*\\[[^\\]\\n]{0,40}\\])?${SEP}${Q})([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])`, 'gi');

/**
 * Every rule, applied in this order: key blocks and URLs first, provider formats before the
 * generic, context-based rules.
 */
export const SECRET_RULES: readonly SecretRule[] = [
  { id: 'private-key', keywords: ['private key'], pattern: PEM_BEGIN, apply: maskPrivateKeys },
  {
    id: 'url-password',
    keywords: ['://'],
    // To the last `@` of the authority: a password may hold a raw `@` (`app:Sup3r@Secret@db`); the
    // host follows the last one, and `/`, `?`, `#` end the authority.
    pattern: /(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s:/@]*:)([^\s/?#]+)@/g,
    replace: (_m, head: string) => `${head}${placeholder('url-password')}@`,
  },
  {
    id: 'aws-key-pair',
    emits: ['aws-access-key', 'aws-secret-key'],
    keywords: ['akia', 'asia', 'abia', 'acca', 'a3t'],
    pattern: AWS_PAIR,
    replace: (m, gap: string, secret: string) =>
      /[A-Z]/.test(secret) && /[a-z]/.test(secret) ? `${placeholder('aws-access-key')}${gap}${placeholder('aws-secret-key')}` : m,
  },
  {
    id: 'twilio-auth-token',
    // `AC` and the SID's first hex digit: the SID is what makes the token findable.
    keywords: [...'0123456789abcdef'].map((d) => `ac${d}`),
    pattern: TWILIO_PAIR,
    // Its keywords occur in one text of ten (`access`, `place`): a plain search for a SID first, three
    // times cheaper than the pattern over the same texts, keeps them from costing the import.
    apply: (s) => (hasTwilioSid(s) ? s.replace(TWILIO_PAIR, (m, gap: string) => `${m.slice(0, 34)}${gap}${placeholder('twilio-auth-token')}`) : s),
  },
  { id: 'jwt', keywords: ['eyj'], pattern: re(`${start(TOKEN)}eyJ[A-Za-z0-9_-]{5,8192}\\.[A-Za-z0-9_-]{2,8192}\\.[A-Za-z0-9_-]{0,8192}`) },
  {
    id: 'aws-access-key',
    keywords: ['akia', 'asia', 'abia', 'acca', 'a3t'],
    pattern: re(`${start(ALNUM)}(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}${end(ALNUM)}`),
  },
  {
    id: 'anthropic-key',
    keywords: ['sk-ant-'],
    pattern: token('sk-ant-', TOKEN, 20),
    check: (s) => looksRandom(s.slice(7)),
  },
  { id: 'openai-key', keywords: ['sk-'], pattern: token('sk-', TOKEN, 20), check: (s) => looksRandom(s.slice(3)) },
  { id: 'stripe-key', keywords: ['sk_live_', 'sk_test_', 'rk_live_', 'rk_test_'], pattern: token('[sr]k_(?:live|test)_', ALNUM + '_', 10) },
  { id: 'stripe-webhook-secret', keywords: ['whsec_'], pattern: token('whsec_', 'A-Za-z0-9+/=_', 24) },
  {
    id: 'github-token',
    keywords: ['ghp_', 'gho_', 'ghs_', 'ghu_', 'ghr_', 'github_pat_'],
    pattern: re(`${start(ALNUM + '_')}(?:gh[oprsu]_${body(ALNUM, 20)}|github_pat_${body(ALNUM + '_', 20)})`),
  },
  {
    id: 'gitlab-token',
    keywords: ['glpat-', 'gloas-', 'gldt-', 'glrt-', 'glcbt-', 'glptt-', 'glft-', 'glsoat-', 'glimt-', 'glagent-', 'glffct-', 'gr1348941'],
    pattern: token('(?:gl(?:pat|oas|dt|rt|cbt|ptt|ft|soat|imt|agent|ffct)-|GR1348941)', TOKEN, 20),
  },
  {
    id: 'slack-token',
    keywords: ['xoxa-', 'xoxb-', 'xoxe', 'xoxo-', 'xoxp-', 'xoxr-', 'xoxs-', 'xapp-'],
    pattern: token('(?:xox[abeoprs](?:\\.xox[bp])?-|xapp-)', 'A-Za-z0-9.-', 10),
  },
  {
    id: 'slack-webhook',
    keywords: ['hooks.slack.com'],
    pattern: re('(?<pre>hooks\\.slack\\.com/(?:services|workflows|triggers)/)(?<secret>[A-Za-z0-9_/+-]{20,300})'),
  },
  {
    id: 'discord-webhook',
    keywords: ['discord'],
    pattern: re('(?<pre>discord(?:app)?\\.com/api/webhooks/[0-9]{5,25}/)(?<secret>[A-Za-z0-9_-]{30,200})'),
  },
  {
    id: 'teams-webhook',
    keywords: ['webhook.office.com'],
    pattern: re('(?<pre>\\.webhook\\.office\\.com/webhookb2/)(?<secret>[^\\s"\'<>]{20,600})'),
  },
  {
    id: 'zapier-webhook',
    keywords: ['hooks.zapier.com'],
    pattern: re('(?<pre>hooks\\.zapier\\.com/hooks/catch/[0-9]{1,12}/)(?<secret>[A-Za-z0-9]{4,64})'),
  },
  { id: 'google-api-key', keywords: ['aiza'], pattern: re(`${start(TOKEN)}AIza[0-9A-Za-z_-]{35}`) },
  { id: 'google-oauth-token', keywords: ['ya29.'], pattern: token('ya29\\.', TOKEN + '.', 20) },
  { id: 'google-oauth-secret', keywords: ['gocspx-'], pattern: token('GOCSPX-', TOKEN, 24, 40) },
  { id: 'npm-token', keywords: ['npm_'], pattern: token('npm_', ALNUM, 36, 38) },
  { id: 'pypi-token', keywords: ['pypi-'], pattern: token('pypi-AgEIcHlwaS5vcmc', TOKEN, 50) },
  { id: 'rubygems-token', keywords: ['rubygems_'], pattern: token('rubygems_', 'a-f0-9', 48, 50) },
  { id: 'docker-token', keywords: ['dckr_pat_', 'dckr_oat_'], pattern: token('dckr_(?:pat|oat)_', TOKEN, 20) },
  { id: 'huggingface-token', keywords: ['hf_', 'api_org_'], pattern: token('(?:hf|api_org)_', 'A-Za-z0-9_', 34, 40), check: (s) => looksRandom(s.replace(/^(?:hf|api_org)_/, '')) },
  { id: 'sendgrid-key', keywords: ['sg.'], pattern: re(`${start(TOKEN + '.')}SG\\.[A-Za-z0-9_-]{16,32}\\.[A-Za-z0-9_-]{30,64}${end(TOKEN + '.')}`) },
  { id: 'twilio-key', keywords: ['sk'], pattern: re(`${start(ALNUM)}SK[0-9a-fA-F]{32}${end(ALNUM)}`) },
  { id: 'mailgun-key', keywords: ['key-'], pattern: token('key-', 'a-f0-9', 32, 34) },
  { id: 'mailchimp-key', keywords: ['-us'], pattern: re(`${start(ALNUM)}[0-9a-f]{32}-us[0-9]{1,2}${end(ALNUM)}`) },
  {
    id: 'azure-storage-key',
    keywords: ['accountkey=', 'sharedaccesskey=', 'sharedaccesssignature='],
    pattern: re('(?<pre>(?:AccountKey|SharedAccessKey|SharedAccessSignature)=)(?<secret>[^;"\'\\s]{8,512})', 'gi'),
  },
  {
    id: 'azure-ad-client-secret',
    keywords: ['q~'],
    pattern: re(`${start('A-Za-z0-9_~.-')}[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}${end('A-Za-z0-9_~.-')}`),
  },
  { id: 'telegram-bot-token', keywords: [':aa'], pattern: re(`(?<![0-9])[0-9]{5,16}:AA[0-9A-Za-z_-]{33}${end(TOKEN)}`) },
  { id: 'digitalocean-token', keywords: ['_v1_'], pattern: token('do[opr]_v1_', 'a-f0-9', 64, 66) },
  { id: 'shopify-token', keywords: ['shpat_', 'shpca_', 'shppa_', 'shpss_'], pattern: token('shp(?:at|ca|pa|ss)_', 'a-fA-F0-9', 32, 34) },
  {
    id: 'atlassian-token',
    keywords: ['atatt3', 'atctt3', 'atbb'],
    pattern: re(`${start('A-Za-z0-9_=.-')}(?:AT[AC]TT3${body('A-Za-z0-9_=-', 100)}|ATBB${body('A-Za-z0-9_=.-', 28)})`),
  },
  {
    id: 'new-relic-key',
    keywords: ['nrak-', 'nrii-', 'nrjs-', 'nral'],
    pattern: re(`${start(TOKEN)}(?:NRAK-[A-Z0-9]{27}|NRII-[A-Za-z0-9_-]{32}|NRJS-[a-f0-9]{19}|[a-f0-9]{36}NRAL)${end(TOKEN)}`),
  },
  { id: 'sentry-token', keywords: ['sntrys_', 'sntryu_'], pattern: re(`${start('A-Za-z0-9+/=_')}(?:sntrys_${body('A-Za-z0-9+/=_', 60)}|sntryu_[a-f0-9]{64})`) },
  { id: 'heroku-key', keywords: ['hrku-'], pattern: token('HRKU-', TOKEN, 40) },
  { id: 'vercel-token', keywords: ['vcp_', 'vci_', 'vca_', 'vcr_', 'vck_'], pattern: token('vc[pciark]_', ALNUM, 24) },
  { id: 'linear-key', keywords: ['lin_api_', 'lin_oauth_'], pattern: re(`${start(ALNUM + '_')}(?:lin_api_[A-Za-z0-9]{40}|lin_oauth_[a-f0-9]{64})${end(ALNUM)}`) },
  { id: 'doppler-token', keywords: ['dp.'], pattern: token('dp\\.(?:pt|st|sa|ct|scim|audit)\\.', ALNUM, 40, 46) },
  { id: 'databricks-token', keywords: ['dapi'], pattern: re(`${start(ALNUM)}dapi[a-f0-9]{32}(?:-[0-9])?${end(ALNUM)}`) },
  { id: 'groq-key', keywords: ['gsk_'], pattern: token('gsk_', ALNUM, 48, 56) },
  { id: 'xai-key', keywords: ['xai-'], pattern: token('xai-', ALNUM, 70, 90) },
  { id: 'replicate-token', keywords: ['r8_'], pattern: token('r8_', ALNUM, 37, 40) },
  { id: 'perplexity-key', keywords: ['pplx-'], pattern: token('pplx-', ALNUM, 40, 56) },
  { id: 'nvidia-key', keywords: ['nvapi-'], pattern: token('nvapi-', TOKEN, 60, 70) },
  { id: 'langsmith-key', keywords: ['lsv2_'], pattern: re(`${start(ALNUM + '_')}lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}${end(ALNUM)}`) },
  { id: 'vault-token', keywords: ['hvs.', 'hvb.'], pattern: token('hv[sb]\\.', TOKEN, 24) },
  { id: 'terraform-token', keywords: ['.atlasv1.'], pattern: re(`${start(ALNUM)}[A-Za-z0-9]{14}\\.atlasv1\\.[A-Za-z0-9_=-]{60,70}${end(TOKEN + '=')}`) },
  { id: 'postman-key', keywords: ['pmak-'], pattern: re(`${start(ALNUM)}PMAK-[a-f0-9]{24}-[a-f0-9]{34}${end(ALNUM)}`) },
  { id: 'square-token', keywords: ['sq0atp-', 'sq0csp-'], pattern: token('sq0(?:atp|csp)-', TOKEN, 22, 45) },
  { id: 'grafana-token', keywords: ['glc_', 'glsa_'], pattern: re(`${start('A-Za-z0-9+/_')}(?:glc_[A-Za-z0-9+/]{32,400}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})`) },
  { id: 'planetscale-token', keywords: ['pscale_'], pattern: token('pscale_(?:tkn|oauth|pw)_', 'A-Za-z0-9=._-', 32, 64) },
  { id: 'supabase-key', keywords: ['sbp_', 'sb_secret_'], pattern: re(`${start(TOKEN)}(?:sbp_[a-f0-9]{40}|sb_secret_${body(TOKEN, 20)})`) },
  { id: 'age-secret-key', keywords: ['age-secret-key-1'], pattern: re('AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}') },
  { id: 'onepassword-token', keywords: ['ops_eyj'], pattern: token('ops_eyJ', 'A-Za-z0-9+/=_-', 100) },
  { id: 'alibaba-key', keywords: ['ltai'], pattern: re(`${start(ALNUM)}LTAI[A-Za-z0-9]{12,20}${end(ALNUM)}`) },
  // The two kinds secretlint's recommended preset knew and this table did not (bench/secretlint-compare.ts).
  { id: 'notion-token', keywords: ['ntn_'], pattern: re(`${start(ALNUM + '_')}ntn_[0-9]{11}[A-Za-z0-9]{35}${end(ALNUM)}`) },
  { id: 'figma-token', keywords: ['figd_'], pattern: token('figd_', TOKEN, 40, 200) },
  { id: 'facebook-token', keywords: ['eaa'], pattern: re(`${start(ALNUM)}EAA[A-Za-z0-9]{90,${MAX_TOKEN}}`) },
  {
    id: 'everme-token',
    keywords: ['evt_', 'emk_'],
    pattern: token('(?:evt|emk)_', TOKEN, 8),
    check: (s) => looksRandom(s.slice(4)),
  },
  {
    id: 'putty-private-key',
    keywords: ['private-lines:'],
    pattern: re('(?<pre>Private-Lines:[ \\t]*[0-9]{1,4})(?<secret>(?:(?:\\r?\\n|(?:\\\\r)?\\\\n)[A-Za-z0-9+/=]{1,128}){1,400})'),
  },
  // ---- generic credentials, by context rather than by format ----
  {
    id: 'aws-secret-key',
    keywords: ['secretaccesskey', 'secret_access_key', 'secret_accesskey', 'secretaccess_key', 'secret access key'],
    pattern: AWS_SECRET,
    replace: (_m, head: string) => `${head}${placeholder('aws-secret-key')}`,
  },
  {
    id: 'bearer-token',
    keywords: ['bearer'],
    pattern: /\b(Bearer[ \t]+)([A-Za-z0-9._~+/=-]{8,})/gi,
    replace: (m, head: string, tok: string) => (looksRandom(tok) || tok.length >= 32 ? `${head}${placeholder('bearer-token')}` : m),
  },
  {
    id: 'basic-auth',
    keywords: ['basic'],
    pattern: new RegExp(`(Authorization${SEP}${Q}Basic[ \\t]+)([A-Za-z0-9+/]{6,}={0,2})`, 'gi'),
    replace: (_m, head: string) => `${head}${placeholder('basic-auth')}`,
  },
  {
    id: 'cli-password-flag',
    keywords: ['--'],
    pattern: re(
      `(?<pre>(?<![\\w-])--[a-z0-9-]{0,30}?(?:password|passwd|pass|token|secret|api-?key|auth)(?:=|[ \\t]+))(?<secret>"[^"\\n]{1,256}"|'[^'\\n]{1,256}'|[^\\s"'\`|;&)-][^\\s"'\`|;&)]{0,255})`,
      'gi',
    ),
    check: maskableValue,
  },
  {
    id: 'cli-user-password',
    keywords: ['-u', '--user'],
    pattern: re(`(?<pre>(?<![\\w-])(?:-u|--user)(?:[ \\t]+|=)["']?(?<user>[^\\s:"'@]{1,128}):)(?<secret>[^\\s"'@]{1,256})`),
    // `docker run -u 1000:1000` is a uid and a gid.
    check: (secret, groups) => maskableValue(secret) && !(/^[0-9]+$/.test(secret) && /^[0-9]+$/.test(groups.user ?? '')),
  },
  {
    id: 'cli-password-short-flag',
    keywords: ['mysql', 'mariadb', 'mycli', 'sshpass', 'docker', 'podman', 'redis-cli'],
    // mysql's `-p` takes its value attached (`-p appdb` asks, and names the database); `docker login
    // -p` and `redis-cli -a` take the next word.
    pattern: re(
      `(?<pre>\\b(?:(?:mysql(?:dump|admin|import|show|check)?|mariadb(?:-dump|-admin)?|mycli)\\b[^\\n|;&]{0,200}?[ \\t]-p|sshpass[ \\t]+-p[ \\t]*|(?:docker|podman)[ \\t]+login\\b[^\\n|;&]{0,200}?[ \\t]-p[ \\t]+|redis-cli\\b[^\\n|;&]{0,200}?[ \\t]-a[ \\t]+))(?<secret>"[^"\\n]{1,256}"|'[^'\\n]{1,256}'|[^\\s"'-][^\\s"']{0,255})`,
    ),
    check: maskableValue,
  },
  {
    id: 'docker-auth',
    keywords: ['"auth'],
    // Docker's config.json: `"auth": "<base64 of user:password>"`, also inside a JSON string.
    pattern: re('(?<pre>\\\\?"auth\\\\?"[ \\t]*:[ \\t]*\\\\?")(?<secret>[A-Za-z0-9+/]{8,4096}={0,2})(?=\\\\?")'),
    check: (secret) => Buffer.from(secret, 'base64').toString('latin1').includes(':'),
  },
  {
    id: 'netrc-password',
    keywords: ['password'],
    // `.netrc`: `password <word>` on a `machine` (or `default`) line, or on a line of its own below
    // a `machine`, `login` or `account` line.
    pattern: re(
      `(?<pre>(?:(?<=${NETRC_SAME_LINE})|(?<=${NETRC_LINE_BEFORE}))password[ \\t]+)(?<secret>[^\\s]{1,256})`,
    ),
    check: maskableValue,
  },
  {
    id: 'secret',
    emits: ['password'],
    keywords: ['pass', 'pwd', 'secret', 'api_key', 'api-key', 'apikey', 'private_key', 'private-key', 'privatekey', 'access_key', 'access-key', 'accesskey', 'token', '_key', '-key', '.key', '_auth', '-auth', '.auth'],
    pattern: ASSIGNMENT,
    replace: maskAssignment,
    // Each alternative of ASSIGNMENT_KEY begins with a keyword, or (`k(?<=[_.-]k)ey`,
    // `a(?<=[_.-]a)uth`) with the second character of `_key`, `-key`, `.key`, `_auth`, `-auth`, `.auth`.
    anchored: true,
  },
  {
    id: 'url-query-secret',
    keywords: ['token=', 'key=', 'sig=', 'signature=', 'secret=', 'password=', 'passwd=', 'pwd=', 'credential='],
    pattern: re(
      '(?<pre>(?<=[?&])[A-Za-z0-9_.-]{0,30}?(?:token|key|sig|signature|secret|password|passwd|pwd|credential)=)(?<secret>[^&\\s#"\'<>]{1,2048})',
      'gi',
    ),
    check: maskableValue,
  },
];
