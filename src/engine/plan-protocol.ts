import type { EvermeErrorData } from '../core/errors.js';
import type { PlanPart } from '../sinks/sink.js';
import { rowsTransferList } from '../store/message-rows.js';
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

/** A part's encoded rows are moved to the main thread, not copied (and on to the writer thread the same way). */
export function partTransferList(part: PlanPart): ArrayBuffer[] {
  return part.rows ? rowsTransferList(part.rows) : [];
}

/**
 * How many parts of one plan may wait for the main thread: reading runs ahead of delivering by
 * this much (a part holds up to 4 MiB of requests), and no more, whatever the session's size.
 */
export const MAX_PARTS_AHEAD = 2;
