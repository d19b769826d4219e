import { defaultSink, type Settings, type SinkName } from '../config/settings.js';
import { EvermeError } from '../core/errors.js';

/**
 * What the shared flags accept and mean, without oclif: `flags.ts` defines the flags from these, and
 * `sync-entry.ts` (which starts without oclif) checks the same values.
 */

export const SINKS = ['local', 'everme'] as const satisfies readonly SinkName[];

/** `--concurrency`: sessions processed at once. */
export const CONCURRENCY_RANGE = { min: 1, max: 32 } as const;

/** The sink a command uses: the flag when given, else everme when an API key is configured, else local. */
export function sinkFrom(flag: SinkName | undefined, settings: Settings): SinkName {
  return flag ?? defaultSink(settings);
}

/** A `--since YYYY-MM-DD` day: the text as given (recorded with the run) and its UTC midnight. */
export interface SinceDay {
  text: string;
  ms: number;
}

/**
 * A value that names something (an id, a directory, a file). A blank one names nothing: read as
 * given it was an id no conversation has (and `forget` tombstoned it) or the current directory.
 */
export function nonBlank(value: string, what: string, hint: string): string {
  if (value.trim() === '') throw new EvermeError('invalid_args', `${what} is empty`, { code: 'empty_value', hint });
  return value;
}
