/**
 * `npm run build` bundles every command but the hook, oclif, the bulk run's thread entries and the
 * hook's background worker with them (esbuild, chunks shared under dist/chunks/): a command then
 * loads a few files instead of resolving ~200 modules one by one. A module in a chunk no longer
 * sits beside the files it starts, so those are found from the package root.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateCorpus } from '../bench/corpus.js';
import { cliEnv, envelopeOf, runCli } from './support/cli-process.js';
import { repoRoot } from './support/cli.js';
import { ensureBuilt } from './support/hook-harness.js';
import { tempDir } from './transcript-helpers.js';

const commandsDir = path.join(repoRoot, 'dist', 'commands');
const chunksDir = path.join(repoRoot, 'dist', 'chunks');

function builtFiles(): string[] {
  ensureBuilt();
  const inDir = (dir: string): string[] => fs.readdirSync(dir).filter((name) => name.endsWith('.js')).map((name) => path.join(dir, name));
  return [...inDir(commandsDir), ...inDir(chunksDir)];
}

/**
 * The entries of the threads a bulk run starts (see plan-pool.ts and local-writer.ts), and of the
 * process a hook starts to deliver in the background (hook-entry.ts).
 */
function workerEntries(): string[] {
  ensureBuilt();
  return [
    path.join(repoRoot, 'dist', 'src', 'engine', 'plan-worker.js'),
    path.join(repoRoot, 'dist', 'src', 'store', 'local-writer-thread.js'),
    path.join(repoRoot, 'dist', 'src', 'hook', 'worker-main.js'),
  ];
}

/**
 * What a built file loads, as written: `from '…'`, `import '…'`, `import('…')` (esbuild keeps a
 * lazy import) and `require('…')` (the bundles' banner makes one for packages left external).
 */
function loadedSpecifiers(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from\s*|import\s*\(?\s*|require\(\s*)["']([^"']+)["']/g)].map((m) => m[1]!);
}

/** Where a built file's relative loads (`./…`, `../…`) point, resolved. */
function relativeImports(file: string): string[] {
  return loadedSpecifiers(file)
    .filter((specifier) => /^\.{1,2}\//.test(specifier))
    .map((specifier) => path.resolve(path.dirname(file), specifier));
}

/**
 * The built CLI's `command` over a generated tree, with a preload from test/support/ that writes
 * what it saw to the file `logVar` names: the run's envelope data and that file's lines.
 */
async function runLogged(command: 'sync' | 'import', sessions: number, bytes: number, preload: string, logVar: string) {
  const root = tempDir();
  const dataDir = path.join(root, 'data');
  fs.mkdirSync(dataDir);
  generateCorpus(dataDir, sessions, bytes);
  const log = path.join(root, 'preload.log');
  const env = cliEnv(root, {
    EVERME_STATE_DIR: path.join(root, 'state'),
    NODE_OPTIONS: `--require ${path.join(repoRoot, 'test', 'support', preload)}`,
    [logVar]: log,
  });
  const result = await runCli([command, '--since', '2026-01-01', '--data-dir', dataDir, '--sink', 'local', '--json'], env);
  expect(result.code, result.stderr).toBe(0);
  return { data: envelopeOf(result).data, lines: fs.readFileSync(log, 'utf8').trim().split('\n') };
}

describe('the bundled commands', () => {
  it('load their code from shared chunks, not from our sources one module at a time (the hook keeps its own bundle)', () => {
    const files = builtFiles();
    expect(files.some((file) => file.startsWith(chunksDir))).toBe(true);
    const sourcesDir = path.join(repoRoot, 'dist', 'src');
    for (const file of files) {
      const fromSources = relativeImports(file).filter((target) => target.startsWith(`${sourcesDir}${path.sep}`));
      if (path.basename(file) === 'hook.js') expect(fromSources).toContain(path.join(sourcesDir, 'hook', 'hook-entry.js'));
      else expect(fromSources, path.relative(repoRoot, file)).toEqual([]);
    }
  });

  it("carry zod's English messages and none of its other locales, which every command would parse at start", () => {
    // `import { z } from 'zod'` takes zod's namespace object whole, its ~40 locales included (half
    // of the largest chunk); `import * as z` lets the bundler keep only what is used.
    const locales = new Set<string>();
    for (const file of builtFiles()) {
      for (const m of fs.readFileSync(file, 'utf8').matchAll(/^\/\/ node_modules\/zod\/v4\/locales\/([\w-]+)\.js$/gm)) locales.add(m[1]!);
    }
    expect([...locales]).toEqual(['en']);
  });

  it("start a bulk run's plan workers and writer thread, and a hook's background worker, from the bundle too: their entries load shared chunks, not our sources or zod module by module", () => {
    // Every thread loads its own modules: from our sources one by one (zod alone is 95 files), that
    // took each of the import's threads 0.07-0.11 s at start, and a hook's worker 0.35 s of CPU
    // before it read anything, against 0.22 s from the bundle.
    for (const entry of workerEntries()) {
      const relative = relativeImports(entry);
      expect(relative.length, path.relative(repoRoot, entry)).toBeGreaterThan(0);
      for (const target of relative) expect(path.dirname(target), path.relative(repoRoot, entry)).toBe(chunksDir);
      expect(loadedSpecifiers(entry), path.relative(repoRoot, entry)).not.toContain('zod');
    }
  });

  it('never look for a file beside themselves that is not there', () => {
    for (const file of [...builtFiles(), ...workerEntries()]) {
      const text = fs.readFileSync(file, 'utf8');
      for (const m of text.matchAll(/new URL\(\s*["'](\.{1,2}\/[^"']+)["']\s*,\s*import\.meta\.url\s*\)/g)) {
        const target = path.resolve(path.dirname(file), m[1]!);
        expect(fs.existsSync(target), `${path.relative(repoRoot, file)} looks for ${m[1]}`).toBe(true);
      }
    }
  });

  it('run on the one copy of oclif bundled with them, never on @oclif/core loaded module by module', async () => {
    // bin/run.js takes oclif's `execute` from dist/src/cli/oclif-main.js, bundled with the commands:
    // loading @oclif/core from node_modules resolved ~150 modules at every start (~65 ms of a no-op
    // sync), and a command on another copy than the runner's would meet two Command classes.
    const { data, lines: loaded } = await runLogged('sync', 2, 2000, 'module-log.cjs', 'MODULE_LOG');
    expect(data).toMatchObject({ sessions: { scanned: 2, delivered: 2 } });
    // The log itself works: better-sqlite3 is CommonJS and stays outside the bundle.
    expect(loaded.some((file) => file.includes(`${path.sep}better-sqlite3${path.sep}`))).toBe(true);
    expect(loaded.filter((file) => file.includes(`${path.sep}@oclif${path.sep}core${path.sep}`))).toEqual([]);
  });

  it('plan a large sync on the plan workers from its CommonJS bundle, which finds their entry from the package root', async () => {
    // bin/run.js runs sync from dist/src/cli/sync-entry.bundle.cjs: were its threads' entries not
    // found from there, the run would plan every session inline, correct but on one core.
    const { data, lines: started } = await runLogged('sync', 40, 4000, 'worker-log.cjs', 'WORKER_LOG');
    expect(data).toMatchObject({ sessions: { scanned: 40, delivered: 40, failed: 0 } });
    const entries = started.map((url) => path.relative(repoRoot, new URL(url).pathname));
    expect(entries).toContain(path.join('dist', 'src', 'engine', 'plan-worker.js'));
  });

  it('plan a bulk import on the plan workers and commit it on the writer thread', async () => {
    // More sessions than a run plans inline, more conversations than the store commits inline.
    const { data, lines: started } = await runLogged('import', 40, 4000, 'worker-log.cjs', 'WORKER_LOG');
    expect(data).toMatchObject({ sessions: { scanned: 40, delivered: 40, failed: 0 } });
    const entries = started.map((url) => path.relative(repoRoot, new URL(url).pathname));
    expect(entries).toContain(path.join('dist', 'src', 'engine', 'plan-worker.js'));
    expect(entries).toContain(path.join('dist', 'src', 'store', 'local-writer-thread.js'));
    expect(new Set(entries).size).toBe(2);
  });
});
