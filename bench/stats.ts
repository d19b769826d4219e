/** The middle value (the upper one of an even count): the bench's figure for repeated runs. */
export function median(values: readonly number[]): number {
  return medianBy(values, (v) => v) ?? Number.NaN;
}

/** Nearest-rank percentile (p in 0–100): always a value that was measured, never an interpolation. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

/** The item whose `value` is the median (as `median` picks it), for a row that reports one whole run. */
export function medianBy<T>(items: readonly T[], value: (item: T) => number): T | undefined {
  return [...items].sort((a, b) => value(a) - value(b))[Math.floor(items.length / 2)];
}
