import { availableParallelism } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { builtFile } from '../core/package-root.js';
import { EvermeError, errorFromData } from '../core/errors.js';
import { SEMI_SPACE_MB } from '../core/heap-cap.js';
import type { PlanPart } from '../sinks/sink.js';
import type { FromPlanWorker, ToPlanWorker } from './plan-protocol.js';
import { inlinePlanner, type Planner } from './planner.js';
import type { EmitPart, PlanJob, PlanResult } from './session-plan.js';

/**
 * A worker's old generation: a plan holds one part (4 MiB of requests, their forms and rows) per
 * session in flight and one line at the line cap; capped like the main thread's (core/heap-cap.ts),
 * so a pool of them stays inside the import's memory bound. Its young generation is the main
 * thread's too (three semi-spaces), also where no flag caps the process (a sync).
 */
const WORKER_HEAP_MB = 96;

/** One job in a worker: where its parts go, in order, and how it ends. */
interface Job {
  emit: EmitPart;
  resolve: (result: PlanResult) => void;
  reject: (error: unknown) => void;
  /** Parts are delivered one after another, each once the one before it was. */
  chain: Promise<void>;
  /** The first failure delivering a part: the plan stops, and this is what it rejects with. */
  failure?: { error: unknown };
  /** The worker sent the plan's end: it waits for no more acks, so none is sent (see `deliver`). */
  ended?: boolean;
}

/** One plan worker: the jobs it runs, and what happens to them when it dies. */
class PlanThread {
  private readonly worker: Worker;
  private readonly jobs = new Map<number, Job>();
  private dead: EvermeError | undefined;

  constructor(url: URL) {
    this.worker = new Worker(url, { resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB, maxYoungGenerationSizeMb: 3 * SEMI_SPACE_MB } });
    this.worker.on('message', (message: FromPlanWorker) => this.receive(message));
    this.worker.on('error', (err) => this.die(new EvermeError('internal', `A plan worker failed: ${err.message}`, { cause: err })));
    this.worker.on('exit', (code) => this.die(new EvermeError('internal', `A plan worker exited (code ${code})`)));
    // Referenced only while it has work: an idle pool must not keep the process alive.
    this.worker.unref();
  }

  get load(): number {
    return this.jobs.size;
  }

  get alive(): boolean {
    return this.dead === undefined;
  }

  run(id: number, job: PlanJob, emit: EmitPart): Promise<PlanResult> {
    if (this.dead) return Promise.reject(this.dead);
    return new Promise<PlanResult>((resolve, reject) => {
      if (this.jobs.size === 0) this.worker.ref();
      this.jobs.set(id, { emit, resolve, reject, chain: Promise.resolve() });
      this.send({ kind: 'plan', id, job });
    });
  }

  terminate(): Promise<number> {
    this.die(new EvermeError('internal', 'The plan pool was closed'));
    return this.worker.terminate();
  }

  private send(message: ToPlanWorker): void {
    this.worker.postMessage(message);
  }

  private receive(message: FromPlanWorker): void {
    const job = this.jobs.get(message.id);
    if (!job) return;
    switch (message.kind) {
      case 'part':
        job.chain = job.chain.then(() => this.deliver(message.id, job, message.target, message.part));
        return;
      case 'done':
        job.ended = true;
        this.end(message.id, job, () => job.resolve(message.result));
        return;
      case 'failed':
        job.ended = true;
        this.end(message.id, job, () => job.reject(job.failure ? job.failure.error : errorFromData(message.error)));
        return;
    }
  }

  /**
   * A part to the main thread's sinks; the worker hears when it may send more, or that it must stop,
   * unless its plan has ended meanwhile, as most do after their one part: an ack then wakes an idle
   * worker for nothing, and on two busy cores that wake-up took the main thread ~0.1 ms a part.
   */
  private async deliver(id: number, job: Job, target: number, part: PlanPart): Promise<void> {
    if (!job.failure) {
      try {
        await job.emit(target, part);
      } catch (error) {
        job.failure = { error };
      }
    }
    if (this.alive && !job.ended) this.send({ kind: 'ack', id, stop: job.failure !== undefined });
  }

  /** The job ends once every part before its end was delivered. */
  private end(id: number, job: Job, settle: () => void): void {
    void job.chain.then(() => {
      if (job.failure && this.jobs.get(id) === job) job.reject(job.failure.error);
      else settle();
      this.forget(id);
    });
  }

  private forget(id: number): void {
    this.jobs.delete(id);
    if (this.jobs.size === 0) this.worker.unref();
  }

  /** A worker that died fails the sessions it was planning, and only those; their marks never moved. */
  private die(reason: EvermeError): void {
    if (this.dead) return;
    this.dead = reason;
    for (const [id, job] of this.jobs) void job.chain.then(() => job.reject(reason)).finally(() => this.forget(id));
    this.worker.unref();
  }
}

/** A session waiting for a worker. */
interface Queued {
  job: PlanJob;
  emit: EmitPart;
  resolve: (result: PlanResult) => void;
  reject: (error: unknown) => void;
}

/**
 * Plans sessions on worker threads (plan-worker.ts), so that reading, converting, redacting and
 * encoding run on every core while the main thread delivers. A worker plans one session at a time,
 * so one that dies takes only that session with it; the next session gets a new worker. Sessions
 * wait here for a free worker (the run's p-limit bounds how many).
 */
export class PlanPool implements Planner {
  private readonly threads: PlanThread[] = [];
  private readonly queue: Queued[] = [];
  private nextId = 1;
  /** No worker could be started (resource limits): plan on this thread, slower, never wrong. */
  private inline = false;

  constructor(
    private readonly url: URL,
    readonly size: number,
  ) {}

  plan(job: PlanJob, emit: EmitPart): Promise<PlanResult> {
    if (this.inline) return inlinePlanner.plan(job, emit);
    return new Promise<PlanResult>((resolve, reject) => {
      this.queue.push({ job, emit, resolve, reject });
      this.dispatch();
    });
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      const thread = this.idleThread();
      if (!thread) return;
      const next = this.queue.shift()!;
      thread
        .run(this.nextId++, next.job, next.emit)
        .then(next.resolve, next.reject)
        .finally(() => this.dispatch());
    }
  }

  private idleThread(): PlanThread | undefined {
    for (let i = this.threads.length - 1; i >= 0; i--) if (!this.threads[i]!.alive) this.threads.splice(i, 1);
    const idle = this.threads.find((t) => t.load === 0);
    if (idle || this.threads.length >= this.size) return idle;
    try {
      const thread = new PlanThread(this.url);
      this.threads.push(thread);
      return thread;
    } catch {
      if (this.threads.length > 0) return undefined;
      // Not one worker to be had: what waits is planned here.
      this.inline = true;
      const waiting = this.queue.splice(0);
      for (const q of waiting) inlinePlanner.plan(q.job, q.emit).then(q.resolve, q.reject);
      return undefined;
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.threads.map((t) => t.terminate()));
    this.threads.length = 0;
  }
}

/** The worker entry of the build (see `builtFile`); sources run by a test runner have none (they plan inline). */
export function planWorkerUrl(): URL | undefined {
  const file = builtFile(import.meta.url, 'src/engine/plan-worker.js');
  return file === undefined ? undefined : pathToFileURL(file);
}

/** Workers for a bulk run: one per core. The main thread (delivering) and the store's writer thread share them with the workers. */
export function defaultPoolSize(): number {
  return Math.max(1, availableParallelism());
}
