import type { KeyedMessage } from '../core/agent-message.js';
import { WarningCollector, type WarningEntry } from '../core/warnings.js';
import { Converter } from '../memory/convert.js';
import { encodeRequest } from '../memory/encoded-request.js';
import { TaskBatcher, type PlannedRequest } from '../memory/task-batcher.js';
import type { ConversationMeta, PlanPart, Rekey } from '../sinks/sink.js';
import type { SessionFingerprint } from '../store/fingerprint-store.js';
import { encodeMessageRows } from '../store/message-rows.js';
import { maskedWorkspace } from '../store/session-meta.js';
import { openLedgerCarryover, type LedgerCarryover } from '../transcript/ledger-carryover.js';
import { openSessionHistory } from '../transcript/session-history.js';
import type { HistoryItem, SessionRef } from '../transcript/types.js';
import { conversationIdFor } from '../core/conversation-id.js';
import { fingerprintFile } from './fingerprint.js';

/**
 * The plan phase: read → replay → convert → clean and redact → FTS text → delta past the marks →
 * batch, for one session. A function of the session's files and the marks it is given, with no I/O
 * but reading those files, so it runs on any thread (see plan-pool.ts); delivering the plan is the
 * main thread's (session-delivery.ts).
 */

/** The sinks of one target share their marks, so one delta and one batching serves them all. */
export interface PlanTarget {
  /** Keys the target's sinks have acknowledged. */
  delivered: ReadonlySet<string>;
  /** Keep the requests as objects: someone shows them (the preview). */
  requests: boolean;
  /** Encode the requests as the gateway sink sends them (see EncodedRequest). */
  encoded: boolean;
  /** Encode the messages for the embedded store (its rows, the FTS text included). */
  rows: boolean;
}

export interface PlanJob {
  session: SessionRef;
  /** Usually one: sinks whose marks differ (a store added to a gateway user's setup) get one each. */
  targets: PlanTarget[];
  /** The fingerprint of the file the checks looked at; worked out again when the plan reads another (or none was given). */
  fingerprint?: SessionFingerprint;
  /** Where the session's files name no workspace: the one recorded for it (a hook's `cwd`). */
  recordedWorkspace?: string;
  /** The workspace the gate decided among every source's claim (see `decideWorkspace`): stored before any other. */
  decidedWorkspace?: string;
}

/** Takes one part of a target's plan; resolves when the next may follow (bounds what is held). */
export type EmitPart = (target: number, part: PlanPart) => Promise<void>;

export type PlanResult =
  | { status: 'empty' }
  | {
      status: 'planned';
      conversation: ConversationMeta & { historyFile: string };
      fingerprint: SessionFingerprint;
      /** The reader's warnings (and the first target's batching). */
      warnings: WarningEntry[];
      /** Per target: its delivered keys that left the effective history. */
      gone: string[][];
      /** Per target: messages it took under the key an earlier release gave them, to go by their own. */
      rekeyed: Rekey[][];
    };

/** A part is handed on once its requests hold this many bytes or messages, so a huge session streams. */
const PART_BYTES = 4 * 1024 * 1024;
const PART_MESSAGES = 2500;

/** One target's delta and batching, and the part it is filling. */
class TargetPlan {
  private readonly batcher: TaskBatcher;
  private carryover: LedgerCarryover | undefined;
  /** Messages delivered under the key an earlier release gave them (`HistoryItem.legacyKey`): not new. */
  readonly rekeyed: Rekey[] = [];
  private pending: PlannedRequest[] = [];
  private pendingBytes = 0;
  private pendingMessages = 0;

  constructor(
    readonly target: PlanTarget,
    conversationId: string,
    warnings: WarningCollector,
  ) {
    this.batcher = new TaskBatcher({ conversationId, warnings });
  }

  /** Keys delivered under the session's ledger before it gained a messages.jsonl (see ledger-carryover.ts). */
  async openCarryover(session: SessionRef, source: 'messages' | 'ledger'): Promise<void> {
    if (source !== 'messages') return;
    this.carryover = await openLedgerCarryover(session, this.target.delivered);
  }

  /** The item past this target's marks joins its batches. */
  take(item: HistoryItem, converted: KeyedMessage | undefined): void {
    if (this.target.delivered.has(item.key)) {
      this.carryover?.pass();
      return;
    }
    if (item.legacyKey !== undefined && this.target.delivered.has(item.legacyKey)) {
      this.rekeyed.push({ from: item.legacyKey, to: item.key });
      return;
    }
    if (this.carryover?.claim(item.message) !== undefined) return;
    this.carryover?.pass();
    if (converted) this.add(this.batcher.push(converted));
  }

  end(): void {
    this.add(this.batcher.end());
  }

  full(): boolean {
    return this.pendingBytes >= PART_BYTES || this.pendingMessages >= PART_MESSAGES;
  }

  /** The requests gathered since the last part, as a part (undefined when there are none). */
  part(conversation: ConversationMeta): PlanPart | undefined {
    if (this.pending.length === 0) return undefined;
    const requests = this.pending;
    const part: PlanPart = { conversation, requestCount: requests.length, messageCount: this.pendingMessages, bytes: this.pendingBytes };
    if (this.target.requests) part.requests = requests;
    if (this.target.encoded) part.encoded = requests.map(encodeRequest);
    if (this.target.rows) part.rows = encodeMessageRows(keyedMessages(requests));
    this.pending = [];
    this.pendingBytes = 0;
    this.pendingMessages = 0;
    return part;
  }

  gone(seen: ReadonlySet<string>): string[] {
    const carried = this.carryover?.kept();
    const moved = new Set(this.rekeyed.map((rekey) => rekey.from));
    return [...this.target.delivered].filter((key) => !seen.has(key) && !carried?.has(key) && !moved.has(key));
  }

  private add(requests: PlannedRequest[]): void {
    for (const request of requests) {
      this.pending.push(request);
      // What the store keeps whole counts too: it is what a part holds for the store's rows.
      this.pendingBytes += request.bytes + (this.target.rows ? wholeLength(request) : 0);
      this.pendingMessages += request.messages.length;
    }
  }
}

/** The store's messages: what the requests carry, with the tool results they trim kept whole. */
function keyedMessages(requests: readonly PlannedRequest[]): KeyedMessage[] {
  const out: KeyedMessage[] = [];
  for (const request of requests) {
    for (let i = 0; i < request.keys.length; i++) out.push({ key: request.keys[i]!, message: request.whole?.get(i) ?? request.messages[i]! });
  }
  return out;
}

/** UTF-16 length of the whole forms a request holds beside its trimmed ones (a part's bound, not exact). */
function wholeLength(request: PlannedRequest): number {
  let length = 0;
  for (const message of request.whole?.values() ?? []) length += message.content?.length ?? 0;
  return length;
}

/**
 * Plans one session: its parts go to `emit` as they fill (and the last ones at the end), in order
 * per target; the result says how the session was read. Throws (an I/O error, an EvermeError) with
 * the session's marks untouched: nothing of a plan is delivered by planning it.
 */
export async function planSession(job: PlanJob, emit: EmitPart): Promise<PlanResult> {
  const { session } = job;
  const conversationId = conversationIdFor(session.sessionId);
  const warnings = new WarningCollector();
  // What was delivered of a session whose messages.jsonl a rewind left empty is gone, all of it. The
  // checks chose the empty file (its fingerprint) only for a session read before.
  const delivered = job.targets.some((target) => target.delivered.size > 0);
  const emptied = job.fingerprint?.size === 0 || delivered;
  // Marks an earlier release wrote may hold a compacted ledger's messages under its keys; a session
  // nothing was delivered of (a cold import) has no marks to match them with.
  const history = openSessionHistory(session, warnings, {}, { emptied, legacyKeys: delivered });
  if (history.source === 'none' || !history.file) return { status: 'empty' };
  const { file: historyFile, source } = history;
  // The file may have been chosen differently a moment ago (a messages.jsonl got its first bytes).
  const fingerprint = historyFile === job.fingerprint?.file ? job.fingerprint : fingerprintFile(historyFile);
  const meta = (): ConversationMeta & { historyFile: string } => {
    const named = job.decidedWorkspace ?? history.workspaceDir() ?? job.recordedWorkspace;
    // Masked as every recorded workspace is: the ledger's own is as the host wrote it.
    const workspaceDir = named === undefined ? undefined : maskedWorkspace(named);
    return { conversationId, sessionId: session.sessionId, source, ...(workspaceDir === undefined ? {} : { workspaceDir }), historyFile, createdAtMs: session.createdAtMs };
  };
  // Batching warns too (`oversized_unit`): counted once, for the first target.
  const targets = job.targets.map((target, i) => new TargetPlan(target, conversationId, i === 0 ? warnings : new WarningCollector()));
  const seen = new Set<string>();
  for (const target of targets) await target.openCarryover(session, source);
  const converter = new Converter(warnings);
  for await (const item of history.items()) {
    seen.add(item.key);
    // Converted even when already delivered: the converter judges results by the calls before them.
    const converted = converter.convert(item);
    for (const [i, target] of targets.entries()) {
      target.take(item, converted);
      if (target.full()) await emit(i, target.part(meta())!);
    }
  }
  const conversation = meta();
  for (const [i, target] of targets.entries()) {
    target.end();
    const last = target.part(conversation);
    if (last) await emit(i, last);
  }
  // A history read without its snapshot chain is incomplete, not rewritten: what it lacks is kept.
  const complete = !warnings.entries().some((entry) => entry.code === 'missing_snapshot');
  const gone = targets.map((target) => (complete ? target.gone(seen) : []));
  return { status: 'planned', conversation, fingerprint, warnings: warnings.entries(), gone, rekeyed: targets.map((target) => target.rekeyed) };
}
