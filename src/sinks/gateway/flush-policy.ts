import type { DeliveryMode, EncodedRequest } from '../sink.js';

/**
 * Whether an upload ends in a flush: import always, the hook never, sync only when the upload
 * ends on a finished turn, which is known once the last message has been read. A conversation
 * boundary (the host's PreCompact or SessionEnd) always flushes, whatever the mode.
 */
export type FlushPlan = 'always' | 'at-turn-end' | 'never';

export function flushPlanFor(mode: DeliveryMode, boundary: boolean): FlushPlan {
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

/** A request with the flags it goes out with. */
export interface Outgoing {
  request: EncodedRequest;
  flush: boolean;
  sync: boolean;
}

/**
 * Every request that does not flush carries `sync: true`; the one that flushes does not. A
 * conversation's deliveries always end in a flush, in this upload or a later one (the flush it
 * owes, sent alone by a sync at a finished turn, an import, or the host's PreCompact or
 * SessionEnd, seconds after the Stop hook's upload). The gateway reference: without `sync`, "a
 * flush that follows queued batches can run before they have been added", and what it misses is
 * lost to extraction; a synchronous add costs the server a moment. Only the last request waits:
 * the end of the upload tells whether it flushes.
 */
export class UploadFlags {
  private last: EncodedRequest | undefined;

  constructor(private readonly plan: FlushPlan) {}

  /** The request joins the upload; returns the one before it, whose flags are now decided. */
  push(request: EncodedRequest): Outgoing[] {
    const previous = this.last;
    this.last = request;
    return previous === undefined ? [] : [{ request: previous, flush: false, sync: true }];
  }

  /** The upload ended: the last request, which flushes when the plan says so. */
  end(): Outgoing[] {
    const last = this.last;
    this.last = undefined;
    if (last === undefined) return [];
    const flush = this.plan === 'always' || (this.plan === 'at-turn-end' && last.endsTurn);
    return [{ request: last, flush, sync: !flush }];
  }
}
