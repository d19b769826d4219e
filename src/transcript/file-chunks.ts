import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

export interface FileChunksOptions {
  /** Largest chunk read at once: what bounds memory, with the longest line the caller keeps. */
  chunkBytes: number;
  signal?: AbortSignal;
  /**
   * Read every chunk into this buffer (at least `chunkBytes` long) instead of a new one each: the
   * caller is done with a chunk before it asks for the next, and keeps no view of it.
   */
  into?: Buffer;
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
 * bounded the same way: one chunk at a time, sized to the file when it is smaller.
 */
export function* fileChunks(file: string | number, opts: FileChunksOptions): Generator<Buffer, void, undefined> {
  // A descriptor the caller opened (say, without following a symlink) is ours to close.
  const fd = typeof file === 'number' ? file : openSync(file, 'r');
  try {
    if (opts.signal?.aborted) throw abortError(opts.signal);
    const into = opts.into;
    // One more byte than the size: a file read to its end in one go needs no second buffer.
    let size = into ? opts.chunkBytes : Math.max(1, Math.min(opts.chunkBytes, fstatSync(fd).size + 1));
    for (;;) {
      if (opts.signal?.aborted) throw abortError(opts.signal);
      const buffer = into ?? Buffer.allocUnsafe(size);
      const read = readSync(fd, buffer, 0, size, null);
      if (read === 0) return;
      yield read === size ? buffer : buffer.subarray(0, read);
      // A short read was the end (the next read only confirms it: keep its buffer small); a full one
      // means more: full chunks from here on.
      if (!into) size = read < size ? Math.min(opts.chunkBytes, 4096) : opts.chunkBytes;
    }
  } finally {
    closeSync(fd);
  }
}
