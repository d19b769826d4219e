import type Database from 'better-sqlite3';
import * as z from 'zod';
import type { SinkName } from '../config/settings.js';
import { DeliveredKeyStore } from '../store/delivered-key-store.js';
import { FingerprintStore } from '../store/fingerprint-store.js';
import { LocalStore } from '../store/local-store.js';
import { RunStore, type RunRecord } from '../store/run-store.js';

/** What one sink holds, and what the latest import or sync did there. */
export interface SinkStatus {
  sink: SinkName;
  /** Sessions the sink took whole at least once (it keeps a fingerprint of each). */
  sessions: number;
  conversations: number;
  messages: number;
  lastRun?: { kind: 'import' | 'sync'; at: string; delivered: number; failed: number; messages: number };
}

/** The per-sink part of a run's recorded summary (see RunSummary.sinks); older runs have none. */
const runSinksSchema = z.array(
  z.looseObject({
    sink: z.enum(['local', 'everme']),
    sessions: z.looseObject({ delivered: z.number(), failed: z.number() }),
    messages: z.number(),
  }),
);

function latest(runs: RunStore): RunRecord | undefined {
  const candidates = [runs.last('import'), runs.last('sync')].filter((r): r is RunRecord => r?.finishedAtMs !== undefined);
  return candidates.sort((a, b) => b.finishedAtMs! - a.finishedAtMs!)[0];
}

/** Each sink of the setup, from the state file (undefined db: nothing recorded yet). */
export function sinkStatuses(db: Database.Database | undefined, sinks: readonly SinkName[]): SinkStatus[] {
  if (!db) return sinks.map((sink) => ({ sink, sessions: 0, conversations: 0, messages: 0 }));
  const fingerprints = new FingerprintStore(db);
  const run = latest(new RunStore(db));
  const recorded = runSinksSchema.safeParse(run?.summary?.['sinks']);
  return sinks.map((sink) => {
    const counts = sink === 'local' ? new LocalStore(db).counts() : new DeliveredKeyStore(db).counts(sink);
    const status: SinkStatus = { sink, sessions: fingerprints.count(sink), ...counts };
    const mine = recorded.success ? recorded.data.find((s) => s.sink === sink) : undefined;
    if (run && mine && (run.kind === 'import' || run.kind === 'sync')) {
      status.lastRun = { kind: run.kind, at: new Date(run.finishedAtMs!).toISOString(), delivered: mine.sessions.delivered, failed: mine.sessions.failed, messages: mine.messages };
    }
    return status;
  });
}

export function renderSinkStatus(s: SinkStatus): string {
  const last = s.lastRun ? `; last ${s.lastRun.kind} ${s.lastRun.at}: ${s.lastRun.delivered} delivered, ${s.lastRun.failed} failed, ${s.lastRun.messages} messages` : '';
  return `  ${`${s.sink}:`.padEnd(12)}${s.sessions} sessions, ${s.conversations} conversations, ${s.messages} messages${last}`;
}
