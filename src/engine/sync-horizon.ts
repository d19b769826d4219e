import { isoDay, parseSinceDate } from '../core/dates.js';
import type { RunStore } from '../store/run-store.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** sync looks as far back as the earliest import did; before any import, the last 24 hours. */
export function syncHorizon(runs: RunStore, explicitSinceMs?: number, now = Date.now()): { sinceMs: number; since: string } {
  if (explicitSinceMs !== undefined) return { sinceMs: explicitSinceMs, since: isoDay(explicitSinceMs) };
  const imported = runs.earliestImportSince();
  if (imported) return { sinceMs: parseSinceDate(imported), since: imported };
  const sinceMs = now - DAY_MS;
  return { sinceMs, since: new Date(sinceMs).toISOString() };
}
