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
 * The young generation too: V8's default semi-space (16 MB, three of them per isolate, and the
 * writer thread is a second isolate) was ~40 MB of the 1x import's peak RSS. Measured on the 1x
 * bench tree, three runs each: 8 MB peaked at 222 MB against 264 MB, and ran no slower (4 MB did:
 * scavenges got frequent).
 */
export const SEMI_SPACE_MB = 8;
export const HEAP_CAP_FLAGS: readonly string[] = [HEAP_CAP_FLAG, `--max-semi-space-size=${SEMI_SPACE_MB}`];
