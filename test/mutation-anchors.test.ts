/**
 * The mutation proof (bench/mutation-proof.ts) breaks each safety rule by replacing an exact piece
 * of source. This checks, on every test run, that each piece is still there exactly once and that
 * each guarding test file exists: a refactor that moves one fails here, naming the rule, and the
 * break is rewritten for the new code, rather than the proof silently no longer applying.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { brokenText, MUTATIONS } from '../bench/mutation-proof.js';
import { repoRoot } from './support/cli.js';

describe('the mutation proof still applies to the code', () => {
  it('covers every rule the issue names', () => {
    expect(MUTATIONS.map((m) => m.rule)).toEqual([
      'session lock',
      'mark moves only after the ack',
      'redaction',
      'private-span gate',
      'exclusion',
      'forget tombstone',
      "viewer's Host check",
      "viewer's secret check",
    ]);
  });

  it.each(MUTATIONS.map((m) => [m.rule, m] as const))('%s: every anchor occurs once, and every guarding test file exists', (_rule, m) => {
    const { original, broken } = brokenText(repoRoot, m);
    expect(broken).not.toBe(original);
    for (const test of m.tests) expect(fs.existsSync(path.join(repoRoot, test)), test).toBe(true);
  });
});
