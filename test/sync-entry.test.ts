/**
 * `everme sync` starts without oclif (src/cli/sync-entry.ts) whenever it can take its arguments as
 * they are, and hands oclif everything else: it must read the command's flags as oclif does, print
 * what the oclif command prints, and never load oclif when it does not hand over.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateCorpus } from '../bench/corpus.js';
import Sync from '../commands/sync.js';
import { EvermeCommand } from '../src/cli/base-command.js';
import { readSyncFlags, SYNC_ENTRY_OPTIONS } from '../src/cli/sync-entry.js';
import { cliEnv, envelopeOf, runCli, spawnAsync, startCli, waitFor, type CliResult } from './support/cli-process.js';
import { repoRoot } from './support/cli.js';
import { holdSessionLock, newestSessionIn } from './support/session-hold.js';
import { storeCount } from './support/store-count.js';
import { tempDir } from './transcript-helpers.js';

const SINCE = '2026-01-01';
const oclifOnly = path.join(repoRoot, 'test', 'support', 'oclif-only.mjs');

/** A generated MiniMax data dir of `sessions` sessions, under a fresh temp root. */
function dataTree(sessions: number): { root: string; dataDir: string } {
  const root = tempDir();
  const dataDir = path.join(root, 'data');
  fs.mkdirSync(dataDir);
  generateCorpus(dataDir, sessions, 3000);
  return { root, dataDir };
}

/** The same arguments through oclif alone (test/support/oclif-only.mjs), as a CliResult. */
async function runThroughOclif(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  const result = await spawnAsync(process.execPath, [oclifOnly, ...args], { env });
  return { code: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr };
}

/** stderr without the progress lines, which are paced by the clock. */
function withoutProgress(stderr: string): string {
  return stderr
    .split('\n')
    .filter((line) => !/^sync: \d+\/\d+ sessions/.test(line))
    .join('\n');
}

function countFingerprints(stateDir: string): number {
  return storeCount(stateDir, 'SELECT count(*) FROM fingerprints');
}

describe('everme sync without oclif', () => {
  it('reads the flags the sync command defines, and no other', () => {
    const defined = Object.keys({ ...EvermeCommand.baseFlags, ...Sync.flags }).sort();
    expect(Object.keys(SYNC_ENTRY_OPTIONS).sort()).toEqual(defined);
  });

  it('takes each flag with the value oclif would give it', () => {
    expect(readSyncFlags([])).toEqual({ request: {}, dataDir: undefined, json: false });
    expect(
      readSyncFlags(['--session', 'mvs_1', '--since=2026-09-01', '--sink', 'everme', '--concurrency', '32', '--data-dir', '/d', '--json']),
    ).toEqual({
      request: { session: 'mvs_1', since: { text: '2026-09-01', ms: Date.UTC(2026, 8, 1) }, sink: 'everme', concurrency: 32 },
      dataDir: '/d',
      json: true,
    });
  });

  it('hands oclif what it does not take as it is: help, a positional, an unknown or repeated flag, a value the flag rejects', () => {
    for (const argv of [
      ['--help'],
      ['-h'],
      ['extra'],
      ['--sinkk', 'local'],
      ['--sink', 'local', '--sink', 'everme'],
      ['--json', '--json'],
      ['--sink', 'cloud'],
      ['--since', '2026-02-30'],
      ['--since'],
      ['--concurrency', '0'],
      ['--concurrency', '33'],
      ['--concurrency', '1.5'],
      ['--concurrency', '-1'],
      ['--json=false'],
      ['--no-json'],
    ]) {
      expect(readSyncFlags(argv), argv.join(' ')).toBeUndefined();
    }
  });

  it('loads no oclif module for a sync it takes, and oclif for one it hands over', async () => {
    const { root, dataDir } = dataTree(2);
    const loadedBy = async (args: string[]) => {
      const esmLog = path.join(root, `esm-${args.length}.log`);
      const cjsLog = path.join(root, `cjs-${args.length}.log`);
      const support = path.join(repoRoot, 'test', 'support');
      const env = cliEnv(root, {
        EVERME_STATE_DIR: path.join(root, 'state'),
        NODE_OPTIONS: `--import=${path.join(support, 'esm-log.mjs')} --require=${path.join(support, 'module-log.cjs')}`,
        ESM_LOG: esmLog,
        MODULE_LOG: cjsLog,
      });
      const result = await runCli(args, env);
      const esm = fs.readFileSync(esmLog, 'utf8').trim().split('\n').map((url) => new URL(url).pathname);
      // The CommonJS log lists the preload itself and better-sqlite3's files too: both are read below.
      const cjs = fs.readFileSync(cjsLog, 'utf8').trim().split('\n');
      const files = [...new Set([...esm, ...cjs])].filter((file) => file.endsWith('.js') || file.endsWith('.cjs') || file.endsWith('.mjs'));
      // esbuild marks each bundled module with its path: oclif's are under node_modules/@oclif/core.
      const oclif = files.filter((file) => file.includes('/@oclif/') || fs.readFileSync(file, 'utf8').includes('// node_modules/@oclif/core/'));
      return { result, files, oclif };
    };
    const taken = await loadedBy(['sync', '--since', SINCE, '--data-dir', dataDir, '--sink', 'local', '--json']);
    expect(taken.result.code, taken.result.stderr).toBe(0);
    expect(envelopeOf(taken.result).data).toMatchObject({ sessions: { scanned: 2, delivered: 2 } });
    // Its code is the one CommonJS bundle the build makes for it.
    expect(taken.files).toContain(path.join(repoRoot, 'dist', 'src', 'cli', 'sync-entry.bundle.cjs'));
    expect(taken.oclif).toEqual([]);

    const handedOver = await loadedBy(['sync', '--help']);
    expect(handedOver.result.code).toBe(0);
    expect(handedOver.result.stdout).toContain('USAGE');
    expect(handedOver.oclif).not.toEqual([]);
  });

  it('prints what the oclif command prints: the envelope, the text, a failure and its exit code', async () => {
    const { root, dataDir } = dataTree(3);
    const cases: string[][] = [
      ['sync', '--since', SINCE, '--data-dir', dataDir, '--sink', 'local', '--json'],
      // The same again: a no-op, in text mode.
      ['sync', '--since', SINCE, '--data-dir', dataDir, '--sink', 'local'],
      ['sync', '--data-dir', path.join(root, 'missing'), '--json'],
      ['sync', '--data-dir', path.join(root, 'missing')],
    ];
    const fastEnv = cliEnv(root, { EVERME_STATE_DIR: path.join(root, 'state-fast') });
    const oclifEnv = cliEnv(root, { EVERME_STATE_DIR: path.join(root, 'state-oclif') });
    for (const args of cases) {
      const fast = await runCli(args, fastEnv);
      const viaOclif = await runThroughOclif(args, oclifEnv);
      const label = args.join(' ');
      expect(fast.code, label).toBe(viaOclif.code);
      expect(fast.stdout.replaceAll('state-fast', 'state-oclif'), label).toBe(viaOclif.stdout);
      expect(withoutProgress(fast.stderr).replaceAll('state-fast', 'state-oclif'), label).toBe(withoutProgress(viaOclif.stderr));
    }
    // The cases did what they name: a delivery, and the missing data dir as an io error.
    const first = envelopeOf(await runCli(cases[0]!, cliEnv(root, { EVERME_STATE_DIR: path.join(root, 'state-check') })));
    expect(first.data).toMatchObject({ sessions: { scanned: 3, delivered: 3 } });
    const missing = await runCli(cases[2]!, fastEnv);
    expect(envelopeOf(missing)).toMatchObject({ ok: false, error: { type: 'io' } });
    expect(missing.code).not.toBe(0);
  }, 60_000);

  it('stops at Ctrl-C with exit 130 and the cancelled envelope', async () => {
    const { root, dataDir } = dataTree(6);
    const stateDir = path.join(root, 'state');
    // The session a run reaches last is held, so the run is still going when the signal lands.
    const release = holdSessionLock(stateDir, newestSessionIn(dataDir));
    const run = startCli(['sync', '--since', SINCE, '--data-dir', dataDir, '--sink', 'local', '--json'], cliEnv(root, { EVERME_STATE_DIR: stateDir }));
    await waitFor(() => countFingerprints(stateDir) > 0, 30_000, 'the first sessions committed');
    run.child.kill('SIGINT');
    const interrupted = await run.done;
    release();
    expect(interrupted.code).toBe(130);
    expect(envelopeOf(interrupted)).toMatchObject({ ok: false, error: { type: 'cancelled' } });
    // A re-run completes it.
    const rerun = await runCli(['sync', '--since', SINCE, '--data-dir', dataDir, '--sink', 'local', '--json'], cliEnv(root, { EVERME_STATE_DIR: stateDir }));
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(countFingerprints(stateDir)).toBe(6);
  }, 60_000);
});
