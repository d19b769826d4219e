/**
 * The old-generation cap of the processes that read whole histories (`import`, the hook's
 * detached worker). V8 lets the heap grow with the garbage of a fast reader (garbage, not
 * retention: capped, the same runs finish as fast), and peak RSS of a 1x bench import was
 * ~300–400 MB uncapped, a 500 MB transcript 343 MB. The live heap measured ~30 MB; the cap leaves
 * room for a session's largest held messages (1 MiB each, 8 MiB held at most).
 */
export const HEAP_CAP_MB = 128;
export const HEAP_CAP_FLAG = `--max-old-space-size=${HEAP_CAP_MB}`;
