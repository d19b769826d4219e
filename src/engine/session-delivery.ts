import path from 'node:path';
import { EvermeError, toEvermeError } from '../core/errors.js';
import type { SinkName } from '../config/settings.js';
import { WarningCollector, type WarningEntry } from '../core/warnings.js';
import type { AgentMessage } from '../core/agent-message.js';
import { Converter } from '../memory/convert.js';
import { TaskBatcher, type PlannedRequest } from '../memory/task-batcher.js';
import type { ConversationMeta, Sink } from '../sinks/sink.js';
import { chooseHistoryFile, openSessionHistory } from '../transcript/session-history.js';
import type { SessionRef } from '../transcript/types.js';
import { conversationIdFor } from './conversation-id.js';
import { fingerprintFile, fingerprintFromStat, sameFingerprint, unchangedByStat } from './fingerprint.js';
import type { SessionLocks } from './session-lock.js';
import type { StateStore } from '../store/state-store.js';

/** import flushes every conversation's last request, sync only at a finished turn, the hook only at a conversation boundary. */
export type DeliveryMode = 'import' | 'sync' | 'hook';

export type SessionStatus = 'delivered' | 'unchanged' | 'empty' | 'failed';

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
  /**
   * A conversation boundary (the host's PreCompact or SessionEnd): whatever the mode, the last
   * request flushes, and a flush still owed is sent on its own.
   */
  boundary?: boolean;
  /** Called after each acknowledged request with the number of messages it carried. */
  onDelivered?: (messages: number) => void;
}

function flushFor(mode: DeliveryMode, last: AgentMessage | undefined, boundary: boolean): boolean {
  if (mode === 'import' || boundary) return true;
  if (mode === 'sync') return last?.role === 'assistant' && last.turnComplete;
  return false;
}

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
  };
}

export async function deliverSession(session: SessionRef, ctx: DeliveryContext): Promise<SessionOutcome> {
  const outcome = blankOutcome(session, 'unchanged');
  const conversationId = outcome.conversationId;
  const sinkName: SinkName = ctx.sink.name;
  let locked = false;
  /**
   * The hook never flushes, so a conversation it delivered completely would never be flushed:
   * import (always) and sync (at a finished turn) send the flush on its own when one is owed.
   */
  const settleOwedFlush = async (source: 'messages' | 'ledger'): Promise<SessionOutcome> => {
    const boundary = ctx.boundary ?? false;
    if (ctx.dryRun || (ctx.mode === 'hook' && !boundary)) return outcome;
    const owed = ctx.sink.pendingFlush(conversationId);
    if (!owed || (ctx.mode === 'sync' && !boundary && !owed.endsTurn)) return outcome;
    throwIfAborted(ctx.signal);
    await ctx.sink.deliver({
      conversation: { conversationId, sessionId: session.sessionId, source, createdAtMs: session.createdAtMs },
      messages: [],
      keys: [],
      flush: true,
    });
    outcome.requests += 1;
    return outcome;
  };
  try {
    const chosen = await chooseHistoryFile(session.dir);
    outcome.source = chosen.source;
    if (chosen.source === 'none' || !chosen.file || !chosen.stat) {
      outcome.status = 'empty';
      return outcome;
    }
    const chosenSource = chosen.source;
    // Equal path, size, mtime and inode already mean equal fingerprints: the head is read only when
    // the file changed, for the fingerprint committed after this read.
    if (unchangedByStat(ctx.state.getFingerprint(sinkName, session.sessionId), chosen.file, chosen.stat)) {
      return await settleOwedFlush(chosenSource);
    }
    let fingerprint = fingerprintFromStat(chosen.file, chosen.stat);

    if (!ctx.dryRun && ctx.locks !== undefined) {
      await ctx.locks.acquire(session.sessionId, ctx.lockTimeoutMs ?? 30_000, ctx.signal);
      locked = true;
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
    const meta = (): ConversationMeta => ({
      conversationId,
      sessionId: session.sessionId,
      source,
      workspaceDir: history.workspaceDir() ?? ctx.state.workspaceFor(session.sessionId),
      historyFile,
      createdAtMs: session.createdAtMs,
    });

    let held: PlannedRequest | undefined;
    const send = async (request: PlannedRequest, flush: boolean): Promise<void> => {
      throwIfAborted(ctx.signal);
      if (!ctx.dryRun) {
        await ctx.sink.deliver({ conversation: meta(), messages: request.messages, keys: request.keys, flush });
      }
      outcome.requests += 1;
      outcome.messages += request.messages.length;
      ctx.onDelivered?.(request.messages.length);
    };
    // The last request is held back until the end: only then is it known whether it flushes.
    const enqueue = async (ready: PlannedRequest[]): Promise<void> => {
      for (const request of ready) {
        if (held) await send(held, false);
        held = request;
      }
    };

    for await (const item of history.items()) {
      seen.add(item.key);
      const converted = converter.convert(item);
      if (!converted || delivered.has(converted.key)) continue;
      await enqueue(batcher.push(converted));
    }
    await enqueue(batcher.end());
    if (held) await send(held, flushFor(ctx.mode, held.messages.at(-1), ctx.boundary ?? false));

    // A history read without its snapshot chain is incomplete, not rewritten: what it lacks is kept.
    const complete = !warnings.entries().some((entry) => entry.code === 'missing_snapshot');
    const gone = complete ? [...delivered].filter((key) => !seen.has(key)) : [];
    if (gone.length > 0 && !ctx.dryRun) {
      const retracted = ctx.sink.retract(meta(), gone);
      outcome.removed = retracted.removed;
      if (retracted.irreversible) warnings.add('history_rewritten', { file: path.relative(session.dir, historyFile), line: 0 }, gone.length);
    }

    outcome.warnings = warnings.entries();
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
    outcome.status = outcome.messages > 0 || outcome.removed > 0 ? 'delivered' : 'unchanged';
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
