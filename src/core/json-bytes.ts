/**
 * The UTF-8 length of `JSON.stringify(value)`, without building it.
 *
 * The batcher sizes every message of an import against the gateway's request limit. Stringifying
 * each one to count its bytes allocated over a quarter of all the plan phase allocates (~600 MB of
 * garbage on the 1x bench tree, whose texts are ~100 M characters); counting walks the value instead.
 */
import { isPlainObject } from './json.js';

/** Bytes an ASCII character takes inside a JSON string: `\"`, `\\` and the short escapes take 2, other controls `\u00XX`. */
const ASCII_BYTES = new Uint8Array(128).fill(1);
for (let c = 0; c < 0x20; c++) ASCII_BYTES[c] = 6;
for (const c of [0x08, 0x09, 0x0a, 0x0c, 0x0d, 0x22, 0x5c]) ASCII_BYTES[c] = 2;

/** A character JSON escapes, or a surrogate (a lone one is escaped): the strings that need the full count. */
const NEEDS_COUNTING = /[\u0000-\u001f"\\\ud800-\udfff]/;

/** Bytes of a string's JSON form, its quotes included. */
function stringBytes(s: string): number {
  // Most texts hold nothing to escape: their JSON form is their UTF-8 bytes in quotes (native, fast).
  if (!NEEDS_COUNTING.test(s)) return Buffer.byteLength(s, 'utf8') + 2;
  let n = 2;
  const length = s.length;
  for (let i = 0; i < length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += ASCII_BYTES[c]!;
    else if (c < 0x800) n += 2;
    else if (c < 0xd800 || c > 0xdfff) n += 3;
    else if (c <= 0xdbff && i + 1 < length && isLowSurrogate(s.charCodeAt(i + 1))) {
      n += 4;
      i++;
    } else {
      // A lone surrogate: well-formed JSON.stringify writes it as `\udXXX`.
      n += 6;
    }
  }
  return n;
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

/** What JSON.stringify leaves out of an object and writes as `null` in an array. */
function isSkipped(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

/**
 * `Buffer.byteLength(JSON.stringify(value))` for JSON-shaped values (plain objects, arrays, strings,
 * numbers, booleans, null); anything else (a `toJSON`, a class instance) is stringified to count it.
 * A value JSON.stringify cannot encode (a BigInt, a cycle) throws as it would.
 */
export function jsonBytes(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return stringBytes(value);
    case 'number':
      return Number.isFinite(value) ? String(value).length : 4;
    case 'boolean':
      return value ? 4 : 5;
    default:
      break;
  }
  if (value === null) return 4;
  if (Array.isArray(value) && Object.getPrototypeOf(value) === Array.prototype && !('toJSON' in value)) {
    let n = 2 + Math.max(0, value.length - 1);
    for (const item of value as unknown[]) n += isSkipped(item) ? 4 : jsonBytes(item);
    return n;
  }
  if (isPlainObject(value) && !('toJSON' in value)) {
    let n = 2;
    let first = true;
    for (const key of Object.keys(value)) {
      const item = value[key];
      if (isSkipped(item)) continue;
      n += (first ? 0 : 1) + stringBytes(key) + 1 + jsonBytes(item);
      first = false;
    }
    return n;
  }
  const text = JSON.stringify(value) as string | undefined;
  return text === undefined ? 0 : Buffer.byteLength(text, 'utf8');
}
