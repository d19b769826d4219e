import { parseArgs } from 'node:util';
import type { Settings, SinkName } from '../config/settings.js';
import { commandSettings } from './command-settings.js';
import { requireDataDir, resolveDataDir } from '../config/data-dir.js';
import { parseSinceDate } from '../core/dates.js';
import { toEvermeError } from '../core/errors.js';
import { CONCURRENCY_RANGE, SINKS } from './flag-values.js';
import { abortOnInterrupt } from './interrupt.js';
import { guardStdout, reportFailure, successEnvelope, writeJson, writeStdout } from './output.js';
import { renderRunSummary } from './render-run.js';
import { runSyncFlow, type SyncRequest } from './sync-flow.js';

/**
 * `everme sync` without oclif. A cron job or a shell prompt runs it over and over, mostly to find
 * nothing new, and oclif's start (its ~650 KB of modules evaluated, its config and manifest loaded)
 * was ~80 ms of a ~420 ms no-op on the 1x bench tree. The command's flags are few and plain, so
 * node's own `parseArgs` reads them here, and the run is the one `commands/sync.ts` makes
 * (`runSyncFlow`), printed the way the base command prints it.
 *
 * Anything this does not take as it is (help, an unknown or repeated flag, a value the flag would
 * reject) is handed to oclif (returns false, nothing done), so usage errors and help read exactly
 * as every other command's.
 */

/** The flags read here: the command's own and the base command's (a test pins them to `Sync`'s). */
export const SYNC_ENTRY_OPTIONS = {
  session: { type: 'string' },
  since: { type: 'string' },
  sink: { type: 'string' },
  concurrency: { type: 'string' },
  'data-dir': { type: 'string' },
  json: { type: 'boolean' },
} as const;

interface EntryFlags {
  request: SyncRequest;
  dataDir?: string;
  json: boolean;
}

/** The flags as `everme sync` would take them, or undefined for oclif to answer. */
export function readSyncFlags(argv: readonly string[]): EntryFlags | undefined {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: SYNC_ENTRY_OPTIONS, strict: true, allowPositionals: false, tokens: true });
  } catch {
    return undefined;
  }
  // oclif refuses a flag given twice; parseArgs would keep the last.
  const names = parsed.tokens.filter((token) => token.kind === 'option').map((token) => token.name);
  if (new Set(names).size !== names.length) return undefined;
  const { session, since, sink, concurrency, json } = parsed.values;
  const request: SyncRequest = {};
  if (session !== undefined) {
    // A blank id is oclif's to refuse (invalid_args with a hint), as every other naming flag is.
    if (session.trim() === '') return undefined;
    request.session = session;
  }
  if (sink !== undefined) {
    if (!(SINKS as readonly string[]).includes(sink)) return undefined;
    request.sink = sink as SinkName;
  }
  if (since !== undefined) {
    try {
      request.since = { text: since, ms: parseSinceDate(since) };
    } catch {
      return undefined;
    }
  }
  if (concurrency !== undefined) {
    const n = /^\d+$/.test(concurrency) ? Number(concurrency) : Number.NaN;
    if (!(n >= CONCURRENCY_RANGE.min && n <= CONCURRENCY_RANGE.max)) return undefined;
    request.concurrency = n;
  }
  const dataDir = parsed.values['data-dir'];
  // A blank data dir too: read here as absent, it was the default dir, unasked.
  if (dataDir?.trim() === '') return undefined;
  return { request, dataDir, json: json === true };
}

/**
 * Runs `everme sync` with these arguments (those after `sync`) when it takes them; false when oclif
 * must (see `readSyncFlags`). Sets the exit code like the base command.
 */
export async function runSyncEntry(argv: readonly string[]): Promise<boolean> {
  const flags = readSyncFlags(argv);
  if (!flags) return false;
  guardStdout();
  const abort = new AbortController();
  const stopWatching = abortOnInterrupt(abort);
  let settings: Settings | undefined;
  const context = {
    settings: () => (settings ??= commandSettings(requireDataDir(resolveDataDir(flags.dataDir)))),
    json: flags.json,
    signal: abort.signal,
  };
  try {
    const summary = await runSyncFlow(flags.request, context);
    if (flags.json) writeJson(successEnvelope(summary));
    else {
      const text = renderRunSummary(summary);
      if (text) writeStdout(text);
    }
  } catch (err) {
    process.exitCode = reportFailure(toEvermeError(err), flags.json, err);
  } finally {
    stopWatching();
  }
  return true;
}
