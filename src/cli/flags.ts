import { Flags } from '@oclif/core';
import { parseSinceDate } from '../core/dates.js';
import { EvermeError } from '../core/errors.js';
import { MAX_RECALL_LIMIT } from '../recall/recall.js';
import { CONCURRENCY_RANGE, nonBlank, SINKS, type SinceDay } from './flag-values.js';

export { sinkFrom, type SinceDay } from './flag-values.js';

/**
 * The flags several commands share, defined once so that their names, parsing and errors agree.
 * A value a parser rejects is an EvermeError (invalid_args); oclif prefixes its message with
 * `Parsing --flag`, and the base command takes that off again (see `catch` in base-command.ts).
 */

const DATA_DIR_HINT = 'Pass --data-dir DIR, the directory that holds v2/sessions, or leave the flag out for the default.';

/** Blank, it named nothing: read as absent, the command went on with the default data dir unasked. */
export const dataDirFlag = Flags.custom<string>({
  description: 'MiniMax Code data directory (default: $MINIMAX_DATA_DIR, then $MAVIS_DATA_DIR, then ~/.minimax, then $XDG_DATA_HOME/minimax on a new Linux install)',
  helpGroup: 'GLOBAL',
  parse: (input) => Promise.resolve(nonBlank(input, '--data-dir', DATA_DIR_HINT)),
})();

/** A flag that names an id, a directory or a file: a blank value is invalid_args with `hint`, never read. */
export function namingFlag(description: string, hint: string) {
  return Flags.custom<string>({ description, parse: (input, _context, opts) => Promise.resolve(nonBlank(input, `--${opts.name}`, hint)) })();
}

export const CONVERSATION_HINT = 'Pass --conversation ID: an id `everme export` or `everme forget --dry-run` listed, or a session id mvs_….';
export const PROJECT_HINT = 'Pass --project DIR (`--project .` for the current directory).';

/** `--sink local|everme`; absent means the configured default (see `sinkFrom`). */
export function sinkFlag(description: string) {
  return Flags.option({ description, options: SINKS })();
}

const sinceDay = Flags.custom<SinceDay>({
  // oclif awaits the parser: a date it rejects throws, which oclif reports like a rejection.
  parse: (input) => Promise.resolve({ text: input, ms: parseSinceDate(input) }),
});

export function sinceFlag(description: string) {
  return sinceDay({ description });
}

export const concurrencyFlag = Flags.integer({
  description: 'sessions processed at once (default: 2 for the local store, 4 for the gateway)',
  ...CONCURRENCY_RANGE,
});

export const DEFAULT_SEARCH_LIMIT = 10;

/** A whole number from 1 to MAX_RECALL_LIMIT, written as digits (no sign, no fraction, no exponent). */
export function parseLimit(value: string): number {
  const limit = /^\s*\d{1,3}\s*$/.test(value) ? Number(value) : Number.NaN;
  if (!(limit >= 1 && limit <= MAX_RECALL_LIMIT)) {
    throw new EvermeError('invalid_args', `--limit must be a whole number from 1 to ${MAX_RECALL_LIMIT} (got ${JSON.stringify(value)})`, {
      code: 'invalid_limit',
    });
  }
  return limit;
}

export const limitFlag = Flags.custom<number>({
  description: `how many results, ${MAX_RECALL_LIMIT} at most`,
  default: DEFAULT_SEARCH_LIMIT,
  parse: (input) => Promise.resolve(parseLimit(input)),
})();

export const jsonFlag = Flags.boolean({
  description: 'Print exactly one JSON envelope on stdout',
  helpGroup: 'GLOBAL',
  default: false,
});
