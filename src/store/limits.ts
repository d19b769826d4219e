/** How many results a search or listing returns when the caller names no usable number. */
export const DEFAULT_LIMIT = 10;

/**
 * A caller's result limit made safe for a query: a whole number from 1 to `max`; absent or not a
 * finite number gives DEFAULT_LIMIT. The store, the local recall and the gateway recall share it.
 */
export function clampLimit(limit: number | undefined, max: number): number {
  if (limit === undefined || !Number.isFinite(limit)) return Math.min(max, DEFAULT_LIMIT);
  return Math.min(max, Math.max(1, Math.floor(limit)));
}
