import { readFileSync, statSync } from 'node:fs';
import { assertKeySafeTransport, insecureHttpAllowed } from '../config/transport.js';
import { EvermeError } from '../core/errors.js';
import { writeFileAtomic } from './atomic-write.js';
import type { StepStatus } from './staging.js';

export const ENV_FILE_MODE = 0o600;

/** First line of the managed header; its presence means the header is already in the file. */
export const ENV_HEADER_MARKER = '# everme configuration, managed by `everme install`.';

export const ENV_HEADER = [
  ENV_HEADER_MARKER,
  '# The everme hook and MCP server read settings from here, not from your shell environment.',
  '# EVERME_API_KEY=evt_...   sends memory to the EverMe gateway; without it everme uses its local store.',
  '# EVERME_API_BASE=https://...   overrides the gateway address.',
  '# Keys and comments you add are kept when `everme install` runs again. Keep this file private (mode 600).',
].join('\n');

export interface EnvUpdates {
  EVERME_API_KEY?: string;
  EVERME_API_BASE?: string;
}

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
    throw new EvermeError('invalid_args', `--${flag} is empty`, { code: 'invalid_value' });
  }
}

export function validateApiBase(value: string): void {
  validateEnvValue('api-base', value);
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw new EvermeError('invalid_args', '--api-base must be an http(s) URL', { code: 'invalid_value' });
  }
  // Stored, such a base would send the key in clear text on every hook; refuse it up front.
  assertKeySafeTransport(url, insecureHttpAllowed(), '--api-base');
}

/** A value as the reader in src/config/env-file.ts reads it back: quoted only when it would not survive bare. */
function encodeValue(value: string): string {
  const bare = value === value.trim() && !/^(['"]).*\1$/.test(value) && !value.startsWith('#');
  if (bare) return value;
  return value.includes('"') ? `'${value}'` : `"${value}"`;
}

const ASSIGNMENT = /^(\s*(?:export\s+)?)([A-Za-z_][A-Za-z0-9_]*)(\s*=\s*)(.*)$/;

/**
 * The new text of the env file: the managed header first (added when missing), the user's lines in
 * place, each updated key rewritten where it stands, new keys appended. Line endings follow the file.
 */
export function renderEnvFile(existing: string | undefined, updates: EnvUpdates): string {
  const eol = existing?.includes('\r\n') ? '\r\n' : '\n';
  const lines = existing === undefined || existing === '' ? [] : existing.replace(/\r?\n$/, '').split(/\r?\n/);
  const pending = new Map<string, string>();
  for (const [key, value] of Object.entries(updates)) if (value !== undefined) pending.set(key, value);
  const written = new Set<string>();
  const out = lines.map((line) => {
    const match = ASSIGNMENT.exec(line);
    if (!match || !pending.has(match[2])) return line;
    written.add(match[2]);
    return `${match[1]}${match[2]}${match[3]}${encodeValue(pending.get(match[2])!)}`;
  });
  for (const [key, value] of pending) if (!written.has(key)) out.push(`${key}=${encodeValue(value)}`);
  if (!out.some((line) => line.trim() === ENV_HEADER_MARKER)) out.unshift(...ENV_HEADER.split('\n'));
  return `${out.join(eol)}${eol}`;
}

/** True when the file holds nothing but the managed header (and blank lines): nothing of the user's. */
export function isHeaderOnly(text: string): boolean {
  const header = new Set(ENV_HEADER.split('\n'));
  return text.split(/\r?\n/).every((line) => line.trim() === '' || header.has(line));
}

export interface EnvFileResult {
  status: StepStatus;
  /** Set when an existing file was readable by others and is narrowed to 0600. */
  tightened: boolean;
  keysSet: Array<keyof EnvUpdates>;
}

/** Creates or updates `<data>/everme.env` at mode 0600 through a temp file created at 0600. */
export function writeEnvFile(file: string, updates: EnvUpdates, dryRun: boolean): EnvFileResult {
  let existing: string | undefined;
  let mode: number | undefined;
  try {
    existing = readFileSync(file, 'utf8');
    mode = statSync(file).mode & 0o777;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const next = renderEnvFile(existing, updates);
  const keysSet = (Object.keys(updates) as Array<keyof EnvUpdates>).filter((k) => updates[k] !== undefined);
  const tightened = mode !== undefined && mode !== ENV_FILE_MODE;
  if (existing === next && !tightened) return { status: 'unchanged', tightened: false, keysSet };
  if (!dryRun) writeFileAtomic(file, next, { mode: ENV_FILE_MODE });
  return { status: existing === undefined ? 'created' : 'updated', tightened, keysSet };
}
