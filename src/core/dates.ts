import { EvermeError } from './errors.js';

/** `--since YYYY-MM-DD` as UTC midnight; anything else is the user's mistake, said plainly. */
export function parseSinceDate(value: string, flag = '--since'): number {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value.trim());
  const ms = match ? Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])) : Number.NaN;
  const roundTrips = match !== null && !Number.isNaN(ms) && new Date(ms).toISOString().slice(0, 10) === value.trim();
  if (!roundTrips) {
    throw new EvermeError('invalid_args', `${flag} must be a date like 2026-09-01, got "${value}"`, {
      hint: `Use ${flag} YYYY-MM-DD (a UTC calendar date).`,
    });
  }
  return ms;
}

export function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
