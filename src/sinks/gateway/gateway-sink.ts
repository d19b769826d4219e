import path from 'node:path';
import type Database from 'better-sqlite3';
import { EvermeError } from '../../core/errors.js';
import { WarningCollector } from '../../core/warnings.js';
import { DeliveredKeyStore } from '../../store/delivered-key-store.js';
import { FlushClaimStore } from '../../store/flush-claim-store.js';
import { SessionStateWriter } from '../../store/session-state.js';
import { writeInTurn, type WriteTurn } from '../../store/write-turn.js';
import type { ConversationMeta, Handoff, PlanPart, Rekey, SessionContext, SessionEnd, SessionTally, Sink, SinkSession } from '../sink.js';
import { contentRequestId, type GatewayClient } from './gateway-client.js';
import { GatewayMarks } from './gateway-marks.js';
import { emptyRequest } from '../../memory/encoded-request.js';
import { flushPlanFor, UploadFlags, type Outgoing } from './flush-policy.js';

const NAME = 'everme' as const;

/** The gateway's marks in the state file: keys acknowledged, flushes owed, and each session's state. */
interface GatewayStores {
  keys: DeliveredKeyStore;
  flushes: FlushClaimStore;
  state: SessionStateWriter;
  /** What the gateway acknowledged, and each session's state: committed as `GatewayMarks` says. */
  marks: GatewayMarks;
  /**
   * Runs a write that must be in the file before the sink goes on (a flush claim, which another
   * process may contend for) in the main thread's turn while the embedded store's writer thread
   * runs (see WriteTurn): otherwise the write found the file locked by that thread's transaction
   * and slept in SQLite's busy handler, stopping the main thread.
   */
  write: <T>(write: () => T) => Promise<T>;
}

/**
 * The hosted EverMe gateway. Marks move only after the gateway acknowledged a request; a request
 * whose fate is unknown is not retried here but resent by the next run from the last mark. Its
 * flush rules (see flush-policy.ts) and the flush a hook-delivered conversation still owes are its
 * own business: the engine hands it the plan and the session's end.
 */
export class GatewaySink implements Sink {
  readonly takes = 'requests' as const;
  /** A conversation the hook delivered whole may still be owed its flush (see `settleOwedFlush`). */
  readonly endsUnchanged = true;
  readonly name = NAME;
  private readonly stores: GatewayStores;

  /** `turn`: the write turn of the embedded store's writer thread, while one runs. */
  constructor(
    private readonly client: GatewayClient,
    db: Database.Database,
    turn: () => WriteTurn | undefined = () => undefined,
  ) {
    const write = <T>(fn: () => T): Promise<T> => writeInTurn(turn(), fn);
    this.stores = { keys: new DeliveredKeyStore(db), flushes: new FlushClaimStore(db), state: new SessionStateWriter(db), marks: new GatewayMarks(db, turn), write };
  }

  deliveredKeys(conversationId: string): Set<string> {
    return this.stores.keys.keysOf(NAME, conversationId);
  }

  begin(context: SessionContext): Promise<SinkSession> {
    return Promise.resolve(new GatewaySession(this.client, this.stores, context));
  }

  /** Marks still queued for the writer thread's turn are committed before the file is closed. */
  close(): void {
    this.stores.marks.commitNow();
  }
}

class GatewaySession implements SinkSession {
  readonly tally: SessionTally = { requests: 0, messages: 0, removed: 0, invalidResponses: [], warnings: [] };
  private readonly flags: UploadFlags;
  private readonly noticed = new WarningCollector();
  /** The history file, once known: what the gateway's own warnings name. */
  private file = '';
  /** This session's marks, each committed or on its way (see GatewayMarks). */
  private readonly marked: Array<Promise<void>> = [];
  /** Whether this run sent the conversation a request: the last one it sent settled its flush. */
  private sent = false;

  constructor(
    private readonly client: GatewayClient,
    private readonly stores: GatewayStores,
    private readonly context: SessionContext,
  ) {
    this.flags = new UploadFlags(flushPlanFor(context.mode, context.boundary));
  }

  async deliver(part: PlanPart): Promise<void> {
    this.file = path.basename(part.conversation.historyFile ?? '');
    for (const request of part.encoded ?? []) {
      for (const out of this.flags.push(request)) await this.send(part.conversation, out);
    }
  }

  /**
   * The gateway cannot take messages back, so their marks stay: the server still holds them (a
   * message that comes back is not sent twice), and every later read of the session finds them
   * gone again, so its `history_rewritten` warning survives the next append instead of vanishing.
   */
  retract(conversation: ConversationMeta, keys: string[]): void {
    this.noticed.add('history_rewritten', { file: path.basename(conversation.historyFile ?? ''), line: 0 }, keys.length);
  }

  /** The gateway holds these messages already: their marks move to the new keys, committed with the session's others. */
  rekey(conversation: ConversationMeta, moves: readonly Rekey[]): void {
    const marked = this.stores.marks.record(() => this.stores.keys.rekey(NAME, conversation.conversationId, moves));
    marked.catch(() => undefined);
    this.marked.push(marked);
  }

  async finish({ conversation, state }: SessionEnd): Promise<Handoff> {
    this.file = path.basename(conversation.historyFile ?? '');
    if (state) {
      for (const out of this.flags.end()) await this.send(conversation, out);
      const sinkWarnings = this.noticed.entries();
      // Every request has its marks on the way; only the session's state is left.
      this.marked.push(this.stores.marks.record(() => this.stores.state.write({ ...state, sinkWarnings })));
    }
    await this.settleOwedFlush(conversation);
    this.tally.warnings = this.noticed.entries();
    const durable = Promise.all(this.marked).then(() => undefined);
    // Awaited by the caller once every sink holds the session; a failure meanwhile is not unhandled.
    durable.catch(() => undefined);
    return { durable };
  }

  abandon(): void {}

  /** `idKeys`: the message keys the request id is derived from; by default the request's own. */
  private async send(conversation: ConversationMeta, { request, flush, sync }: Outgoing, idKeys: readonly string[] = request.keys): Promise<void> {
    if (this.context.signal?.aborted) throw new EvermeError('cancelled', 'Interrupted');
    const conversationId = conversation.conversationId;
    const ack = await this.client.postAgentMemory(
      { conversationId, flush, sync, messages: request.messagesJson },
      undefined,
      { requestId: contentRequestId(conversationId, idKeys, flush), ...(this.context.signal ? { waitSignal: this.context.signal } : {}) },
    );
    const marked = this.stores.marks.record(() => {
      this.stores.keys.record(NAME, conversationId, request.keys);
      if (flush) this.stores.flushes.record(NAME, conversationId, false, request.endsTurn);
      else if (request.messageCount > 0) this.stores.flushes.record(NAME, conversationId, true, request.endsTurn);
    });
    // A session that fails later leaves its marks to commit anyway (see GatewayMarks.commitNow).
    marked.catch(() => undefined);
    this.marked.push(marked);
    this.sent = true;
    this.tally.requests += 1;
    this.tally.messages += request.messageCount;
    if (ack.responseInvalid) {
      this.tally.invalidResponses.push({ requestId: ack.requestId, reason: ack.responseInvalid });
      this.noticed.add('gateway_response_invalid', { file: this.file, line: 0 });
    }
  }

  /**
   * The hook never flushes, so a conversation it delivered completely would never be flushed:
   * import (always) and sync (at a finished turn) send the flush on its own when one is owed.
   */
  private async settleOwedFlush(conversation: ConversationMeta): Promise<void> {
    const { mode, boundary, conversationId } = this.context;
    if (mode === 'hook' && !boundary) return;
    // Its last request answered the question, and its marks may still be queued (GatewayMarks), so
    // the file may not say so yet: it flushed (import, a boundary, a sync at a finished turn) and
    // nothing is owed, or it did not (a sync that ended mid-turn), and what it owes waits for a turn end.
    if (this.sent) return;
    const owed = this.stores.flushes.pending(NAME, conversationId);
    if (!owed || (mode === 'sync' && !boundary && !owed.endsTurn)) return;
    // A flush is a request about the conversation too: none for an excluded workspace.
    if (await this.context.excluded()) return;
    if (this.context.signal?.aborted) throw new EvermeError('cancelled', 'Interrupted');
    // Claimed, not just read: a concurrent run that sees the same owed flush must not send it too.
    const claim = await this.stores.write(() => this.stores.flushes.claim(NAME, conversationId, mode === 'sync' && !boundary));
    if (claim === undefined) return;
    // It carries no message, so its id is derived from what it flushes: every message delivered so
    // far. Sent again (no answer came), it keeps its id; a flush owed after more turns gets its own,
    // where the conversation and flush alone gave every flush of the conversation one id.
    const flushes = [...this.stores.keys.keysOf(NAME, conversationId)].sort();
    try {
      await this.send(conversation, { request: emptyRequest(), flush: true, sync: false }, flushes);
    } catch (err) {
      await this.stores.write(() => this.stores.flushes.release(NAME, conversationId, claim));
      throw err;
    }
  }
}
