/** The global setup's staleness check (support/fresh-build.ts), on a throwaway tree with chosen mtimes. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { staleBuildReason } from './support/fresh-build.js';
import { tempDir } from './support/temp.js';

function write(root: string, rel: string, atSec: number): void {
  const file = path.join(root, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, '');
  fs.utimesSync(file, atSec, atSec);
}

function builtTree(): string {
  const root = tempDir();
  for (const rel of ['src/engine/run.ts', 'commands/import.ts', 'bench/run-all.ts', 'tsconfig.json', 'package.json']) write(root, rel, 1_000);
  write(root, 'dist/commands/import.js', 2_000);
  write(root, 'oclif.manifest.json', 2_000);
  // The dirs themselves get the same old time, so only a file decides.
  for (const dir of ['src/engine', 'src', 'commands', 'bench']) fs.utimesSync(path.join(root, dir), 1_000, 1_000);
  return root;
}

describe('the fresh-build check of the global setup', () => {
  it('calls a build current when every source is older than the manifest its last step wrote', () => {
    expect(staleBuildReason(builtTree())).toBeUndefined();
  });

  it('calls it stale when a source deep in src/ was edited after the build', () => {
    const root = builtTree();
    write(root, 'src/engine/run.ts', 3_000);
    expect(staleBuildReason(root)).toBe('src is newer than dist/');
  });

  it('calls it stale for a newer tsconfig.json, and when dist/ is missing', () => {
    const root = builtTree();
    write(root, 'tsconfig.json', 3_000);
    expect(staleBuildReason(root)).toBe('tsconfig.json is newer than dist/');
    fs.rmSync(path.join(root, 'dist'), { recursive: true });
    expect(staleBuildReason(root)).toBe('dist/ is missing');
  });

  it('ignores the bench corpora, which are data', () => {
    const root = builtTree();
    write(root, 'bench/.corpus/huge/a.jsonl', 3_000);
    fs.utimesSync(path.join(root, 'bench'), 1_000, 1_000);
    expect(staleBuildReason(root)).toBeUndefined();
  });
});
