import path from 'node:path';
import { EvermeError, toEvermeError } from '../core/errors.js';
import type { SinkName } from '../config/settings.js';
import { WarningCollector, type WarningEntry } from '../core/warnings.js';
import type { AgentMessage } from '../core/agent-message.js';
import { Converter } from '../memory/convert.js';
import { TaskBatcher, type PlannedRequest } from '../memory/task-batcher.js';
import type { ConversationMeta, DeliveryReceipt, Sink } from '../sinks/sink.js';
import { chooseHistoryFile, openSessionHistory } from '../transcript/session-history.js';
import { openLedgerCarryover } from '../transcript/ledger-carryover.js';
import type { SessionRef } from '../transcript/types.js';
import { conversationIdFor } from '../core/conversation-id.js';
import { fingerprintFile, fingerprintFromStat, sameFingerprint, unchangedByStat } from './fingerprint.js';
import type { PrivacyGate, ScopeDecision } from './privacy-gate.js';
import type { SessionLocks } from './session-lock.js';
import type { SessionFingerprint, StateStore } from '../store/state-store.js';

/** import flushes every conversation's last request, sync only at a finished turn, the hook only at a conversation boundary. */
export type DeliveryMode = 'import' | 'sync' | 'hook';

/** `excluded`: its workspace is excluded; `forgotten`: the user forgot it (a tombstone). Neither is read. */
export type SessionStatus = 'delivered' | 'unchanged' | 'empty' | 'excluded' | 'forgotten' | 'failed';

export interface SessionOutcome {
  sessionId: string;
  conversationId: string;
  status: SessionStatus;
  source: 'messages' | 'ledger' | 'none';
  messages: number;
  requests: number;
  removed: number;
  bytes: number;
  warnings: WarningEntry[];
  /** Requests the gateway acknowledged (2xx) with a body that could not be read: never resent. */
  invalidResponses: Array<{ requestId: string; reason: string }>;
  /** Read, but nobody knows its workspace, so no exclusion could be checked (never guessed). */
  workspaceUnknown?: boolean;
  error?: EvermeError;
}

export interface DeliveryContext {
  mode: DeliveryMode;
  sink: Sink;
  state: StateStore;
  locks?: SessionLocks;
  dryRun: boolean;
  signal?: AbortSignal;
  lockTimeoutMs?: number;
  /** Tombstones and exclusions, checked before a session's history is read. */
  privacy?: PrivacyGate;
  /**
   * A conversation boundary (the host's PreCompact or SessionEnd): whatever the mode, the last
   * request flushes, and a flush still owed is sent on its own.
   */
  boundary?: boolean;
  /** Called after each acknowledged request with the number of messages it carried. */
  onDelivered?: (messages: number) => void;
  /**
   * Called once the session's history was read and only its commit is left to wait for: a bulk run
   * starts reading the next session meanwhile.
   */
  onReadDone?: () => void;
  /** Read once by a run over many sessions, for the first checks (see `RunSnapshot`). */
  snapshot?: RunSnapshot;
}

/**
 * Fingerprints and tombstones as a run over many sessions found them at its start, in two queries
 * instead of two per session: a no-op sync over 3,000 sessions spent ~10% of its time on those
 * lookups. Only the first, cheap checks use it; under the session lock both are read again, live,
 * so a forget or a delivery by another process that happened meanwhile still wins.
 */
export interface RunSnapshot {
  fingerprint(sessionId: string): SessionFingerprint | undefined;
  forgotten(conversationId: string): boolean;
}

/**
 * Whether an upload ends in a flush: import always, the hook never, sync only when the upload
 * ends on a finished turn, which is known once the last message has been read. A conversation
 * boundary (the host's PreCompact or SessionEnd) always flushes, whatever the mode.
 */
type FlushPlan = 'always' | 'at-turn-end' | 'never';

function flushPlanFor(mode: DeliveryMode, boundary: boolean): FlushPlan {
  if (boundary) return 'always';
  switch (mode) {
    case 'import':
      return 'always';
    case 'sync':
      return 'at-turn-end';
    case 'hook':
      return 'never';
  }
}

function endsTurn(last: AgentMessage | undefined): boolean {
  return last?.role === 'assistant' && last.turnComplete;
}

/**
 * While a sync upload cannot yet tell whether it ends in a flush, its requests wait in memory up to
 * this many bytes. Past it the oldest goes out with `sync: true`: a synchronous add that no flush
 * follows costs the server a little time, a queued add that a flush overtakes loses memories.
 */
export const MAX_UNDECIDED_BYTES = 8 * 1024 * 1024;

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new EvermeError('cancelled', 'Interrupted');
}

/**
 * One session through the whole pipeline: read → replay → convert → delta past the marks → batch →
 * sink → commit. Every mode runs exactly this; only the flush rule differs.
 */
/** A session before anything happened to it: nothing read, nothing sent. */
export function blankOutcome(session: SessionRef, status: SessionStatus): SessionOutcome {
  return {
    sessionId: session.sessionId,
    conversationId: conversationIdFor(session.sessionId),
    status,
    source: 'none',
    messages: 0,
    requests: 0,
    removed: 0,
    bytes: 0,
    warnings: [],
    invalidResponses: [],
  };
}

export async function deliverSession(session: SessionRef, ctx: DeliveryContext): Promise<SessionOutcome> {
  const outcome = blankOutcome(session, 'unchanged');
  const conversationId = outcome.conversationId;
  const sinkName: SinkName = ctx.sink.name;
  let locked = false;
  /** The history file, once chosen: warnings about a flush-only request name it. */
  let chosenFile: string | undefined;
  let decided: ScopeDecision | undefined;
  const decideScope = async (): Promise<ScopeDecision | undefined> => (decided ??= await ctx.privacy?.scope(session));
  /**
   * The hook never flushes, so a conversation it delivered completely would never be flushed:
   * import (always) and sync (at a finished turn) send the flush on its own when one is owed.
   */
  const settleOwedFlush = async (source: 'messages' | 'ledger'): Promise<SessionOutcome> => {
    const boundary = ctx.boundary ?? false;
    if (ctx.dryRun || (ctx.mode === 'hook' && !boundary)) return outcome;
    const owed = ctx.sink.pendingFlush(conversationId);
    if (!owed || (ctx.mode === 'sync' && !boundary && !owed.endsTurn)) return outcome;
    // A flush is a request about the conversation too: none for an excluded workspace.
    if ((await decideScope())?.status === 'excluded') {
      outcome.status = 'excluded';
      return outcome;
    }
    throwIfAborted(ctx.signal);
    // Claimed, not just read: a concurrent run that sees the same owed flush must not send it too.
    const claim = ctx.sink.claimPendingFlush(conversationId, ctx.mode === 'sync' && !boundary);
    if (claim === undefined) return outcome;
    let receipt: DeliveryReceipt;
    try {
      receipt = await ctx.sink.deliver({
        conversation: { conversationId, sessionId: session.sessionId, source, createdAtMs: session.createdAtMs },
        messages: [],
        keys: [],
        flush: true,
        sync: false,
        ...(ctx.signal ? { waitSignal: ctx.signal } : {}),
      });
    } catch (err) {
      ctx.sink.releaseFlushClaim(conversationId, claim);
      throw err;
    }
    outcome.requests += 1;
    if (receipt.responseInvalid) {
      outcome.invalidResponses.push(receipt.responseInvalid);
      const relFile = path.basename(chosenFile ?? '');
      outcome.warnings = [...outcome.warnings, { code: 'gateway_response_invalid', count: 1, samples: [{ file: relFile, line: 0 }] }];
    }
    return outcome;
  };
  try {
    // Before anything of the session is read: a forgotten conversation is never delivered again.
    if (ctx.snapshot ? ctx.snapshot.forgotten(conversationId) : ctx.privacy?.forgotten(conversationId)) {
      outcome.status = 'forgotten';
      return outcome;
    }
    const chosen = await chooseHistoryFile(session.dir);
    outcome.source = chosen.source;
    if (chosen.source === 'none' || !chosen.file || !chosen.stat) {
      outcome.status = 'empty';
      return outcome;
    }
    const chosenSource = chosen.source;
    chosenFile = chosen.file;
    // Equal path, size, mtime and inode already mean equal fingerprints: the head is read only when
    // the file changed, for the fingerprint committed after this read.
    const storedFingerprint = ctx.snapshot ? ctx.snapshot.fingerprint(session.sessionId) : ctx.state.getFingerprint(sinkName, session.sessionId);
    if (unchangedByStat(storedFingerprint, chosen.file, chosen.stat)) {
      return await settleOwedFlush(chosenSource);
    }
    let fingerprint = fingerprintFromStat(chosen.file, chosen.stat);

    // Its workspace, learnt from as little as it takes, decides whether the history is read at all.
    const scope = await decideScope();
    if (scope?.status === 'excluded') {
      outcome.status = 'excluded';
      return outcome;
    }
    if (scope?.status === 'unknown') outcome.workspaceUnknown = true;

    if (!ctx.dryRun && ctx.locks !== undefined) {
      await ctx.locks.acquire(session.sessionId, ctx.lockTimeoutMs ?? 30_000, ctx.signal);
      locked = true;
    }
    // A forget that ran while we waited for the lock wins.
    if (ctx.privacy?.forgotten(conversationId)) {
      outcome.status = 'forgotten';
      return outcome;
    }
    // Another process may have finished this very file while we waited for the lock.
    if (sameFingerprint(ctx.state.getFingerprint(sinkName, session.sessionId), fingerprint)) return await settleOwedFlush(chosenSource);

    const warnings = new WarningCollector();
    const history = openSessionHistory(session, warnings);
    if (history.source === 'none' || !history.file) {
      outcome.status = 'empty';
      return outcome;
    }
    const historyFile = history.file;
    const source = history.source;
    outcome.source = source;
    // The file may have been chosen differently a moment ago (a messages.jsonl got its first bytes).
    if (historyFile !== chosen.file) fingerprint = await fingerprintFile(historyFile);
    outcome.bytes = fingerprint.size;
    const delivered = ctx.sink.deliveredKeys(conversationId);
    const converter = new Converter(warnings);
    const batcher = new TaskBatcher({ conversationId, warnings });
    const seen = new Set<string>();
    /**
     * The history while it is read; its workspace once it has been. Sessions waiting for their
     * commit must not keep what was read alive (a bulk run has many waiting).
     */
    let reading: { workspaceDir(): string | undefined } = history;
    const meta = (): ConversationMeta => ({
      conversationId,
      sessionId: session.sessionId,
      source,
      workspaceDir: reading.workspaceDir() ?? ctx.state.workspaceFor(session.sessionId),
      historyFile,
      createdAtMs: session.createdAtMs,
    });

    const plan = flushPlanFor(ctx.mode, ctx.boundary ?? false);
    const send = async (request: PlannedRequest, flush: boolean, sync: boolean): Promise<void> => {
      throwIfAborted(ctx.signal);
      if (!ctx.dryRun) {
        const receipt = await ctx.sink.deliver({
          conversation: meta(),
          messages: request.messages,
          keys: request.keys,
          flush,
          sync,
          bytes: request.bytes,
          ...(ctx.signal ? { waitSignal: ctx.signal } : {}),
        });
        if (receipt.responseInvalid) {
          outcome.invalidResponses.push(receipt.responseInvalid);
          warnings.add('gateway_response_invalid', { file: path.relative(session.dir, historyFile), line: 0 });
        }
      }
      outcome.requests += 1;
      outcome.messages += request.messages.length;
      ctx.onDelivered?.(request.messages.length);
    };
    /*
     * Requests wait until it is known whether the upload ends in a flush: every request before a
     * flushing one carries `sync: true`, the others do not. The last request always waits (only the
     * end tells whether it flushes); with a sync upload, the earlier ones wait too (bounded).
     */
    const waiting: PlannedRequest[] = [];
    let waitingBytes = 0;
    // The embedded store has no flushes: holding its requests back would only delay its commits.
    const undecidedLimit = sinkName === 'everme' ? MAX_UNDECIDED_BYTES : 0;
    const enqueue = async (ready: PlannedRequest[]): Promise<void> => {
      for (const request of ready) {
        waiting.push(request);
        waitingBytes += request.bytes;
        while (waiting.length > 1 && (plan !== 'at-turn-end' || waitingBytes > undecidedLimit)) {
          const next = waiting.shift()!;
          waitingBytes -= next.bytes;
          await send(next, false, plan !== 'never');
        }
      }
    };

    const carryover = source === 'messages' ? await openLedgerCarryover(session, delivered) : undefined;
    for (const key of carryover?.keys() ?? []) seen.add(key);
    for await (const item of history.items()) {
      seen.add(item.key);
      // Converted even when already delivered: the converter judges results by the calls before them.
      const converted = converter.convert(item);
      if (delivered.has(item.key)) continue;
      // Delivered under its ledger key before this session gained a messages.jsonl.
      if (carryover?.claim(item.message) !== undefined) continue;
      if (converted) await enqueue(batcher.push(converted));
    }
    await enqueue(batcher.end());
    const last = waiting.at(-1);
    const flush = last !== undefined && (plan === 'always' || (plan === 'at-turn-end' && endsTurn(last.messages.at(-1))));
    for (const [i, request] of waiting.entries()) {
      const isLast = i === waiting.length - 1;
      await send(request, isLast && flush, !isLast && flush);
    }
    waiting.length = 0;
    const workspaceDir = history.workspaceDir();
    reading = { workspaceDir: () => workspaceDir };

    // A history read without its snapshot chain is incomplete, not rewritten: what it lacks is kept.
    const complete = !warnings.entries().some((entry) => entry.code === 'missing_snapshot');
    const gone = complete ? [...delivered].filter((key) => !seen.has(key)) : [];
    if (gone.length > 0 && !ctx.dryRun) {
      const retracted = ctx.sink.retract(meta(), gone);
      outcome.removed = retracted.removed;
      if (retracted.irreversible) warnings.add('history_rewritten', { file: path.relative(session.dir, historyFile), line: 0 }, gone.length);
    }

    outcome.warnings = warnings.entries();
    ctx.onReadDone?.();
    if (!ctx.dryRun) {
      const current = meta();
      // Awaited inside the try: the lock is released (finally) only once this commit is durable.
      await ctx.sink.finishSession(current, {
        sinkName,
        sessionId: session.sessionId,
        warningsOwner: {
          conversationId,
          sessionId: session.sessionId,
          source,
          historyFile,
          sessionDir: session.dir,
          createdAtMs: session.createdAtMs,
          workspaceDir: current.workspaceDir,
        },
        warnings: outcome.warnings,
        fingerprint,
      });
    }
    // A session never read before (no fingerprint, nothing delivered) that yields nothing to send
    // is empty, never "unchanged": nothing about it was known to stay the same.
    const firstSeen = storedFingerprint === undefined && delivered.size === 0;
    outcome.status = outcome.messages > 0 || outcome.removed > 0 ? 'delivered' : firstSeen ? 'empty' : 'unchanged';
    return await settleOwedFlush(source);
  } catch (err) {
    ctx.sink.abandonSession(conversationId);
    outcome.status = 'failed';
    outcome.error = toEvermeError(err);
    return outcome;
  } finally {
    if (locked) ctx.locks?.release(session.sessionId);
  }
}
