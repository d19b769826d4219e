/**
 * `jsonBytes` counts the UTF-8 bytes of `JSON.stringify(value)` without building it: the batcher
 * sizes every message against the gateway's request limit with it, so it must be exact.
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../bench/prng.js';
import { jsonBytes } from '../src/core/json-bytes.js';

const stringified = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');

/** Characters each JSON string case turns on: escapes, the UTF-8 widths, surrogates paired and lone. */
const ALPHABET = [
  ...Array.from({ length: 0x20 }, (_, c) => String.fromCharCode(c)),
  '"', '\\', '/', 'a', 'Z', '0', ' ', '\x7f',
  'é', 'ß', '\u07ff', '\u0800', '优', '\u2028', '\u2029', '\ufeff', '\uffff',
  '😀', '\ud83d', '\ude00', '\udbff\udfff',
];

function randomString(rand: () => number, maxLength: number): string {
  const length = Math.floor(rand() * maxLength);
  let s = '';
  for (let i = 0; i < length; i++) s += ALPHABET[Math.floor(rand() * ALPHABET.length)]!;
  return s;
}

function randomValue(rand: () => number, depth: number): unknown {
  const pick = Math.floor(rand() * (depth > 0 ? 9 : 6));
  switch (pick) {
    case 0:
      return randomString(rand, 40);
    case 1:
      return [0, -0, 1.5e-7, 1e21, -42, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY][Math.floor(rand() * 8)];
    case 2:
      return rand() < 0.5;
    case 3:
      return null;
    case 4:
      return undefined;
    case 5:
      return randomString(rand, 6);
    case 6:
    case 7: {
      const out: Record<string, unknown> = {};
      const keys = Math.floor(rand() * 5);
      for (let i = 0; i < keys; i++) out[rand() < 0.2 ? String(Math.floor(rand() * 10)) : randomString(rand, 8)] = randomValue(rand, depth - 1);
      return out;
    }
    default:
      return Array.from({ length: Math.floor(rand() * 5) }, () => randomValue(rand, depth - 1));
  }
}

describe('jsonBytes', () => {
  it('counts every escape JSON.stringify writes, and every UTF-8 width, inside a string', () => {
    for (const ch of ALPHABET) expect(jsonBytes(ch), JSON.stringify(ch)).toBe(stringified(ch));
    expect(jsonBytes('')).toBe(2);
    // A lone surrogate is written as \udXXX (6 bytes); paired, as the 4 bytes of its code point.
    expect(jsonBytes('a\ud83d')).toBe(stringified('a\ud83d'));
    expect(jsonBytes('\ude00\ud83d')).toBe(stringified('\ude00\ud83d'));
    expect(jsonBytes('line one\nline "two"\t\\')).toBe(stringified('line one\nline "two"\t\\'));
  });

  it('counts what JSON.stringify leaves out or writes as null, in objects and arrays', () => {
    const skipped = { a: undefined, b: () => 1, c: Symbol('s'), d: 1 };
    expect(jsonBytes(skipped)).toBe(stringified(skipped));
    const holes: unknown[] = [undefined, () => 1, Symbol('s')];
    holes[4] = 2; // index 3 is a hole
    expect(jsonBytes(holes)).toBe(stringified(holes));
    expect(jsonBytes({})).toBe(2);
    expect(jsonBytes([])).toBe(2);
  });

  it('counts numbers, booleans and null as JSON writes them', () => {
    for (const n of [0, -0, 7, -3.25, 1e21, 1e-7, 2 ** 53 + 2, Number.NaN, Number.NEGATIVE_INFINITY, Number.MAX_VALUE]) expect(jsonBytes(n)).toBe(stringified(n));
    for (const v of [true, false, null]) expect(jsonBytes(v)).toBe(stringified(v));
  });

  it('counts keys in the order and escaping JSON.stringify uses, integer-like keys first', () => {
    const value = { b: 1, 2: 'two', a: [1, { 'k"ey\n': '优' }], 1: null };
    expect(jsonBytes(value)).toBe(stringified(value));
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { x: 'y' });
    expect(jsonBytes(bare)).toBe(stringified(bare));
  });

  it('counts a value with toJSON, or of a class, by what JSON.stringify writes for it', () => {
    const date = new Date(Date.UTC(2026, 11, 5));
    expect(jsonBytes({ at: date })).toBe(stringified({ at: date }));
    class Point {
      constructor(
        readonly x: number,
        readonly y: string,
      ) {}
    }
    expect(jsonBytes([new Point(1, '优')])).toBe(stringified([new Point(1, '优')]));
    expect(jsonBytes({ toJSON: () => 'short' })).toBe(stringified({ toJSON: () => 'short' }));
  });

  it('agrees with JSON.stringify on 5,000 random JSON values', () => {
    const rand = mulberry32(28);
    for (let i = 0; i < 5000; i++) {
      const value = randomValue(rand, 4);
      expect(jsonBytes(value), JSON.stringify(value)).toBe(stringified(value));
    }
  });

  it('sizes an agent message as its JSON', () => {
    const message = {
      role: 'assistant',
      timestamp: 1789355112345,
      content: 'ran it\n\t"done"',
      toolCalls: [{ id: 'call_1', type: 'function', name: 'bash', arguments: JSON.stringify({ command: 'ls -la "my dir"' }) }],
      turnComplete: false,
    };
    expect(jsonBytes(message)).toBe(stringified(message));
  });
});
