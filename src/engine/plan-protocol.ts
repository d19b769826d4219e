import type { EvermeErrorData } from '../core/errors.js';
import type { PlanPart } from '../sinks/sink.js';
import { requestsTransferList } from '../memory/encoded-request.js';
import { rowsTransferList } from '../store/message-rows.js';
import type { SessionRef } from '../transcript/types.js';
import type { PlanJob, PlanResult } from './session-plan.js';

/** What the main thread tells a plan worker. */
export type ToPlanWorker =
  | { kind: 'plan'; id: number; job: PlanJob }
  /** A part was delivered; `stop`: the main thread wants no more of this plan (its sinks failed, or Ctrl-C). */
  | { kind: 'ack'; id: number; stop: boolean };

/** What a plan worker answers, per job, in order: parts, then the result or the failure. */
export type FromPlanWorker =
  | { kind: 'part'; id: number; target: number; part: PlanPart }
  | { kind: 'done'; id: number; result: PlanResult }
  | { kind: 'failed'; id: number; error: EvermeErrorData };

/**
 * A part's encoded rows and requests are moved to the main thread, not copied (the rows on to the
 * writer thread the same way).
 */
export function partTransferList(part: PlanPart): ArrayBuffer[] {
  return [...(part.rows ? rowsTransferList(part.rows) : []), ...(part.encoded ? requestsTransferList(part.encoded) : [])];
}

/**
 * How many parts of one plan may wait for the main thread: reading runs ahead of delivering by
 * this much (a part holds up to 4 MiB of requests), and no more, whatever the session's size.
 */
export const MAX_PARTS_AHEAD = 2;

/**
 * The job with every field present, in one order. The main thread leaves out what a session lacks
 * (no fingerprint yet, no recorded workspace), so jobs arrived in up to eight hidden classes, and
 * a new one deoptimized `planSession`'s optimized code, which V8 then compiled again (~85 ms of a
 * background thread each time). On the 1x import (--trace-opt --trace-deopt, one run each) this
 * took away the three deopts on a job's shape, and planSession's compiles took 369 ms against 506.
 */
export function uniformJob(job: PlanJob): PlanJob {
  const session: SessionRef = { sessionId: job.session.sessionId, dir: job.session.dir, createdAtMs: job.session.createdAtMs, updatedAtMs: job.session.updatedAtMs };
  return { session, targets: job.targets, fingerprint: job.fingerprint, recordedWorkspace: job.recordedWorkspace, decidedWorkspace: job.decidedWorkspace };
}
