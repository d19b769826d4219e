import { appendFileSync, readFileSync, renameSync, statSync } from 'node:fs';
import path from 'node:path';
import { hookStateDir } from '../store/hook-workspace.js';
import { makeDirs, PRIVATE_DIR_MODE } from '../core/private-dir.js';

/**
 * `recalled`: a SessionStart hook printed a context block. With reason `gateway_<error type>` it is
 * the local store's part alone, the gateway's having failed: a new outcome would be dropped by the
 * `everme status` of an older install reading the same log, so the reason carries it.
 */
export const HOOK_OUTCOMES = ['claimed', 'debounced', 'recalled', 'ignored', 'failed'] as const;
export type HookOutcome = (typeof HOOK_OUTCOMES)[number];

export interface HookEvent {
  t: number;
  outcome: HookOutcome;
  ms: number;
  reason?: string;
  /** The host's `hook_event_name` (known events only); absent when the payload named none. */
  event?: string;
  /** `plugin` or `markdown`, from the hook's command line; absent for commands of older installs. */
  route?: string;
}

const MAX_LOG_BYTES = 256 * 1024;

export function hookEventsFile(stateDir: string): string {
  return path.join(hookStateDir(stateDir), 'events.jsonl');
}

/**
 * Checked by hand rather than with zod: the module is shared with the hook's hot path, and the
 * shape is a few fields this project writes itself.
 */
function asHookEvent(value: unknown): HookEvent | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v.t !== 'number' || typeof v.ms !== 'number' || !Number.isFinite(v.ms)) return undefined;
  const outcome = HOOK_OUTCOMES.find((o) => o === v.outcome);
  if (!outcome) return undefined;
  return {
    t: v.t,
    outcome,
    ms: v.ms,
    ...(typeof v.reason === 'string' ? { reason: v.reason } : {}),
    ...(typeof v.event === 'string' ? { event: v.event.slice(0, 40) } : {}),
    ...(typeof v.route === 'string' ? { route: v.route.slice(0, 20) } : {}),
  };
}

/** One appended line per hook; the log is rotated once it grows past 256 KiB. */
export function recordHookEvent(stateDir: string, event: HookEvent): void {
  const file = hookEventsFile(stateDir);
  makeDirs(path.dirname(file), PRIVATE_DIR_MODE);
  try {
    if (statSync(file).size > MAX_LOG_BYTES) renameSync(file, `${file}.1`);
  } catch {
    // no log yet
  }
  const line = JSON.stringify({ ...event, reason: event.reason?.slice(0, 200) });
  // One write of one short line: concurrent hooks append whole lines (O_APPEND).
  appendFileSync(file, `${line}\n`, { mode: 0o600 });
}

export function readHookEvents(stateDir: string): HookEvent[] {
  const file = hookEventsFile(stateDir);
  const events: HookEvent[] = [];
  for (const name of [`${file}.1`, file]) {
    let text = '';
    try {
      text = readFileSync(name, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      if (!line) continue;
      try {
        const e = asHookEvent(JSON.parse(line));
        if (e) events.push(e);
      } catch {
        // a torn line from a killed hook: skip it
      }
    }
  }
  return events;
}
