import { constants, openSync } from 'node:fs';
import { fileChunks } from './file-chunks.js';

/**
 * No string is ever built for a line longer than this: a complete line costs its bytes, its string,
 * and the parsed value, so the cap bounds the reader's memory whatever the file holds.
 * `EVERME_MAX_LINE_BYTES` lowers it (tests use a small one to stay fast).
 */
export const DEFAULT_MAX_LINE_BYTES = 32 * 1024 * 1024;

export function maxLineBytesFromEnv(env: Record<string, string | undefined> = process.env): number {
  const n = Number(env.EVERME_MAX_LINE_BYTES);
  return Number.isSafeInteger(n) && n > 0 ? n : DEFAULT_MAX_LINE_BYTES;
}

/** Opened without following a symlink in the last path component: history is never read through one. */
// Non-blocking too: a FIFO planted where a history file should be must not hang a synchronous read.
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/** What the reader skipped, with the 1-based line (0 for the file as a whole). */
export type LineReaderReport = (code: 'oversized_line' | 'symlinked_file', lineNo: number) => void;

/** One complete, non-blank line of a JSONL file. */
export interface Line {
  /** The decoded line without its `\n` (a trailing `\r` is kept; JSON.parse treats it as whitespace). */
  line: string;
  /** 1-based. Blank lines are skipped but still counted, so numbers match an editor's. */
  lineNo: number;
  /** Byte offset of the line's first byte. */
  start: number;
  /** Byte offset just past the line's `\n`. */
  end: number;
}

/** How a read ended, returned from the generator once every complete line was yielded. */
export interface ReadLinesResult {
  /**
   * Bytes up to and including the last `\n`: everything that was consumed. A caller that remembers
   * this can tell appended data from a replaced file, and never skips a tail still being written.
   */
  consumedBytes: number;
  /** Non-blank bytes after the last `\n`: a line that may still be being written; not yielded. */
  incompleteTail: boolean;
  /** Line number the unfinished tail would have; only meaningful when `incompleteTail`. */
  tailLineNo: number;
}

export interface ReadLinesOptions {
  signal?: AbortSignal;
  /** Read chunk size; small values exist so tests can force lines to straddle chunks. */
  highWaterMark?: number;
  /** Longest line decoded; longer ones are skipped and reported. Default: `maxLineBytesFromEnv()`. */
  maxLineBytes?: number;
  /**
   * The file is finished (an export, not a transcript being written): a last line without its
   * `\n` is a line like any other, yielded (or reported when oversized) instead of held back.
   */
  finished?: boolean;
}

export interface LineReaderOptions extends ReadLinesOptions {
  /**
   * Called with the end result once every complete line was yielded; `for await` discards a
   * generator's return value, and `for await` is what closes the file when a reader stops early.
   */
  onEnd?: (result: ReadLinesResult) => void;
  /** Told about an oversized line (skipped, the file goes on) or a symlink (not opened, nothing read). */
  report?: LineReaderReport;
}

const NEWLINE = 0x0a;

/**
 * Read buffers of the default chunk size (which serves any smaller one), free for the next reader.
 * A cold import reads thousands of files: with a new buffer for each, a plan worker spent ~0.15 s
 * of the 1x bench import allocating them (`createUnsafeBuffer`) and its reads ran ~0.06 s longer
 * into fresh memory; reused, the import of the tree with 8x tool outputs took 3% less time and CPU
 * (14 pairs run in turn). A reader takes one for its file and gives it back when it ends; readers
 * in flight at once each hold their own.
 */
const freeChunkBuffers: Buffer[] = [];
/** More than the readers a thread has in flight at once; past it, a returned buffer is dropped. */
const MAX_FREE_CHUNK_BUFFERS = 8;
const DEFAULT_CHUNK_BYTES = 256 * 1024;

/** A free buffer for chunks of up to `chunkBytes`; a larger chunk size gets a buffer of its own. */
function takeChunkBuffer(chunkBytes: number): Buffer {
  if (chunkBytes > DEFAULT_CHUNK_BYTES) return Buffer.allocUnsafe(chunkBytes);
  return freeChunkBuffers.pop() ?? Buffer.allocUnsafe(DEFAULT_CHUNK_BYTES);
}

function giveBackChunkBuffer(buffer: Buffer): void {
  if (buffer.length === DEFAULT_CHUNK_BYTES && freeChunkBuffers.length < MAX_FREE_CHUNK_BUFFERS) freeChunkBuffers.push(buffer);
}

function isBlank(parts: readonly Buffer[]): boolean {
  for (const part of parts) {
    for (const byte of part) {
      // space, tab, carriage return
      if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return false;
    }
  }
  return true;
}

function decode(parts: readonly Buffer[]): string {
  // Decoding only whole lines keeps multi-byte UTF-8 sequences intact across chunk boundaries.
  return parts.length === 1 ? parts[0]!.toString('utf8') : Buffer.concat(parts).toString('utf8');
}

/**
 * Streams a file line by line with memory bounded by the line cap: chunks are split on byte 0x0A and
 * only complete lines up to `maxLineBytes` are decoded, never the whole file. A longer line is
 * dropped as it streams past (its bytes are never kept) and reported at its line number; a symlink
 * is not followed but reported and read as empty.
 */
export async function* readLines(
  file: string,
  opts: LineReaderOptions = {},
): AsyncGenerator<Line, ReadLinesResult, undefined> {
  const maxLineBytes = opts.maxLineBytes ?? maxLineBytesFromEnv();
  let fd: number;
  try {
    fd = openSync(file, OPEN_FLAGS);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ELOOP') throw err;
    opts.report?.('symlinked_file', 0);
    const empty = { consumedBytes: 0, incompleteTail: false, tailLineNo: 1 };
    opts.onEnd?.(empty);
    return empty;
  }
  const chunkBytes = opts.highWaterMark ?? DEFAULT_CHUNK_BYTES;
  // Each chunk is done with (its lines decoded, its remainder copied) before the next is read.
  const into = takeChunkBuffer(chunkBytes);
  const chunks = fileChunks(fd, { chunkBytes, signal: opts.signal, into });
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  /** The current line passed the cap: its bytes are dropped until its newline. */
  let oversized = false;
  let lineStart = 0;
  let offset = 0;
  let lineNo = 0;
  const keep = (part: Buffer): void => {
    if (oversized) return;
    if (pendingBytes + part.length > maxLineBytes) {
      oversized = true;
      pending = [];
      pendingBytes = 0;
      return;
    }
    pending.push(part);
    pendingBytes += part.length;
  };
  try {
    for (const chunk of chunks) {
      let from = 0;
      for (let nl = chunk.indexOf(NEWLINE, from); nl !== -1; nl = chunk.indexOf(NEWLINE, from)) {
        if (nl > from) keep(chunk.subarray(from, nl));
        lineNo += 1;
        const end = offset + nl + 1;
        if (oversized) opts.report?.('oversized_line', lineNo);
        else if (!isBlank(pending)) yield { line: decode(pending), lineNo, start: lineStart, end };
        pending = [];
        pendingBytes = 0;
        oversized = false;
        lineStart = end;
        from = nl + 1;
      }
      // Copy the remainder: a subarray would pin the whole chunk while a long line accumulates, and
      // the next read overwrites a reused buffer under it.
      if (from < chunk.length && !oversized) keep(Buffer.from(chunk.subarray(from)));
      offset += chunk.length;
    }
  } finally {
    giveBackChunkBuffer(into);
  }
  if (opts.finished && (oversized || !isBlank(pending))) {
    lineNo += 1;
    if (oversized) opts.report?.('oversized_line', lineNo);
    else yield { line: decode(pending), lineNo, start: lineStart, end: offset };
    lineStart = offset;
    pending = [];
    oversized = false;
  }
  const result = { consumedBytes: lineStart, incompleteTail: oversized || !isBlank(pending), tailLineNo: lineNo + 1 };
  opts.onEnd?.(result);
  return result;
}
