import { readFileSync, statSync } from 'node:fs';
import { envFileProblem } from '../config/env-file.js';
import { ALLOW_INSECURE_HTTP_ENV, assertKeySafeTransport, isLoopbackHost } from '../config/transport.js';
import { EvermeError } from '../core/errors.js';
import { writeFileAtomic } from './atomic-write.js';
import type { StepStatus } from './staging.js';

export const ENV_FILE_MODE = 0o600;

/** First line of the managed header; its presence means the header is already in the file. */
export const ENV_HEADER_MARKER = '# everme configuration, managed by `everme install`.';

/**
 * The header, `#` lines as EverMe's own installer starts its everme.env with, so the file reads the
 * same to EverMe's hooks: bare `KEY=VALUE` lines after it, no `export`, quotes only when needed.
 */
export const ENV_HEADER = [
  ENV_HEADER_MARKER,
  '# Read by the everme hook and MCP server (MiniMax Code gives hooks a reduced environment) and by',
  "# EverMe's own hooks, which use the same keys. EverMe's installer writes EVERME_AGENT_ID and",
  '# EVERME_AGENT_TOKEN=evt_... here; `everme install --api-key` writes EVERME_API_KEY. With neither,',
  '# everme uses its local store. Keys and comments you add are kept. Keep this file private (mode 600).',
].join('\n');

/** Header lines of earlier versions, still recognised as ours (uninstall removes a header-only file). */
const LEGACY_HEADER_LINES = [
  '# The everme hook and MCP server read settings from here, not from your shell environment.',
  '# EVERME_API_KEY=evt_...   sends memory to the EverMe gateway; without it everme uses its local store.',
  '# EVERME_API_BASE=https://...   overrides the gateway address.',
  '# Keys and comments you add are kept when `everme install` runs again. Keep this file private (mode 600).',
];

/**
 * New keys are appended in the order EverMe's installer writes them: base, agent, credential; the
 * plain-http opt-in, which it never writes, goes after the base it is for.
 */
const KEY_ORDER = ['EVERME_API_BASE', ALLOW_INSECURE_HTTP_ENV, 'EVERME_AGENT_ID', 'EVERME_AGENT_TOKEN', 'EVERME_API_KEY'];

export interface EnvUpdates {
  EVERME_API_KEY?: string;
  EVERME_API_BASE?: string;
  /** `1` beside a plain-http base to a host that is not loopback, which the hook would refuse without it. */
  EVERME_ALLOW_INSECURE_HTTP?: '1';
}

/** Every key install may set, in the order `planEnvFile` considers them. */
const UPDATE_KEYS = ['EVERME_API_KEY', 'EVERME_API_BASE', ALLOW_INSECURE_HTTP_ENV] as const satisfies ReadonlyArray<keyof EnvUpdates>;

const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;

/** Rejects what would break the line format or smuggle a second assignment into the file. */
export function validateEnvValue(flag: string, value: string): void {
  if (CONTROL_CHARS.test(value)) {
    throw new EvermeError('invalid_args', `--${flag} contains control characters (newline, tab, escape, …)`, {
      code: 'invalid_value',
      hint: `Pass the ${flag} exactly as issued, without line breaks.`,
    });
  }
  if (value.trim() === '') {
    throw new EvermeError('invalid_args', `--${flag} is empty`, { code: 'invalid_value', hint: `Pass the ${flag}, or leave the flag out to keep what everme.env holds.` });
  }
}

/**
 * The `--api-key` value as everme.env stores it: whitespace around it (a pasted key's trailing
 * newline or space) is dropped; whitespace inside it is refused, since no EverMe key holds any and the
 * gateway would answer every request with 401. The message never names the key.
 */
export function normalizeApiKey(value: string): string {
  const key = value.trim();
  if (/\s/.test(key)) {
    throw new EvermeError('invalid_args', '--api-key contains whitespace inside the key', {
      code: 'invalid_value',
      hint: 'Copy the key again as one word: an EverMe key (evt_… or emk_…) holds no spaces, tabs or line breaks.',
    });
  }
  validateEnvValue('api-key', key);
  return key;
}

/** The URL of an `--api-base` value: refused unless it is an http(s) URL. */
export function validateApiBase(value: string): URL {
  validateEnvValue('api-base', value);
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw new EvermeError('invalid_args', '--api-base must be an http(s) URL', { code: 'invalid_value', hint: 'Pass the gateway base, like https://api.everme.evermind.ai.' });
  }
  return url;
}

/**
 * Whether storing `url` needs the plain-http opt-in beside it: refused outright when the user has not
 * opted in (stored, such a base would send the key in clear text on every hook). The opt-in counts
 * from the environment or from everme.env, as every other command reads it (`allowed`).
 */
export function apiBaseNeedsOptIn(url: URL, allowed: boolean): boolean {
  assertKeySafeTransport(url, allowed, '--api-base');
  return url.protocol === 'http:' && !isLoopbackHost(url.hostname);
}

/** A value as the reader in src/config/env-file.ts reads it back: quoted only when it would not survive bare. */
function encodeValue(value: string): string {
  // Whitespace then `#` would start a comment for the reader: such a value needs quotes.
  const bare = value === value.trim() && !/^(['"]).*\1$/.test(value) && !value.startsWith('#') && !/\s#/.test(value);
  if (bare) return value;
  return value.includes('"') ? `'${value}'` : `"${value}"`;
}

const ASSIGNMENT = /^(\s*(?:export\s+)?)([A-Za-z_][A-Za-z0-9_]*)(\s*=\s*)(.*)$/;

/** The new text of the env file, and the keys appended to it (not there before). */
export interface EnvFilePlan {
  text: string;
  appended: string[];
}

/**
 * The new text of the env file: the user's lines in place, each updated key rewritten where it
 * stands, new keys appended. The managed header goes only into a file this creates: an existing
 * file (EverMe's own, or the user's) already has its own, and one that gains nothing stays
 * byte-identical, so uninstall has nothing of ours to take out of it. Line endings follow the file.
 */
export function planEnvFile(existing: string | undefined, updates: EnvUpdates): EnvFilePlan {
  const fresh = existing === undefined || existing.trim() === '';
  const eol = existing?.includes('\r\n') ? '\r\n' : '\n';
  const lines = existing === undefined || existing === '' ? [] : existing.replace(/\r?\n$/, '').split(/\r?\n/);
  const pending = new Map<string, string>();
  // An interface has no index signature, so Object.entries would type its values `any`: list the keys.
  const entries = UPDATE_KEYS.map((key) => [key, updates[key]] as const);
  for (const [key, value] of entries) if (value !== undefined) pending.set(key, value);
  const written = new Set<string>();
  let rewritten = false;
  const out = lines.map((line) => {
    const [, lead = '', key, sep = ''] = ASSIGNMENT.exec(line) ?? [];
    const value = key === undefined ? undefined : pending.get(key);
    if (key === undefined || value === undefined) return line;
    written.add(key);
    const next = `${lead}${key}${sep}${encodeValue(value)}`;
    rewritten ||= next !== line;
    return next;
  });
  const rank = (key: string): number => (KEY_ORDER.includes(key) ? KEY_ORDER.indexOf(key) : KEY_ORDER.length);
  const appended = [...pending].filter(([key]) => !written.has(key)).sort(([a], [b]) => rank(a) - rank(b));
  // Nothing to change: the bytes as they are, even a missing final newline.
  if (!fresh && !rewritten && appended.length === 0) return { text: existing, appended: [] };
  for (const [key, value] of appended) out.push(`${key}=${encodeValue(value)}`);
  if (fresh && !out.some((line) => line.trim() === ENV_HEADER_MARKER)) out.unshift(...ENV_HEADER.split('\n'));
  return { text: `${out.join(eol)}${eol}`, appended: appended.map(([key]) => key) };
}

const HEADER_LINES = new Set([...ENV_HEADER.split('\n'), ...LEGACY_HEADER_LINES]);

/** A line of the managed header, this version's or an earlier one's. */
export function isHeaderLine(line: string): boolean {
  return HEADER_LINES.has(line);
}

/** True when the file holds nothing but the managed header (and blank lines): nothing of the user's. */
export function isHeaderOnly(text: string): boolean {
  return text.split(/\r?\n/).every((line) => line.trim() === '' || isHeaderLine(line));
}

/**
 * A file install did not create, with what install put into it taken out again: our header lines
 * (earlier versions prepended them to any file) and the assignments of `keys`. Every other byte,
 * line endings and a missing final newline included, stays as it is. `finalNewline: false` says the
 * file had none before install appended to it (planEnvFile ends its last line, then appends): when
 * what comes out is the file's tail, the line break install added before it comes out too.
 */
export function stripInstallAdditions(text: string, keys: readonly string[], { finalNewline = true }: { finalNewline?: boolean } = {}): string {
  const parts = text.split(/(\r?\n)/);
  const kept: string[] = [];
  let tailRemoved = false;
  for (let i = 0; i < parts.length; i += 2) {
    const line = parts[i] ?? '';
    const key = ASSIGNMENT.exec(line)?.[2];
    const ours = isHeaderLine(line) || (key !== undefined && keys.includes(key));
    if (!ours) kept.push(line, parts[i + 1] ?? '');
    // The empty piece after a final line break neither ends nor keeps the tail.
    if (line !== '' || i < parts.length - 1) tailRemoved = ours;
  }
  const out = kept.join('');
  return !finalNewline && tailRemoved ? out.replace(/\r?\n$/, '') : out;
}

export interface EnvFileResult {
  status: StepStatus;
  /** Set when an existing file was readable by others and is narrowed to 0600. */
  tightened: boolean;
  keysSet: Array<keyof EnvUpdates>;
  /** Keys appended to a file that existed before (install records them, so uninstall can take them out). */
  appended: string[];
  /** That file had no final newline: appending gave its last line one, which uninstall takes out again. */
  noFinalNewline: boolean;
}

/** Refuses, naming the path, an everme.env that is not a file: nothing could be read from or written to it. */
export function assertEnvFileUsable(file: string): void {
  const problem = envFileProblem(file);
  if (problem === undefined) return;
  throw new EvermeError('io', `${file} ${problem}`, {
    code: 'env_file_not_a_file',
    hint: `Move ${file} away (EverMe's installer and \`everme install\` keep settings and credentials in that file), then run the command again.`,
  });
}

/** Creates or updates `<data>/everme.env` at mode 0600 through a temp file created at 0600. */
export function writeEnvFile(file: string, updates: EnvUpdates, dryRun: boolean): EnvFileResult {
  assertEnvFileUsable(file);
  let existing: string | undefined;
  let mode: number | undefined;
  try {
    existing = readFileSync(file, 'utf8');
    mode = statSync(file).mode & 0o777;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const next = planEnvFile(existing, updates);
  const keysSet = UPDATE_KEYS.filter((k) => updates[k] !== undefined);
  const tightened = mode !== undefined && mode !== ENV_FILE_MODE;
  const appended = existing === undefined ? [] : next.appended;
  const noFinalNewline = existing !== undefined && existing.trim() !== '' && !existing.endsWith('\n') && appended.length > 0;
  if (existing === next.text && !tightened) return { status: 'unchanged', tightened: false, keysSet, appended, noFinalNewline };
  if (!dryRun) writeFileAtomic(file, next.text, { mode: ENV_FILE_MODE });
  return { status: existing === undefined ? 'created' : 'updated', tightened, keysSet, appended, noFinalNewline };
}
