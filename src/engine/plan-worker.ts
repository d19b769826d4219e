/**
 * A plan worker behind `PlanPool`: plans the sessions the main thread sends (session-plan.ts),
 * posting each part as it fills and the result at the end. It reads the session's files and
 * nothing else: no database, no network.
 */
import { parentPort } from 'node:worker_threads';
import { errorData, EvermeError, toEvermeError } from '../core/errors.js';
import type { PlanPart } from '../sinks/sink.js';
import { lowerThisThreadPriority } from '../core/thread-priority.js';
import { MAX_PARTS_AHEAD, PLAN_WORKER_NICE_STEP, partTransferList, uniformJob, type FromPlanWorker, type ToPlanWorker } from './plan-protocol.js';
import { planSession, type PlanJob } from './session-plan.js';

const port = parentPort;
if (!port) throw new Error('plan-worker must run as a worker thread');
// See PLAN_WORKER_NICE_STEP: the main thread and the store's writer go first.
lowerThisThreadPriority(PLAN_WORKER_NICE_STEP);

/** Parts posted and not yet delivered, per job, and who waits for room. */
interface Window {
  ahead: number;
  stopped: boolean;
  wake?: () => void;
}

const windows = new Map<number, Window>();

function post(message: FromPlanWorker, transfer: ArrayBuffer[] = []): void {
  port!.postMessage(message, transfer);
}

async function emit(id: number, window: Window, target: number, part: PlanPart): Promise<void> {
  if (window.stopped) throw new EvermeError('cancelled', 'The plan was stopped');
  post({ kind: 'part', id, target, part }, partTransferList(part));
  window.ahead += 1;
  while (window.ahead >= MAX_PARTS_AHEAD && !window.stopped) await new Promise<void>((resolve) => (window.wake = resolve));
  if (window.stopped) throw new EvermeError('cancelled', 'The plan was stopped');
}

async function run(id: number, job: PlanJob): Promise<void> {
  const window: Window = { ahead: 0, stopped: false };
  windows.set(id, window);
  try {
    const result = await planSession(job, (target, part) => emit(id, window, target, part));
    post({ kind: 'done', id, result });
  } catch (err) {
    post({ kind: 'failed', id, error: errorData(toEvermeError(err)) });
  } finally {
    windows.delete(id);
  }
}

port.on('message', (message: ToPlanWorker) => {
  switch (message.kind) {
    case 'plan':
      void run(message.id, uniformJob(message.job));
      return;
    case 'ack': {
      const window = windows.get(message.id);
      if (!window) return;
      window.ahead -= 1;
      if (message.stop) window.stopped = true;
      window.wake?.();
      window.wake = undefined;
      return;
    }
  }
});
