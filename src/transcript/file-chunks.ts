import { closeSync, openSync, readSync } from 'node:fs';

export interface FileChunksOptions {
  /** Largest chunk read at once: what bounds memory, with the longest line the caller keeps. */
  chunkBytes: number;
  signal?: AbortSignal;
  /**
   * Every chunk is read into this buffer (at least `chunkBytes` long), which the caller may reuse
   * from file to file: it is done with a chunk before it asks for the next, and keeps no view of it.
   */
  into: Buffer;
}

/** What `createReadStream` rejects with when its signal fires, so callers see one error either way. */
function abortError(signal: AbortSignal): Error {
  return Object.assign(new Error('The operation was aborted', { cause: signal.reason }), { name: 'AbortError', code: 'ABORT_ERR' });
}

/**
 * A file's bytes in chunks of at most `chunkBytes`, read with synchronous calls on this thread.
 *
 * Why not `createReadStream`: a cold import reads thousands of small files, and the stream's
 * machinery (an open, reads and a close each sent to the thread pool and answered through the event
 * loop, a Readable per file) cost the main thread over a second on the bench tree, more than the
 * reading itself. A read of a file already in the page cache takes microseconds. Memory stays
 * bounded the same way: one chunk at a time, in the caller's buffer.
 */
export function* fileChunks(file: string | number, opts: FileChunksOptions): Generator<Buffer, void, undefined> {
  // A descriptor the caller opened (say, without following a symlink) is ours to close.
  const fd = typeof file === 'number' ? file : openSync(file, 'r');
  try {
    for (;;) {
      if (opts.signal?.aborted) throw abortError(opts.signal);
      const read = readSync(fd, opts.into, 0, opts.chunkBytes, null);
      if (read === 0) return;
      yield opts.into.subarray(0, read);
    }
  } finally {
    closeSync(fd);
  }
}
