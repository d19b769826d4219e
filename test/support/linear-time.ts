import { expect } from 'vitest';

/**
 * The time a linear pass may take over `chars` characters: a second, plus two per million
 * characters. Hostile inputs are a megabyte or more, where a superlinear pattern (quadratic
 * backtracking, a rescan per match) costs on the order of 10^12 steps: minutes. Linear code takes
 * 10–300 ms a megabyte here on an idle machine. A budget this far above that is never missed for
 * nothing on a loaded CI machine (two test workers on two cores, V8 collecting the old generation
 * around a megabyte); a flat 500 ms was, at 513 ms over 10 MB of ordinary text. A ratio between a
 * small and a large input was tried instead and was no steadier: that garbage-collection step alone
 * made linear code cost 8–19x for 4x the input.
 */
export function linearTimeBudgetMs(chars: number): number {
  return 1000 + chars / 500;
}

/** Runs `run` over `input` once and expects it within `linearTimeBudgetMs` of the input's length. */
export function expectLinearTime(run: (input: string) => unknown, input: string, label = JSON.stringify(input.slice(0, 30))): void {
  const start = performance.now();
  run(input);
  const ms = performance.now() - start;
  expect(ms, `${label}: ${ms.toFixed(0)} ms for ${input.length} characters`).toBeLessThan(linearTimeBudgetMs(input.length));
}
