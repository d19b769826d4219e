import { MAX_UTF8_PER_UNIT } from '../core/utf8.js';

/**
 * The size bound of one stored message's text. A 200 MB tool output is not memory, and storing it
 * whole costs the gateway and the SQLite file that much; what matters of it is its beginning and its
 * end. Longer text keeps its first and last half-budget (in UTF-8 bytes, never splitting a
 * character) around a marker that says how much was left out.
 */
export const MAX_CONTENT_BYTES = 1024 * 1024;

/**
 * Extra characters each side kept through cleaning and redaction before the final cut: a credential
 * that straddles the cut is masked in full (the window is wider than any token or key block), and
 * what cleaning removes (escape sequences) does not leave the kept part short.
 */
const WINDOW_MARGIN = 64 * 1024;

export interface CappedText {
  text: string;
  /** True when bytes were left out: the caller warns `oversized_unit`. */
  capped: boolean;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** At most `maxBytes` UTF-8 bytes from the start, ending on a character boundary. */
export function utf8Head(s: string, maxBytes: number): string {
  let end = Math.min(s.length, maxBytes);
  if (end > 0 && end < s.length && isHighSurrogate(s.charCodeAt(end - 1))) end--;
  const bytes = Buffer.from(s.slice(0, end), 'utf8');
  if (bytes.length <= maxBytes) return s.slice(0, end);
  let cut = maxBytes;
  while (cut > 0 && (bytes[cut]! & 0xc0) === 0x80) cut--;
  return bytes.subarray(0, cut).toString('utf8');
}

/** At most `maxBytes` UTF-8 bytes from the end, starting on a character boundary. */
export function utf8Tail(s: string, maxBytes: number): string {
  let start = Math.max(0, s.length - maxBytes);
  if (start > 0 && isLowSurrogate(s.charCodeAt(start))) start++;
  const bytes = Buffer.from(s.slice(start), 'utf8');
  if (bytes.length <= maxBytes) return s.slice(start);
  let cut = bytes.length - maxBytes;
  while (cut < bytes.length && (bytes[cut]! & 0xc0) === 0x80) cut++;
  return bytes.subarray(cut).toString('utf8');
}

/** Each UTF-16 unit is 1 to 3 UTF-8 bytes: most texts are decided without encoding them. */
function fitsIn(s: string, maxBytes: number): boolean {
  if (s.length * MAX_UTF8_PER_UNIT <= maxBytes) return true;
  if (s.length > maxBytes) return false;
  return Buffer.byteLength(s, 'utf8') <= maxBytes;
}

export function omittedMarker(bytes: number): string {
  return `\n[… ${bytes} bytes omitted by everme …]\n`;
}

/**
 * `transform(raw)` (cleaning and redaction), bounded to `maxBytes` of UTF-8. For long input only a
 * window at each end is transformed, so the cost of a huge text is that of its kept parts.
 */
export function capText(raw: string, transform: (s: string) => string, maxBytes = MAX_CONTENT_BYTES): CappedText {
  if (fitsIn(raw, maxBytes)) {
    const text = transform(raw);
    if (fitsIn(text, maxBytes)) return { text, capped: false };
  }
  const half = Math.floor(maxBytes / 2) - 64;
  const window = half + WINDOW_MARGIN;
  let head: string;
  let tail: string;
  if (raw.length <= 2 * window) {
    const text = transform(raw);
    head = utf8Head(text, half);
    tail = utf8Tail(text, half);
  } else {
    head = utf8Head(transform(raw.slice(0, window)), half);
    tail = utf8Tail(transform(raw.slice(raw.length - window)), half);
  }
  const omitted = Math.max(0, Buffer.byteLength(raw, 'utf8') - Buffer.byteLength(head) - Buffer.byteLength(tail));
  return { text: `${head}${omittedMarker(omitted)}${tail}`, capped: true };
}
