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
 * How much nicer than the process a plan worker runs (Linux, see core/thread-priority.ts). Plans
 * run ahead of delivery by a bounded backlog, so a plan worker that waits for a core costs nothing
 * while the backlog holds work; the store's writer thread that waits for one holds everything up
 * once it is what bounds the run: in a store with common words, where it counts the term index (a
 * sync, or an import past its first 131,072 messages, see term-index.ts). 3,000 new sessions into
 * the 10x bench store: the writer thread spent 3.2 s of its 12.4 s waiting for a core (/proc
 * schedstat) while the workers planned ahead, 0.9-1.1 s with the workers at +10. With the workers at
 * +10, in turn with +0: that import 0.89, 0.81, 0.84, 0.95x the time (four pairs), the 10x cold
 * import 0.88x and 0.88x (two pairs, ~91-99 s against ~104-112 s); cold imports into an empty store,
 * where the workers bound the run and every thread's work still gets done on the two cores, the
 * same (1x tree 0.89-1.07x, the extra tree 0.97-1.03x, four pairs each). The plan workers are most
 * of an import's CPU, and they yield to the user's other programs too.
 */
export const PLAN_WORKER_NICE_STEP = 10;

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
