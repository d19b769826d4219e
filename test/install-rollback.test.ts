import { chmodSync, cpSync, mkdirSync, symlinkSync, writeFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { installTargets } from '../src/install/install-transaction.js';
import { runInstall } from '../src/install/install-plan.js';
import { restorePaths, snapshotPaths } from '../src/install/path-snapshot.js';
import { repoRoot } from './support/cli.js';
import { hashTree, makeFakePackage, tempDir } from './install-helpers.js';

const KEY = 'evt_a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6';

let source: string;
beforeAll(() => {
  source = tempDir();
  makeFakePackage(source);
});

/** Paths (relative, no trailing slash) whose entry differs between two hashTree maps. */
function changed(before: Map<string, string>, after: Map<string, string>): string[] {
  const keys = new Set([...before.keys(), ...after.keys()]);
  return [...keys].filter((k) => before.get(k) !== after.get(k)).map((k) => k.replace(/\/$/, ''));
}

describe('install rollback', () => {
  it('snapshots every path a full install creates or changes (the runtime aside): nothing it writes escapes the undo', async () => {
    const data = tempDir('everme-data-');
    mkdirSync(path.join(data, 'v2', 'sessions'), { recursive: true });
    cpSync(path.join(repoRoot, 'fixtures', 'minimax', 'mcp.json'), path.join(data, 'mcp.json'));
    writeFileSync(path.join(data, 'everme.env'), 'EVERME_AGENT_ID=agt_1\n', { mode: 0o600 });
    const before = hashTree(data);
    await runInstall({ dataDir: data, apiKey: KEY, sourceRoot: source, node: '/usr/bin/node', detect: { pathEnv: '' } });
    const targets = new Set(installTargets(data).map((p) => path.relative(data, p)));
    const written = changed(before, hashTree(data)).filter((rel) => !rel.startsWith(`everme${path.sep}runtime`));
    // The list is what the assertion below is about: make sure the install really touched these.
    expect(written).toEqual(expect.arrayContaining(['everme.env', 'mcp.json', 'mcp.json.everme-backup', 'hooks', 'everme/install.json']));
    expect(written.filter((rel) => !targets.has(rel))).toEqual([]);
  });

  it('puts back files (bytes and mode), directory modes and symlinks, removes what was absent, and leaves what it cannot restore, naming it', () => {
    const root = tempDir('everme-snap-');
    const file = path.join(root, 'file');
    const dir = path.join(root, 'dir');
    const link = path.join(root, 'link');
    const made = path.join(root, 'made');
    const foreign = path.join(root, 'foreign');
    writeFileSync(file, 'original\n', { mode: 0o640 });
    chmodSync(file, 0o640);
    mkdirSync(dir, { mode: 0o750 });
    chmodSync(dir, 0o750);
    symlinkSync('file', link);
    const before = hashTree(root);
    const snapshots = snapshotPaths([file, dir, link, made, path.join(made, 'inner'), foreign]);

    writeFileSync(file, 'changed\n');
    chmodSync(file, 0o600);
    chmodSync(dir, 0o700);
    rmSync(link);
    writeFileSync(link, 'a file where the link was\n');
    mkdirSync(made);
    writeFileSync(path.join(made, 'inner'), 'ours\n');
    // Absent before, but now a directory holding something not among the snapshotted paths: kept.
    mkdirSync(foreign);
    writeFileSync(path.join(foreign, 'keep'), 'not ours\n');

    expect(restorePaths(snapshots)).toEqual([foreign]);
    const after = hashTree(root);
    expect(after.get('foreign/keep')).toBeDefined();
    after.delete('foreign/');
    after.delete('foreign/keep');
    expect(after).toEqual(before);
  });
});
