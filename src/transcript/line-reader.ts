import { fileChunks } from './file-chunks.js';

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
}

export interface LineReaderOptions extends ReadLinesOptions {
  /**
   * Called with the end result once every complete line was yielded; `for await` discards a
   * generator's return value, and `for await` is what closes the file when a reader stops early.
   */
  onEnd?: (result: ReadLinesResult) => void;
}

const NEWLINE = 0x0a;

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
 * Streams a file line by line with memory bounded by the longest line: chunks are split on byte
 * 0x0A and only complete lines are decoded, never the whole file.
 */
export async function* readLines(
  file: string,
  opts: LineReaderOptions = {},
): AsyncGenerator<Line, ReadLinesResult, undefined> {
  const chunks = fileChunks(file, { chunkBytes: opts.highWaterMark ?? 256 * 1024, signal: opts.signal });
  let pending: Buffer[] = [];
  let lineStart = 0;
  let offset = 0;
  let lineNo = 0;
  for await (const chunk of chunks) {
    let from = 0;
    for (let nl = chunk.indexOf(NEWLINE, from); nl !== -1; nl = chunk.indexOf(NEWLINE, from)) {
      if (nl > from) pending.push(chunk.subarray(from, nl));
      lineNo += 1;
      const end = offset + nl + 1;
      if (!isBlank(pending)) yield { line: decode(pending), lineNo, start: lineStart, end };
      pending = [];
      lineStart = end;
      from = nl + 1;
    }
    // Copy the remainder: a subarray would pin the whole chunk while a long line accumulates.
    if (from < chunk.length) pending.push(Buffer.from(chunk.subarray(from)));
    offset += chunk.length;
  }
  const result = { consumedBytes: lineStart, incompleteTail: !isBlank(pending), tailLineNo: lineNo + 1 };
  opts.onEnd?.(result);
  return result;
}
