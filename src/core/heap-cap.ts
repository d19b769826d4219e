import { availableParallelism } from 'node:os';

/**
 * The heap limits of the processes that read whole histories (`import`, the hook's detached
 * worker). V8 lets the heap grow with the garbage of a fast reader (garbage, not retention: capped,
 * the same runs finish as fast), and peak RSS of a 1x bench import was ~300–400 MB uncapped, a
 * 500 MB transcript 343 MB. The live heap measured ~30 MB; the old-generation cap leaves room for a
 * session's largest held messages (1 MiB each, 8 MiB held at most) and one line at the line cap.
 */
export const HEAP_CAP_MB = 128;
export const HEAP_CAP_FLAG = `--max-old-space-size=${HEAP_CAP_MB}`;
/**
 * The young generation too: V8's default semi-space (16 MB, three of them per isolate) was ~40 MB
 * of the 1x import's peak RSS when it ran on two isolates: 8 MB peaked at 222 MB against 264 MB.
 * Since planning moved to a pool of workers the process has four isolates (main, two planners,
 * the store's writer), and at 8 MB their young generations held 63 MB of the ~130 MB of V8 heap
 * at the peak (16 MB each, old spaces 11–23 MB). At 4 MB, in turn with 8 on the 1x tree (four
 * pairs): peak RSS 213–224 MB against 252–259, wall 0.98–1.12x of 8's, median ~1.01; on the tree
 * with 8x tool outputs (three pairs) 203–206 MB against 233–243, no slower. Before the pool,
 * when the main thread planned every session, 4 MB did run slower (scavenges got frequent); the
 * planners now scavenge their own young generations. The flag caps every isolate of the process.
 */
export const SEMI_SPACE_MB = 4;

/**
 * The threads V8 runs garbage-collection tasks on (concurrent marking, parallel scavenges), shared by
 * every isolate of the process; Node starts 4. An import already runs a JavaScript thread per core
 * and two more (a plan worker per core, the main thread, the store's writer), so on two cores four
 * helpers only took turns with them: at 1, in turn with 4 on a 2-core machine, the 1x import took
 * 0.96x the time (median of 7 pairs), and the import to the loopback gateway and the store 0.93x
 * (2 pairs; to the gateway alone it gained about as much). With more cores than the import's own
 * threads fill, the helpers get the rest, up to Node's 4 (measured on 2 cores only). The hook's
 * detached worker, one thread beside the user's agent, takes the same.
 */
export function gcHelperThreads(cores: number = availableParallelism()): number {
  return Math.min(4, Math.max(1, cores - 2));
}

/**
 * How much bytecode TurboFan may inline into one optimized function, cumulatively (V8's default is
 * 920). The process runs four isolates, and each compiles its own hot code: the plan workers both
 * compile the whole per-message pipeline, and every deoptimization (a message of a new shape)
 * compiles it again. Importing the bench's extra tree (3,000 sessions, the 1x tree's size), TurboFan's
 * background compiles were ~11% of the process's CPU samples (perf); on the 1x tree `planSession`
 * alone took ~90 ms a compile, 7 compiles (--trace-opt). With a quarter of the default, the
 * 1x import took 0.96x the CPU and wall time (median of 10 pairs of whole processes run in turn),
 * the tree with 8x tool outputs ~0.97x (6 pairs); at 460, 0.97–0.98x; at 115, no better than 230.
 * The hook's detached worker runs with these flags too; it was not measured on its own.
 */
export const INLINING_BUDGET_FLAG = '--max-inlined-bytecode-size-cumulative=230';

export const HEAP_CAP_FLAGS: readonly string[] = [HEAP_CAP_FLAG, `--max-semi-space-size=${SEMI_SPACE_MB}`, `--v8-pool-size=${gcHelperThreads()}`, INLINING_BUDGET_FLAG];

/**
 * The environment those processes add. glibc's malloc gives threads that allocate at once arenas of
 * their own (up to eight per core), and memory freed in one arena is reused by no other: the
 * import's threads (SQLite's page cache and FTS5's buffers on the store's writer, V8's off-heap
 * buffers on the planners) each kept a high-water mark of its own. With two arenas, in turn with
 * glibc's default: peak RSS of the 1x import 206–220 MB against 227–229 (three pairs), 3,000 new
 * sessions into the 10x bench store 255–256 MB against 266–272 (two pairs), wall time no different;
 * one arena measured the same as two. Other C libraries ignore the variable.
 */
export const HEAP_CAP_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };

/** `env` with HEAP_CAP_ENV under it: a value the user set is kept. */
export function heapCappedEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...HEAP_CAP_ENV, ...env };
}
