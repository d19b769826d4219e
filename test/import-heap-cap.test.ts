import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateBigTranscript } from '../bench/corpus.js';
import { HEAP_CAP_FLAG, HEAP_CAP_FLAGS, heapCappedEnv, wantsHeapCap } from '../src/cli/heap-capped.js';
import { gcHelperThreads, INLINING_BUDGET_FLAG } from '../src/core/heap-cap.js';
import { cliEnv, envelopeOf, startCli, waitFor } from './support/cli-process.js';
import { tempDir } from './transcript-helpers.js';

/** The processes whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command name (which may hold spaces): state, then ppid.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) found.push(Number(entry));
    } catch {
      // Gone already.
    }
  }
  return found;
}

function cmdline(pid: number): string[] {
  return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
}

function environ(pid: number): string[] {
  return fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
}

/** Peak resident set size so far, MB (VmHWM), or undefined once the process is gone. */
function peakRssMb(pid: number): number | undefined {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const onLinux = process.platform === 'linux';

describe('import under a capped heap', () => {
  it('is wanted for import only, and never twice', () => {
    expect(wantsHeapCap(['import', '--since', '2026-01-01'], {}, [])).toBe(true);
    expect(wantsHeapCap(['sync'], {}, [])).toBe(false);
    expect(wantsHeapCap(['search', 'x'], {}, [])).toBe(false);
    expect(wantsHeapCap(['import'], { EVERME_HEAP_CAPPED: '1' }, [])).toBe(false);
    expect(wantsHeapCap(['import'], {}, ['--max-old-space-size=512'])).toBe(false);
  });

  it('adds two malloc arenas to the environment, keeping a value the user set', () => {
    expect(heapCappedEnv({ HOME: '/h' })).toEqual({ HOME: '/h', MALLOC_ARENA_MAX: '2' });
    expect(heapCappedEnv({ MALLOC_ARENA_MAX: '8' }).MALLOC_ARENA_MAX).toBe('8');
  });

  it('gives V8 one garbage-collection helper thread on two cores, and the cores the import leaves free up to four', () => {
    expect(gcHelperThreads(1)).toBe(1);
    expect(gcHelperThreads(2)).toBe(1);
    expect(gcHelperThreads(4)).toBe(2);
    expect(gcHelperThreads(6)).toBe(4);
    expect(gcHelperThreads(64)).toBe(4);
    expect(HEAP_CAP_FLAGS).toContain(`--v8-pool-size=${gcHelperThreads()}`);
  });

  it.runIf(onLinux)('runs the real CLI import in a child node with the cap, which imports a 48 MB transcript within 256 MB', async () => {
    const root = tempDir();
    const dataDir = path.join(root, 'data');
    fs.mkdirSync(dataDir);
    await generateBigTranscript(dataDir, 48 * 1024 * 1024);
    const env = cliEnv(root, { EVERME_STATE_DIR: path.join(root, 'state') });
    const run = startCli(['import', '--since', '2026-01-01', '--data-dir', dataDir, '--sink', 'local', '--json'], env);
    const parent = run.child.pid!;
    let worker: number | undefined;
    await waitFor(() => (worker = childrenOf(parent).find((pid) => cmdline(pid).includes(HEAP_CAP_FLAG))) !== undefined, 10_000, 'the capped child');
    // The young generation is capped too, not only the old one, and TurboFan inlines less (see heap-cap.ts).
    expect(cmdline(worker!)).toEqual(expect.arrayContaining([...HEAP_CAP_FLAGS]));
    expect(cmdline(worker!)).toContain(INLINING_BUDGET_FLAG);
    // Two malloc arenas, not one per thread (see HEAP_CAP_ENV); the test's own environment has none.
    expect(env.MALLOC_ARENA_MAX).toBeUndefined();
    expect(environ(worker!)).toContain('MALLOC_ARENA_MAX=2');
    let peak = 0;
    const sample = setInterval(() => (peak = Math.max(peak, peakRssMb(worker!) ?? 0)), 20);
    const result = await run.done;
    clearInterval(sample);
    expect(result.code).toBe(0);
    const envelope = envelopeOf(result);
    expect(envelope.ok).toBe(true);
    expect(Number(envelope.data?.messages)).toBeGreaterThan(1000);
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(256);
  });

  it.runIf(onLinux)('dies with its parent: an import whose CLI process is killed with SIGKILL leaves no child running', async () => {
    const root = tempDir();
    const dataDir = path.join(root, 'data');
    fs.mkdirSync(dataDir);
    await generateBigTranscript(dataDir, 16 * 1024 * 1024);
    const env = cliEnv(root, { EVERME_STATE_DIR: path.join(root, 'state') });
    const run = startCli(['import', '--since', '2026-01-01', '--data-dir', dataDir, '--sink', 'local', '--json'], env);
    const parent = run.child.pid!;
    let worker: number | undefined;
    await waitFor(() => (worker = childrenOf(parent).find((pid) => cmdline(pid).includes(HEAP_CAP_FLAG))) !== undefined, 10_000, 'the capped child');
    run.child.kill('SIGKILL');
    expect((await run.done).signal).toBe('SIGKILL');
    await waitFor(() => !alive(worker!) || fs.readFileSync(`/proc/${worker!}/stat`, 'utf8').includes(') Z'), 15_000, 'the child to exit');
  });
});
