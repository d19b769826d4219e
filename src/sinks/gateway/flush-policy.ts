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

/**
 * While a sync upload cannot yet tell whether it ends in a flush, its requests wait in memory up to
 * this many bytes. Past it the oldest goes out with `sync: true`: a synchronous add that no flush
 * follows costs the server a little time, a queued add that a flush overtakes loses memories.
 */
export const MAX_UNDECIDED_BYTES = 8 * 1024 * 1024;

/** A request with the flags it goes out with. */
export interface Outgoing {
  request: EncodedRequest;
  flush: boolean;
  sync: boolean;
}

/**
 * Requests wait until it is known whether the upload ends in a flush: every request before a
 * flushing one carries `sync: true`, the others do not. The last request always waits (only the end
 * tells whether it flushes); with a sync upload, the earlier ones wait too (bounded).
 */
export class UploadFlags {
  private readonly waiting: EncodedRequest[] = [];
  private waitingBytes = 0;

  constructor(private readonly plan: FlushPlan) {}

  /** The request joins the upload; returns those whose flags are now decided, in order. */
  push(request: EncodedRequest): Outgoing[] {
    const ready: Outgoing[] = [];
    this.waiting.push(request);
    this.waitingBytes += request.bytes;
    while (this.waiting.length > 1 && (this.plan !== 'at-turn-end' || this.waitingBytes > MAX_UNDECIDED_BYTES)) {
      const next = this.waiting.shift()!;
      this.waitingBytes -= next.bytes;
      ready.push({ request: next, flush: false, sync: this.plan !== 'never' });
    }
    return ready;
  }

  /** The upload ended: the waiting requests with their flags; the last flushes when the plan says so. */
  end(): Outgoing[] {
    const last = this.waiting.at(-1);
    const flush = last !== undefined && (this.plan === 'always' || (this.plan === 'at-turn-end' && last.endsTurn));
    const out = this.waiting.map((request, i) => {
      const isLast = i === this.waiting.length - 1;
      return { request, flush: isLast && flush, sync: !isLast && flush };
    });
    this.waiting.length = 0;
    this.waitingBytes = 0;
    return out;
  }
}
