import type { SinkName } from '../config/settings.js';
import { EvermeError } from '../core/errors.js';
import { totalsByCode, type WarningCode, type WarningEntry } from '../core/warnings.js';
import type { DeliveryMode } from '../sinks/sink.js';
import type { SessionOutcome, SinkStatus } from './session-outcome.js';

export interface RunFailure {
  sessionId: string;
  type: string;
  message: string;
}

/** What one sink did over the run. */
export interface SinkSummary {
  sink: SinkName;
  sessions: Record<SinkStatus, number>;
  messages: number;
  requests: number;
  removed: number;
  failures: RunFailure[];
}

export interface RunSummary {
  mode: DeliveryMode;
  /** The sink the run is named for (the gateway when it is one of them); `messages`, `requests` and `removed` are its. */
  sink: SinkName;
  dryRun: boolean;
  since?: string;
  sessions: { scanned: number; delivered: number; unchanged: number; empty: number; excluded: number; forgotten: number; failed: number };
  /** Sessions read whose workspace nobody knows: no exclusion could be checked for them. */
  workspaceUnknown: number;
  messages: number;
  removed: number;
  requests: number;
  bytes: number;
  warnings: Partial<Record<WarningCode, number>>;
  /** One per failed session: the session's own failure, else its first sink's. */
  failures: RunFailure[];
  /** `gateway_response_invalid`: acknowledged (2xx) with an unreadable body, counted as delivered. */
  invalidResponses: Array<{ sessionId: string; requestId: string; reason: string }>;
  cancelled: boolean;
  /** Every sink of the run, the named one first. */
  sinks: SinkSummary[];
}

/** Errors that fail every remaining session of a sink the same way: that sink takes no more this run. */
const FATAL_TYPES = new Set(['auth', 'not_logged_in']);

/** Adds up a run's session outcomes as they end, and says which sinks a fatal failure stopped. */
export class RunTally {
  readonly summary: RunSummary;
  /** Sinks that will fail every remaining session the same way (a rejected key). */
  readonly stopped = new Set<SinkName>();
  private readonly warnings: WarningEntry[] = [];
  private counted = 0;

  constructor(opts: { mode: DeliveryMode; sinks: readonly SinkName[]; dryRun: boolean; since?: string }) {
    const blank = (): Record<SinkStatus, number> => ({ delivered: 0, unchanged: 0, empty: 0, failed: 0 });
    this.summary = {
      mode: opts.mode,
      sink: opts.sinks[0]!,
      dryRun: opts.dryRun,
      since: opts.since,
      sessions: { scanned: 0, delivered: 0, unchanged: 0, empty: 0, excluded: 0, forgotten: 0, failed: 0 },
      workspaceUnknown: 0,
      messages: 0,
      removed: 0,
      requests: 0,
      bytes: 0,
      warnings: {},
      failures: [],
      invalidResponses: [],
      cancelled: false,
      sinks: opts.sinks.map((sink) => ({ sink, sessions: blank(), messages: 0, requests: 0, removed: 0, failures: [] })),
    };
  }

  /** Every sink stopped: nothing is left to deliver to. */
  get allStopped(): boolean {
    return this.summary.sinks.every((s) => this.stopped.has(s.sink));
  }

  /** A sink failed a session: one that will fail every remaining session the same way takes no more. */
  sinkFailed(sink: SinkName, error: EvermeError): void {
    if (FATAL_TYPES.has(error.type)) this.stopped.add(sink);
  }

  /** Warnings of the run that belong to no session's read (a manifest that could not be read). */
  addWarnings(entries: readonly WarningEntry[]): void {
    this.warnings.push(...entries);
  }

  add(outcome: SessionOutcome): void {
    const summary = this.summary;
    this.counted += 1;
    summary.bytes += outcome.bytes;
    if (outcome.workspaceUnknown) summary.workspaceUnknown += 1;
    this.warnings.push(...outcome.warnings);
    outcome.sinks.forEach((sink, i) => {
      const total = summary.sinks[i]!;
      const counts = outcome.status !== 'forgotten' && outcome.status !== 'excluded' && sink.error?.type !== 'cancelled';
      if (counts) total.sessions[sink.status] += 1;
      total.messages += sink.messages;
      total.requests += sink.requests;
      total.removed += sink.removed;
      this.warnings.push(...sink.warnings);
      for (const r of sink.invalidResponses) summary.invalidResponses.push({ sessionId: outcome.sessionId, ...r });
      if (sink.error && sink.error.type !== 'cancelled') total.failures.push({ sessionId: outcome.sessionId, type: sink.error.type, message: sink.error.message });
      if (sink.error) this.sinkFailed(sink.sink, sink.error);
    });
    const primary = summary.sinks[0]!;
    summary.messages = primary.messages;
    summary.requests = primary.requests;
    summary.removed = primary.removed;
    this.count(outcome);
  }

  private count(outcome: SessionOutcome): void {
    const summary = this.summary;
    if (outcome.status !== 'failed') {
      summary.sessions[outcome.status] += 1;
      return;
    }
    const error = outcome.error ?? new EvermeError('internal', 'unknown failure');
    if (error.type === 'cancelled') {
      summary.cancelled = true;
      return;
    }
    summary.sessions.failed += 1;
    // A session failed only because its sink stopped earlier has no failure of its own to list.
    if (outcome.error) summary.failures.push({ sessionId: outcome.sessionId, type: error.type, message: error.message });
  }

  /** The run ends: sessions never started (every sink stopped) count as failed, so the totals add up. */
  finish(scanned: number, cancelled: boolean): RunSummary {
    const summary = this.summary;
    summary.sessions.scanned = scanned;
    if (cancelled) summary.cancelled = true;
    const notStarted = scanned - this.counted;
    if (this.allStopped && !summary.cancelled && notStarted > 0) {
      summary.sessions.failed += notStarted;
      for (const sink of summary.sinks) sink.sessions.failed += notStarted;
    }
    summary.warnings = totalsByCode(this.warnings);
    return summary;
  }
}
