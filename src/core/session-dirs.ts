import path from 'node:path';

const DAY_MS = 24 * 60 * 60 * 1000;

/** The end of a session directory's name: `-session_` + base64url (no padding) of the UTF-8 id. */
export function sessionDirSuffix(sessionId: string): string {
  return `-session_${Buffer.from(sessionId, 'utf8').toString('base64url')}`;
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/**
 * Today's and yesterday's date directories (`YYYY/MM/DD`, relative to `v2/sessions`), in UTC
 * (current runtime) and in local time (ledger era): where a session being written right now almost
 * certainly lives. At most four, fewer when the two clocks agree on the date.
 */
export function recentDayPaths(nowMs: number): string[] {
  const dirs = new Set<string>();
  for (const t of [nowMs, nowMs - DAY_MS]) {
    const d = new Date(t);
    for (const [y, m, day] of [
      [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate()],
      [d.getFullYear(), d.getMonth() + 1, d.getDate()],
    ] as const) {
      dirs.add(path.join(pad(y, 4), pad(m, 2), pad(day, 2)));
    }
  }
  return [...dirs];
}
