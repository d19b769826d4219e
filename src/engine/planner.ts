import { planSession, type EmitPart, type PlanJob, type PlanResult } from './session-plan.js';

/** Where sessions are planned: on this thread, or on a pool of worker threads (plan-pool.ts). */
export interface Planner {
  plan(job: PlanJob, emit: EmitPart): Promise<PlanResult>;
  close(): Promise<void>;
}

/** Plans on the calling thread: a hook's single session, a small sync, `show`, tests of the sources. */
export const inlinePlanner: Planner = {
  plan: planSession,
  close: () => Promise.resolve(),
};
