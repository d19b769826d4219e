import { describe, expect, it } from 'vitest';
import { manifestSchema, quickManifest } from '../src/transcript/manifest.js';

const valid = { schemaVersion: 2, sessionId: 'mvs_a', createdAtMs: 1_780_000_000_000, updatedAtMs: 1_780_000_001_000, source: 'cli', layout: 'v2', paths: { dir: '/x' } };

/** Manifests the fast path must judge exactly as the schema does. */
const SAMPLES: Array<[string, unknown]> = [
  ['a complete manifest', valid],
  ['only the required fields', { sessionId: 'mvs_a', createdAtMs: 1 }],
  ['unknown keys', { ...valid, extra: [1, 2], nested: { a: 1 } }],
  ['no sessionId', { createdAtMs: 1 }],
  ['an empty sessionId', { sessionId: '', createdAtMs: 1 }],
  ['a numeric sessionId', { sessionId: 7, createdAtMs: 1 }],
  ['no createdAtMs', { sessionId: 'mvs_a' }],
  ['createdAtMs as a string', { sessionId: 'mvs_a', createdAtMs: '1' }],
  ['createdAtMs null', { sessionId: 'mvs_a', createdAtMs: null }],
  ['updatedAtMs as a string', { sessionId: 'mvs_a', createdAtMs: 1, updatedAtMs: 'soon' }],
  ['updatedAtMs null', { sessionId: 'mvs_a', createdAtMs: 1, updatedAtMs: null }],
  ['schemaVersion as a string', { sessionId: 'mvs_a', createdAtMs: 1, schemaVersion: '2' }],
  ['source as a number', { sessionId: 'mvs_a', createdAtMs: 1, source: 3 }],
  ['layout null', { sessionId: 'mvs_a', createdAtMs: 1, layout: null }],
  ['paths as an array', { sessionId: 'mvs_a', createdAtMs: 1, paths: [] }],
  ['paths as a string', { sessionId: 'mvs_a', createdAtMs: 1, paths: '/x' }],
  ['paths null', { sessionId: 'mvs_a', createdAtMs: 1, paths: null }],
  ['an array', [valid]],
  ['a string', 'mvs_a'],
  ['null', null],
];

describe('the manifest fast path', () => {
  it.each(SAMPLES)('judges %s exactly as the schema does', (_name, json) => {
    const parsed = manifestSchema.safeParse(json);
    const quick = quickManifest(json);
    expect(quick !== undefined).toBe(parsed.success);
    if (quick !== undefined && parsed.success) expect(quick).toEqual(parsed.data);
  });

  it('accepts what JSON.parse can give only when finite (the schema rejects what JSON cannot hold either)', () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY]) {
      for (const json of [{ sessionId: 'mvs_a', createdAtMs: bad }, { sessionId: 'mvs_a', createdAtMs: 1, updatedAtMs: bad }, { sessionId: 'mvs_a', createdAtMs: 1, schemaVersion: bad }]) {
        expect(quickManifest(json)).toBeUndefined();
        expect(manifestSchema.safeParse(json).success).toBe(false);
      }
    }
  });
});
