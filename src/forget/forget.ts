import type Database from 'better-sqlite3';
import fs from 'node:fs';
import { EvermeError } from '../core/errors.js';
import { holdsCredential } from '../core/redact.js';
import type { Settings } from '../config/settings.js';
import { assertStateDirUsable } from '../config/state-dir.js';
import { conversationIdCandidates } from '../core/conversation-id.js';
import { SessionLocks } from '../engine/session-lock.js';
import { resolveConversationId } from '../store/conversation-ids.js';
import { databasePath, openDatabase } from '../store/database.js';
import { openReadonlyDatabase } from '../store/database-reader.js';
import { DeliveredKeyStore } from '../store/delivered-key-store.js';
import { ForgetStore, unknownCandidate, type ConversationSelector, type ForgetCandidate } from '../store/forget-store.js';
import { TombstoneStore, type Tombstone } from '../store/tombstones.js';

export type { ConversationSelector, ForgetCandidate, Tombstone };

/** Said wherever a forget touches a conversation the gateway received: it cannot be taken back from here. */
export const GATEWAY_NOTE =
  "EverMe's public API has no delete: what was already sent to the hosted gateway stays in your EverMe account and was NOT deleted. " +
  "Remove it from your account on EverMe's own site. Nothing more of these conversations will be sent.";

export interface ForgetResult {
  dryRun: boolean;
  conversations: ForgetCandidate[];
  /** Messages removed from the embedded store (0 in a dry run). */
  removedMessages: number;
  /** Conversations of the list that the hosted gateway received. */
  sentToGateway: number;
  /** Only when some were sent: the plain statement that they were not deleted there. */
  gatewayNote?: string;
  /** Whether the file was rewritten down to its bytes (false while another reader holds the WAL). */
  checkpointed?: boolean;
  /** Only when there is no store yet: the file that does not exist (and was not created). */
  missingStore?: string;
}

/** Whether the store exists: a forget that would find nothing in it must not create it. */
export function storeExists(settings: Settings): boolean {
  assertStateDirUsable(settings.stateDir);
  try {
    fs.statSync(databasePath(settings.stateDir));
    return true;
  } catch (err) {
    // Anything but "not there" is for opening the store to report.
    return (err as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

/**
 * A forget, or its dry run, where there is no store yet: nothing is stored, sent or forgotten, and
 * nothing is created. A named conversation is listed as unknown, as an empty store lists it.
 */
export function forgetWithoutStore(settings: Settings, selector: ConversationSelector, dryRun: boolean): ForgetResult {
  const named = selector.kind === 'conversation' ? refuseCredentialIds([unknownCandidate(conversationIdCandidates(selector.conversationId).at(-1)!)]) : [];
  return { ...summarize(dryRun, named, 0), missingStore: databasePath(settings.stateDir) };
}

/**
 * Refuses a named id the store does not hold that holds a credential (a key pasted in the wrong
 * place): no conversation can have it (import refuses such ids), its tombstone would store the key,
 * and listing it would print it.
 */
function refuseCredentialIds(planned: ForgetCandidate[]): ForgetCandidate[] {
  if (!planned.some((c) => c.unknown === true && holdsCredential(c.conversationId))) return planned;
  throw new EvermeError('invalid_args', 'The conversation id given holds a credential; no conversation has such an id (it is not repeated here)', {
    code: 'conversation_id_credential',
    hint: 'Copy the conversation id from `everme search`, `everme report` or `everme export`; nothing was forgotten or stored.',
  });
}

/** An undo where there is no store yet: nothing is forgotten (and no store is created to say so). */
export function undoWithoutStore(settings: Settings, input: string): never {
  throw notForgotten(conversationIdCandidates(input).at(-1)!, `There is no everme store at ${databasePath(settings.stateDir)} yet: nothing was forgotten there.`);
}

function notForgotten(conversationId: string, hint: string): EvermeError {
  return new EvermeError('not_found', `${conversationId} is not forgotten`, { hint });
}

/**
 * `everme forget`: plan (list what a selector names), then apply (tombstone first, so nothing is
 * delivered again even while the deletion waits for a session's lock; then delete each
 * conversation under that lock; then clean the file up to its bytes).
 */
export class Forgetter {
  private readonly store: ForgetStore;
  private readonly tombstones: TombstoneStore;

  private constructor(private readonly db: Database.Database) {
    this.store = new ForgetStore(db);
    this.tombstones = new TombstoneStore(db);
  }

  /**
   * `readonly` for a plan, a dry run or the list of what is forgotten (the viewer's pages): no write
   * lock, so another process writing does not hold it up, and a missing store is `database_missing`.
   * `mustExist`: the store as it is, never created (there is nothing to forget in a new one).
   */
  static open(settings: Settings, opts: { readonly?: boolean; mustExist?: boolean } = {}): Forgetter {
    return new Forgetter(opts.readonly ? openReadonlyDatabase(settings.stateDir) : openDatabase(settings.stateDir, { mustExist: opts.mustExist ?? false }));
  }

  /**
   * A `--conversation ID` means the id as it was shown (see `resolveConversationId`); one the store
   * does not hold that holds a credential is refused (`refuseCredentialIds`).
   */
  plan(selector: ConversationSelector): ForgetCandidate[] {
    if (selector.kind !== 'conversation') return this.store.select(selector);
    return refuseCredentialIds(this.store.select({ kind: 'conversation', conversationId: resolveConversationId(this.db, selector.conversationId) }));
  }

  dryRun(conversations: ForgetCandidate[]): ForgetResult {
    return summarize(true, conversations, 0);
  }

  /** What a forget (not a dry run) whose selector matched nothing did: nothing. */
  nothingMatched(): ForgetResult {
    return summarize(false, [], 0);
  }

  async apply(conversations: ForgetCandidate[], opts: { lockTimeoutMs?: number; signal?: AbortSignal } = {}): Promise<ForgetResult> {
    this.db
      .transaction(() => {
        for (const c of conversations) this.tombstones.put(c);
      })
      .immediate();
    const locks = new SessionLocks(this.db);
    const delivered = new DeliveredKeyStore(this.db);
    const forgotten: ForgetCandidate[] = [];
    let removed = 0;
    for (const c of conversations) {
      // An import or hook worker in the middle of this session commits first; its work goes too.
      await locks.acquire(c.sessionId, opts.lockTimeoutMs ?? 30_000, opts.signal);
      try {
        // Decided here, not when planned: what that import or worker sent while this waited for
        // the lock is held by the gateway too, and the tombstone keeps anything more from going.
        forgotten.push({ ...c, sentToGateway: c.sentToGateway || delivered.holdsAny('everme', c.conversationId) });
        removed += this.store.remove(c.conversationId, c.sessionId);
      } finally {
        locks.release(c.sessionId);
      }
    }
    const { checkpointed } = this.store.cleanup();
    return { ...summarize(false, forgotten, removed), checkpointed };
  }

  /** Lifts a tombstone; the session's fingerprints go too, so the next sync reads it whole again. */
  undo(input: string): { conversationId: string; sessionId: string } {
    const conversationId = resolveConversationId(this.db, input);
    const lifted = this.db
      .transaction((): Tombstone | undefined => {
        const tombstone = this.tombstones.get(conversationId);
        if (!tombstone || !this.tombstones.lift(conversationId)) return undefined;
        this.db.prepare<[string]>('DELETE FROM fingerprints WHERE session_id = ?').run(tombstone.sessionId);
        return tombstone;
      })
      .immediate();
    if (!lifted) {
      throw notForgotten(conversationId, '`everme report` counts forgotten conversations; pass the id that `everme forget` listed.');
    }
    return { conversationId, sessionId: lifted.sessionId };
  }

  /** Whether this conversation (as a plan names it) is forgotten already. */
  isForgotten(conversationId: string): boolean {
    return this.tombstones.get(conversationId) !== undefined;
  }

  /** Every tombstone, oldest first: what `forget --undo` can lift. */
  forgotten(): Tombstone[] {
    return this.tombstones.list();
  }

  close(): void {
    this.db.close();
  }
}

function summarize(dryRun: boolean, conversations: ForgetCandidate[], removedMessages: number): ForgetResult {
  const sentToGateway = conversations.filter((c) => c.sentToGateway).length;
  return {
    dryRun,
    conversations,
    removedMessages,
    sentToGateway,
    ...(sentToGateway > 0 ? { gatewayNote: GATEWAY_NOTE } : {}),
  };
}
