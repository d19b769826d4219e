import type { SinkName } from '../config/settings.js';
import { toEvermeError, type EvermeError } from '../core/errors.js';
import type { ConversationMeta, DeliveryMode, Handoff, PlanPart, SessionContext, SessionEnd, SessionStateWrite, Sink, SinkSession } from '../sinks/sink.js';
import type { FingerprintStore, SessionFingerprint } from '../store/fingerprint-store.js';
import type { SessionStore } from '../store/session-store.js';
import { chooseHistoryFile, type HistoryFileChoice, type HistoryFileStat } from '../transcript/session-history.js';
import type { SessionRef } from '../transcript/types.js';
import { fingerprintFromStat, sameFingerprint, unchangedByStat } from './fingerprint.js';
import type { Planner } from './planner.js';
import type { PlanJob, PlanResult, PlanTarget } from './session-plan.js';
import type { PrivacyGate, ScopeDecision } from './privacy-gate.js';
import {
  blankOutcome,
  cancelled,
  failSession,
  firstSinkError,
  sessionStatusOf,
  type SessionOutcome,
  type SinkOutcome,
} from './session-outcome.js';
import type { SessionLocks } from './session-lock.js';

export type { DeliveryMode };

/**
 * The main thread's side of one session: the cheap checks (forgotten, unchanged, excluded), the
 * session lock, then the plan (made by the planner, on a worker thread in a bulk run) delivered
 * part by part to every sink whose marks it passes, and each sink's commit. Every mode runs exactly
 * this; only the sinks' own rules (the gateway's flushes) differ by mode.
 */
export interface DeliveryContext {
  mode: DeliveryMode;
  /** The run's sinks, the one the summary names first. */
  sinks: readonly Sink[];
  marks: { fingerprints: FingerprintStore; sessions: SessionStore };
  planner: Planner;
  locks?: SessionLocks;
  dryRun: boolean;
  signal?: AbortSignal;
  lockTimeoutMs?: number;
  /** Tombstones and exclusions, checked before a session's history is read. */
  privacy?: PrivacyGate;
  /** A conversation boundary (the host's PreCompact or SessionEnd): the conversation is flushed whatever the mode. */
  boundary?: boolean;
  /** Called with the number of messages of each part the first sink took. */
  onDelivered?: (messages: number) => void;
  /** Called once every sink holds the session's end: only the commits are left to wait for, and a bulk run starts the next session. */
  onHandedOff?: () => void;
  /** Read once by a run over many sessions, for the first checks (see `RunSnapshot`). */
  snapshot?: RunSnapshot;
  /** Sinks a fatal failure (a rejected key) stopped earlier in the run: skipped, and counted failed. */
  stopped?: ReadonlySet<SinkName>;
  /** Told of a sink's failure at once, before the session ends, so the run can stop a sink that will only fail again. */
  onSinkFailure?: (sink: SinkName, error: EvermeError) => void;
}

/**
 * Fingerprints and tombstones as a run over many sessions found them at its start, in two queries
 * per sink instead of two per session: a no-op sync over 3,000 sessions spent ~10% of its time on
 * those lookups. Only the first, cheap checks use it; under the session lock both are read again,
 * live, so a forget or a delivery by another process that happened meanwhile still wins.
 */
export interface RunSnapshot {
  fingerprint(sink: SinkName, sessionId: string): SessionFingerprint | undefined;
  forgotten(conversationId: string): boolean;
}

/** One sink's part in one session. */
interface SinkRun {
  sink: Sink;
  outcome: SinkOutcome;
  /** Whether its fingerprint says the file changed since it last took it: it takes part in the plan. */
  changed: boolean;
  stored?: SessionFingerprint;
  delivered?: Set<string>;
  session?: SinkSession;
  onFailure?: (sink: SinkName, error: EvermeError) => void;
}

/** The workspace decision, made at most once per session and only when something needs it. */
class ScopeCheck {
  private decided: Promise<ScopeDecision | undefined> | undefined;
  constructor(
    private readonly session: SessionRef,
    private readonly privacy: PrivacyGate | undefined,
  ) {}
  decide(): Promise<ScopeDecision | undefined> {
    return (this.decided ??= this.privacy ? this.privacy.scope(this.session) : Promise.resolve(undefined));
  }
  async excluded(): Promise<boolean> {
    return (await this.decide())?.status === 'excluded';
  }
  async wasExcluded(): Promise<boolean> {
    return this.decided !== undefined && (await this.excluded());
  }
}

type ChosenFile = HistoryFileChoice & { file: string; stat: HistoryFileStat };

function isChosen(choice: HistoryFileChoice): choice is ChosenFile {
  return choice.source !== 'none' && choice.file !== undefined && choice.stat !== undefined;
}

/** A session past its first checks, which found something to wait for: what `deliverSession` goes on from. */
export class StartedDelivery {
  constructor(
    readonly session: SessionRef,
    readonly outcome: SessionOutcome,
    readonly runs: SinkRun[],
    readonly active: SinkRun[],
    readonly chosen: ChosenFile,
    /** An unchanged session's workspace recheck that had to wait (`PrivacyGate.redecide`). */
    readonly recheck: Promise<void> | undefined,
  ) {}
}

/**
 * A session's first checks, which need no wait: forgotten, no history yet, or unchanged for every
 * sink and owing none of them its end (the store; not the gateway, `Sink.endsUnchanged`) and its
 * workspace rechecked at once. Such a session's outcome is returned now; any other is started for
 * `deliverSession` to go on. A bulk run passes the thousands of unchanged sessions of a no-op sync
 * through here without a promise, a slot or a turn of the event loop each.
 */
export function startDelivery(session: SessionRef, ctx: DeliveryContext): SessionOutcome | StartedDelivery {
  const outcome = blankOutcome(session, 'unchanged', ctx.sinks.map((sink) => sink.name));
  const runs: SinkRun[] = ctx.sinks.map((sink, i) => ({ sink, outcome: outcome.sinks[i]!, changed: false, ...(ctx.onSinkFailure ? { onFailure: ctx.onSinkFailure } : {}) }));
  for (const run of runs) if (ctx.stopped?.has(run.sink.name)) run.outcome.status = 'failed';
  const active = runs.filter((run) => run.outcome.status !== 'failed');
  try {
    // Before anything of the session is read: a forgotten conversation is never delivered again.
    if (ctx.snapshot ? ctx.snapshot.forgotten(outcome.conversationId) : ctx.privacy?.forgotten(outcome.conversationId)) return ended(outcome, 'forgotten');
    for (const run of active) run.stored = ctx.snapshot ? ctx.snapshot.fingerprint(run.sink.name, session.sessionId) : ctx.marks.fingerprints.get(run.sink.name, session.sessionId);
    // A session read before is read again when a rewind left its messages.jsonl empty, so what it
    // had is removed; one never read (just created, its file still empty) stays silent.
    const chosen = chooseHistoryFile(session.dir, { emptied: active.some((run) => run.stored !== undefined) });
    outcome.source = chosen.source;
    if (!isChosen(chosen)) return ended(outcome, 'empty');
    // Equal path, size, mtime and inode already mean equal fingerprints: the head is read only when
    // the file changed, for the fingerprint committed after this read.
    for (const run of active) run.changed = !unchangedByStat(run.stored, chosen.file, chosen.stat);
    if (active.some((run) => run.changed)) return new StartedDelivery(session, outcome, runs, active, chosen, undefined);
    // Not read, but the session index or a hook may place it elsewhere now.
    const recheck = ctx.privacy?.redecide(session);
    if (recheck === undefined && (ctx.dryRun || !active.some((run) => run.sink.endsUnchanged))) return settledUnchanged(outcome, ctx.dryRun);
    return new StartedDelivery(session, outcome, runs, active, chosen, recheck);
  } catch (err) {
    return failSession(outcome, toEvermeError(err));
  }
}

export async function deliverSession(session: SessionRef, ctx: DeliveryContext, started = startDelivery(session, ctx)): Promise<SessionOutcome> {
  if (!(started instanceof StartedDelivery)) return started;
  const { outcome, runs, active, chosen } = started;
  const scope = new ScopeCheck(session, ctx.privacy);
  let locked = false;
  try {
    if (!active.some((run) => run.changed)) {
      await started.recheck;
      return await settle(session, ctx, outcome, active, chosen, scope);
    }

    // Its workspace, learnt from as little as it takes, decides whether the history is read at all.
    const decision = await scope.decide();
    if (decision?.status === 'excluded') return ended(outcome, 'excluded');
    if (decision?.status === 'skipped') {
      outcome.skippedKind = decision.kind;
      return ended(outcome, 'skipped');
    }
    if (decision?.status === 'unknown') outcome.workspaceUnknown = true;
    // The workspace decided among every source's claim (see `decideWorkspace`) is the one stored.
    if (decision?.status === 'included') outcome.workspaceDir = decision.workspaceDir;
    if (!ctx.dryRun && ctx.locks !== undefined) {
      await ctx.locks.acquire(session.sessionId, ctx.lockTimeoutMs ?? 30_000, ctx.signal);
      locked = true;
    }
    // A forget that ran while we waited for the lock wins.
    if (ctx.privacy?.forgotten(outcome.conversationId)) return ended(outcome, 'forgotten');
    // Another process may have finished this very file, for some sink, while we waited for the lock.
    // Only a sink that holds a fingerprint can have: the head is read for it (a cold import reads none
    // here; the plan works the fingerprint out where it reads the file anyway).
    let fingerprint: SessionFingerprint | undefined;
    for (const run of active) {
      const stored = run.changed ? ctx.marks.fingerprints.get(run.sink.name, session.sessionId) : undefined;
      if (stored === undefined) continue;
      fingerprint ??= fingerprintFromStat(chosen.file, chosen.stat);
      if (sameFingerprint(stored, fingerprint)) run.changed = false;
    }
    if (!active.some((run) => run.changed)) return await settle(session, ctx, outcome, active, chosen, scope);
    return await planAndDeliver(session, ctx, outcome, active, fingerprint, scope);
  } catch (err) {
    for (const run of runs) run.session?.abandon();
    return failSession(outcome, toEvermeError(err));
  } finally {
    if (locked) ctx.locks?.release(session.sessionId);
  }
}

/**
 * An unchanged session no sink is owed anything for: its status is every sink's (a sink stopped
 * earlier in the run included), as `settle` gives it. Its workspace was never decided in this run,
 * so it cannot have been found excluded.
 */
function settledUnchanged(outcome: SessionOutcome, dryRun: boolean): SessionOutcome {
  if (dryRun) return outcome;
  outcome.status = sessionStatusOf(outcome.sinks);
  if (outcome.status === 'failed') outcome.error = firstSinkError(outcome.sinks);
  return outcome;
}

function ended(outcome: SessionOutcome, status: 'forgotten' | 'empty' | 'excluded' | 'skipped'): SessionOutcome {
  outcome.status = status;
  // No history yet is nothing to send to any sink, one a rejected key stopped included: each sink's
  // line says empty, as the summary does, and adds up with it.
  if (status === 'empty') for (const sink of outcome.sinks) sink.status = 'empty';
  return outcome;
}

/** What a sink is told about the session it is about to be given. */
function contextFor(session: SessionRef, conversationId: string, ctx: DeliveryContext, scope: ScopeCheck): SessionContext {
  return {
    conversationId,
    sessionId: session.sessionId,
    createdAtMs: session.createdAtMs,
    mode: ctx.mode,
    boundary: ctx.boundary ?? false,
    ...(ctx.signal ? { signal: ctx.signal } : {}),
    excluded: () => scope.excluded(),
  };
}

/**
 * Nothing to read for any sink: each that may owe something without new messages (the gateway's
 * flush of a conversation the hook delivered whole, `Sink.endsUnchanged`) is still given the
 * session's end; the others (the store) keep it `unchanged` without being begun, as a sync passes
 * thousands of such sessions. The session's status is every sink's, a sink stopped earlier in the
 * run included.
 */
async function settle(
  session: SessionRef,
  ctx: DeliveryContext,
  outcome: SessionOutcome,
  active: SinkRun[],
  chosen: HistoryFileChoice,
  scope: ScopeCheck,
): Promise<SessionOutcome> {
  if (ctx.dryRun) return outcome;
  const ending = active.filter((run) => run.sink.endsUnchanged);
  if (ending.length > 0) {
    const conversation: ConversationMeta = {
      conversationId: outcome.conversationId,
      sessionId: session.sessionId,
      source: chosen.source === 'ledger' ? 'ledger' : 'messages',
      ...(chosen.file === undefined ? {} : { historyFile: chosen.file }),
      createdAtMs: session.createdAtMs,
    };
    for (const run of ending) run.session = await run.sink.begin(contextFor(session, outcome.conversationId, ctx, scope));
    const committed = await handOff(ending, () => ({ conversation }));
    ctx.onHandedOff?.();
    await committed();
    for (const run of ending) settleStatus(run, false);
  }
  outcome.status = sessionStatusOf(outcome.sinks);
  if (outcome.status === 'failed') outcome.error = firstSinkError(outcome.sinks);
  else if (await scope.wasExcluded()) outcome.status = 'excluded';
  return outcome;
}

/** Plans the session for the sinks it changed for, delivers the parts as they come, then ends it at every sink. */
async function planAndDeliver(
  session: SessionRef,
  ctx: DeliveryContext,
  outcome: SessionOutcome,
  active: SinkRun[],
  fingerprint: SessionFingerprint | undefined,
  scope: ScopeCheck,
): Promise<SessionOutcome> {
  const changed = active.filter((run) => run.changed);
  for (const run of changed) run.delivered = run.sink.deliveredKeys(outcome.conversationId);
  const targets = targetsOf(changed, ctx.dryRun);
  if (!ctx.dryRun) for (const run of active) run.session = await run.sink.begin(contextFor(session, outcome.conversationId, ctx, scope));
  const recordedWorkspace = ctx.marks.sessions.workspaceFor(session.sessionId);
  const job: PlanJob = {
    session,
    targets: targets.map((t) => t.target),
    ...(fingerprint ? { fingerprint } : {}),
    ...(recordedWorkspace === undefined ? {} : { recordedWorkspace }),
    ...(outcome.workspaceDir === undefined ? {} : { decidedWorkspace: outcome.workspaceDir }),
  };
  const emit = (i: number, part: PlanPart): Promise<void> => deliverPart(ctx, targets[i]!.runs, changed, part);
  let result: PlanResult;
  try {
    result = await ctx.planner.plan(job, emit);
  } catch (err) {
    if (!(err instanceof AllSinksFailed)) throw err;
    // Each sink failed with its own reason; the others (unchanged ones) have nothing to end.
    for (const run of active) run.session?.abandon();
    outcome.status = 'failed';
    outcome.error = firstSinkError(outcome.sinks);
    return outcome;
  }
  if (result.status === 'empty') {
    for (const run of active) run.session?.abandon();
    return ended(outcome, 'empty');
  }
  const { conversation } = result;
  outcome.source = conversation.source;
  outcome.bytes = result.fingerprint.size;
  outcome.warnings = result.warnings;
  let committed: (() => Promise<void>) | undefined;
  if (!ctx.dryRun) {
    for (const [i, target] of targets.entries()) {
      const gone = result.gone[i]!;
      const moves = result.rekeyed[i]!;
      for (const run of target.runs) {
        if (run.outcome.status === 'failed') continue;
        if (moves.length > 0) run.session?.rekey(conversation, moves);
        if (gone.length > 0) run.session?.retract(conversation, gone);
      }
    }
    const stateFor = (run: SinkRun): SessionStateWrite | undefined =>
      run.changed
        ? {
            sinkName: run.sink.name,
            sessionId: session.sessionId,
            warningsOwner: { ...conversation, sessionDir: session.dir },
            warnings: result.warnings,
            fingerprint: result.fingerprint,
          }
        : undefined;
    committed = await handOff(active, (run) => {
      const state = stateFor(run);
      return state ? { conversation, state } : { conversation };
    });
  }
  ctx.onHandedOff?.();
  await committed?.();
  for (const run of active) settleStatus(run, run.changed && run.stored === undefined && (run.delivered?.size ?? 0) === 0);
  outcome.status = sessionStatusOf(outcome.sinks);
  if (outcome.status === 'failed') outcome.error = firstSinkError(outcome.sinks);
  return outcome;
}

/** Sinks with the same marks share one delta and one batching (one target of the plan). */
function targetsOf(changed: SinkRun[], dryRun: boolean): Array<{ runs: SinkRun[]; target: PlanTarget }> {
  const groups: Array<{ runs: SinkRun[]; target: PlanTarget }> = [];
  for (const run of changed) {
    const delivered = run.delivered ?? new Set<string>();
    const same = groups.find((g) => g.target.delivered.size === delivered.size && [...delivered].every((key) => g.target.delivered.has(key)));
    const group = same ?? { runs: [], target: { delivered, requests: false, encoded: false, rows: false } };
    if (!same) groups.push(group);
    group.runs.push(run);
    // A dry run only counts: it needs neither the messages nor their rows.
    if (!dryRun && run.sink.takes === 'requests') group.target.encoded = true;
    if (!dryRun && run.sink.takes === 'rows') group.target.rows = true;
  }
  return groups;
}

/**
 * One part of the plan to the target's sinks that have not failed; a sink that fails now is out
 * for this session. Once no sink of the plan is left, the plan stops.
 */
async function deliverPart(ctx: DeliveryContext, runs: SinkRun[], planned: SinkRun[], part: PlanPart): Promise<void> {
  if (ctx.signal?.aborted) throw cancelled();
  if (planned.every((run) => run.outcome.status === 'failed')) throw new AllSinksFailed();
  const live = runs.filter((run) => run.outcome.status !== 'failed');
  if (live.some((run) => run.sink === ctx.sinks[0])) ctx.onDelivered?.(part.messageCount);
  if (ctx.dryRun) {
    for (const run of live) {
      run.outcome.messages += part.messageCount;
      run.outcome.requests += part.requestCount;
    }
    return;
  }
  const results = await Promise.allSettled(live.map((run) => run.session!.deliver(part)));
  results.forEach((result, i) => {
    if (result.status === 'rejected') failRun(live[i]!, result.reason);
  });
}

/** Every sink of a target failed mid-plan: reading on would serve nobody. */
class AllSinksFailed extends Error {}

function failRun(run: SinkRun, reason: unknown): void {
  run.outcome.status = 'failed';
  run.outcome.error = toEvermeError(reason);
  run.session?.abandon();
  run.onFailure?.(run.sink.name, run.outcome.error);
}

/**
 * Ends the session at every sink still in it; resolves once each holds it (a store that waits for
 * the gateway's marks: once the gateway does), with the wait for every commit (which a failed
 * commit fails the sink of).
 *
 * The gateway's marks and the store's rows share one file. On a nearly full disk whichever commits
 * first takes the last space: the store's rows are written again by the next run at no cost to
 * anyone, but marks of requests the gateway acknowledged, once lost, make the next run send those
 * requests again. So there the store is handed the session's end only once the gateway's marks of
 * it are committed (or failed). Elsewhere both go at once: the store does not wait for the
 * gateway's last answer, and nothing is lost to space.
 */
async function handOff(active: SinkRun[], endFor: (run: SinkRun) => SessionEnd): Promise<() => Promise<void>> {
  const live = active.filter((run) => run.outcome.status !== 'failed' && run.session);
  const sending = live.filter((run) => run.sink.takes === 'requests');
  const yielding = sending.length > 0 ? live.filter((run) => run.sink.takes !== 'requests' && run.sink.nearlyFull?.() === true) : [];
  const first = live.filter((run) => !yielding.includes(run));
  const finish = (run: SinkRun): Promise<Handoff> => run.session!.finish(endFor(run));
  const handed = await Promise.allSettled(first.map(finish));
  const durable = handed.map((handoff, i) => {
    if (handoff.status === 'fulfilled') return handoff.value.durable;
    failRun(first[i]!, handoff.reason);
    return Promise.resolve();
  });
  const marked = Promise.allSettled(durable);
  for (const run of yielding) {
    const stored = marked.then(() => finish(run)).then((handoff) => handoff.durable);
    // Awaited by the caller once every sink holds the session; a failure meanwhile is not unhandled.
    stored.catch(() => undefined);
    durable.push(stored);
  }
  const runs = [...first, ...yielding];
  return async () => {
    (await Promise.allSettled(durable)).forEach((result, i) => {
      if (result.status === 'rejected') failRun(runs[i]!, result.reason);
    });
  };
}

/** A sink's status once its session ended, from what it took; `firstSeen`: it had never seen the session. */
function settleStatus(run: SinkRun, firstSeen: boolean): void {
  const tally = run.session?.tally;
  if (tally) {
    run.outcome.messages += tally.messages;
    run.outcome.requests += tally.requests;
    run.outcome.removed += tally.removed;
    run.outcome.invalidResponses.push(...tally.invalidResponses);
    run.outcome.warnings = tally.warnings;
  }
  if (run.outcome.status === 'failed') return;
  // A session never read before (no fingerprint, nothing delivered) that yields nothing is empty, never "unchanged".
  run.outcome.status = run.outcome.messages > 0 || run.outcome.removed > 0 ? 'delivered' : firstSeen ? 'empty' : 'unchanged';
}
