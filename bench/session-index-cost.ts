/**
 * What MiniMax Code's session index costs (issue #30's targets: ≤ 3% of a cold import, ≤ 10 ms to
 * the hook). Standalone: `node dist/bench/session-index-cost.js TREE [REPEATS]` prints its rows;
 * run-all.ts runs it on the 1× tree.
 *
 * The index tree is a data dir of its own next to TREE (`<TREE>-index`), never written into TREE,
 * which other benchmarks share: its `v2/sessions` is a symlink to TREE's, and its
 * `v2/sqlite/runtime-state.sqlite` names every session (workspace, title, kind, a parent for every
 * tenth) as a host that quit leaves it, so an import reads it from a private copy.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HEAP_CAP_FLAGS, heapCappedEnv } from '../src/cli/heap-capped.js';
import { readSessionIndex } from '../src/transcript/session-index.js';
import { cliNoopSyncs, NOOP_SYNC_RUNS } from './cli-sync.js';
import { stopHookWorkers } from './hook-workers.js';
import { openHostIndex, putIndexRecords, writeSessionIndex, type IndexRecord } from './session-index-file.js';
import { median } from './stats.js';
import { repo } from './repo-root.js';

const here = path.dirname(fileURLToPath(import.meta.url));

const fmt = (n: number): string => n.toFixed(1);

/** Every manifest of a tree: session id and the host's times. */
function manifests(tree: string): Array<{ sessionId: string; createdAtMs: number; updatedAtMs: number }> {
  const out: Array<{ sessionId: string; createdAtMs: number; updatedAtMs: number }> = [];
  const walk = (dir: string, depth: number): void => {
    for (const name of readdirSync(dir).sort()) {
      const p = path.join(dir, name);
      if (depth < 3) walk(p, depth + 1);
      else if (name.includes('-session_')) {
        const m = JSON.parse(readFileSync(path.join(p, 'manifest.json'), 'utf8')) as { sessionId: string; createdAtMs: number; updatedAtMs: number };
        out.push({ sessionId: m.sessionId, createdAtMs: m.createdAtMs, updatedAtMs: m.updatedAtMs });
      }
    }
  };
  walk(path.join(tree, 'v2', 'sessions'), 0);
  return out;
}

/** The bench generator's session ids begin with the session's number (corpus.ts): its project follows from it. */
function recordsFor(tree: string): IndexRecord[] {
  const all = manifests(tree);
  return all.map((m, i): IndexRecord => {
    const s = Number.parseInt(m.sessionId.slice(4, 12), 16);
    const task = i > 0 && s % 10 === 9;
    return {
      sessionId: m.sessionId,
      workspaceDir: `/home/dev/project-${s % 17}`,
      title: `Session ${s}: a title as long as a host makes them from the first prompt`,
      sessionType: task ? 'branch' : 'root',
      sessionKind: task ? 'task' : 'conversation',
      visibility: 'visible',
      isDefaultWorkspace: false,
      ...(task ? { parentSessionId: all[i - 1]!.sessionId } : {}),
      createdAtMs: m.createdAtMs,
      updatedAtMs: m.updatedAtMs,
    };
  });
}

/** `<tree>-index`, made once (a `.complete` marker, like the trees). */
export function indexTreeFor(tree: string): { root: string; sessions: number } {
  const root = `${tree}-index`;
  const marker = path.join(root, '.complete');
  if (!existsSync(marker)) {
    rmSync(root, { recursive: true, force: true });
    mkdirSync(path.join(root, 'v2'), { recursive: true });
    symlinkSync(path.join(tree, 'v2', 'sessions'), path.join(root, 'v2', 'sessions'), 'dir');
    const records = recordsFor(tree);
    writeSessionIndex(root, 'newest', records);
    writeFileSync(marker, JSON.stringify({ sessions: records.length }));
  }
  return { root, ...(JSON.parse(readFileSync(marker, 'utf8')) as { sessions: number }) };
}

interface RunMeasured {
  ms: number;
  cpuMs: number;
  workspaceUnknown?: number;
}

function measured(mode: 'import' | 'sync', root: string, stateDir: string): RunMeasured {
  execFileSync('sync');
  const out = execFileSync(process.execPath, [...HEAP_CAP_FLAGS, path.join(here, 'measure-run.js'), mode, root, stateDir], { encoding: 'utf8', env: heapCappedEnv(process.env) });
  return JSON.parse(out.trim().split('\n').at(-1)!) as RunMeasured;
}

function timed(fn: () => void, repeats: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    fn();
    out.push(performance.now() - t0);
  }
  return out;
}

/** The index read itself, in this process: every row (a run), and one session (a hook worker), at rest and beside a live host. */
function readCosts(indexRoot: string, someId: string): string[] {
  const rows: string[] = [];
  const all = (): void => {
    const read = readSessionIndex(indexRoot);
    if (read.status !== 'ok') throw new Error(`the bench index is unavailable: ${read.reason}`);
  };
  const one = (): void => {
    const read = readSessionIndex(indexRoot, { sessionIds: [someId] });
    if (read.status !== 'ok' || read.sessions.size !== 1) throw new Error('the bench index does not name the session');
  };
  all();
  rows.push(`session index read, every row, at rest (private copy): median ${fmt(median(timed(all, 9)))} ms`);
  rows.push(`session index read, one session, at rest:             median ${fmt(median(timed(one, 9)))} ms`);
  // A host that runs: the file open for writing in WAL mode, its last rows only in -wal.
  const copy = mkdtempSync(path.join(os.tmpdir(), 'everme-bench-live-index-'));
  try {
    const file = path.join(copy, 'v2', 'sqlite', 'runtime-state.sqlite');
    mkdirSync(path.dirname(file), { recursive: true });
    execFileSync('cp', [path.join(indexRoot, 'v2', 'sqlite', 'runtime-state.sqlite'), file]);
    const host = openHostIndex(file, 'newest');
    host.pragma('wal_autocheckpoint = 0');
    putIndexRecords(host, 'newest', [{ sessionId: someId, workspaceDir: '/home/dev/live', createdAtMs: 1, updatedAtMs: Date.now() }]);
    try {
      const liveAll = (): void => {
        if (readSessionIndex(copy).status !== 'ok') throw new Error('live index unavailable');
      };
      const liveOne = (): void => {
        if (readSessionIndex(copy, { sessionIds: [someId] }).status !== 'ok') throw new Error('live index unavailable');
      };
      rows.push(`session index read, every row, live host (in place):  median ${fmt(median(timed(liveAll, 9)))} ms`);
      rows.push(`session index read, one session, live host:           median ${fmt(median(timed(liveOne, 9)))} ms (the hook worker's one read; the hook itself reads none)`);
    } finally {
      host.close();
    }
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
  return rows;
}

/** The hook's wall time on the two trees, interleaved: the hook reads no index (its worker does, once). */
function hookWall(tree: string, indexRoot: string, sessionId: string): string {
  const times = { plain: [] as number[], index: [] as number[] };
  const state = mkdtempSync(path.join(os.tmpdir(), 'everme-bench-index-hook-'));
  try {
    const input = JSON.stringify({ session_id: sessionId, hook_event_name: 'PreToolUse', cwd: '/tmp' });
    for (let i = 0; i < 11; i++) {
      for (const [which, root] of [['plain', tree], ['index', indexRoot]] as const) {
        const env = { ...process.env, MINIMAX_DATA_DIR: root, EVERME_STATE_DIR: path.join(state, which), EVERME_MINIMAX_SYNC_INTERVAL_MS: '600000' };
        const t0 = performance.now();
        spawnSync(process.execPath, [path.join(repo, 'bin', 'run.js'), 'hook'], { input, env });
        times[which].push(performance.now() - t0);
      }
    }
  } finally {
    stopHookWorkers(path.join(state, 'plain'), path.join(state, 'index'));
    rmSync(state, { recursive: true, force: true });
  }
  const plain = median(times.plain);
  const index = median(times.index);
  return `hook wall time with the index:  median ${fmt(index)} ms vs ${fmt(plain)} ms without (${index - plain >= 0 ? '+' : ''}${fmt(index - plain)} ms; target ≤ 10 ms)`;
}

/**
 * Cold imports of the same sessions without and with the index, interleaved (plain, index, plain,
 * …), then no-op syncs of each store: in process, wall time and CPU time (all threads), which a
 * machine shared with other work disturbs less; and as the user runs it, the CLI as a process,
 * against `floorMs` (the 1× import's floor) when given: every machine that runs MiniMax Code has
 * the index, which the bench's no-op row (on the tree without it) does not read.
 */
function importCosts(tree: string, indexRoot: string, repeats: number, floorMs?: number): string[] {
  const runs = { plain: [] as RunMeasured[], index: [] as RunMeasured[] };
  const syncs = { plain: [] as RunMeasured[], index: [] as RunMeasured[] };
  const cli = { plain: [] as number[], index: [] as number[] };
  for (let i = 0; i < repeats; i++) {
    for (const which of ['plain', 'index'] as const) {
      const root = which === 'plain' ? tree : indexRoot;
      const state = mkdtempSync(path.join(os.tmpdir(), `everme-bench-index-${which}-`));
      try {
        runs[which].push(measured('import', root, state));
        syncs[which].push(measured('sync', root, state));
        cli[which].push(median(cliNoopSyncs(root, state)));
      } finally {
        rmSync(state, { recursive: true, force: true });
      }
    }
  }
  const med = (rs: RunMeasured[], key: 'ms' | 'cpuMs'): number => median(rs.map((r) => r[key]));
  const share = (a: number, b: number): string => `${b - a >= 0 ? '+' : ''}${((100 * (b - a)) / a).toFixed(1)}%`;
  const line = (what: string, rs: RunMeasured[]): string =>
    `${what} median ${fmt(med(rs, 'ms'))} ms wall (${rs.map((r) => fmt(r.ms)).join(', ')}), ${fmt(med(rs, 'cpuMs'))} ms CPU; workspace unknown ${rs.at(-1)?.workspaceUnknown ?? '?'}`;
  const cliIndex = median(cli.index);
  const againstFloor = floorMs === undefined ? '' : `; with the index ${(cliIndex / floorMs).toFixed(2)}x the 1× floor (${fmt(floorMs)} ms; target ≤ 0.20x)`;
  return [
    line('cold import without the index:', runs.plain),
    line('cold import with the index:   ', runs.index),
    `the index's share of a cold import: ${share(med(runs.plain, 'ms'), med(runs.index, 'ms'))} wall, ${share(med(runs.plain, 'cpuMs'), med(runs.index, 'cpuMs'))} CPU (target ≤ 3%; interleaved, ${repeats} each)`,
    // Each pair ran back to back: its ratio cancels the machine's drift over the minutes of the run,
    // which the two medians above do not.
    `the same, pair by pair: median ratio ${pairRatio(runs.plain.map((r) => r.ms), runs.index.map((r) => r.ms))} wall, ${pairRatio(runs.plain.map((r) => r.cpuMs), runs.index.map((r) => r.cpuMs))} CPU (with / without, ${repeats} pairs)`,
    `no-op sync without / with the index: ${fmt(med(syncs.plain, 'ms'))} / ${fmt(med(syncs.index, 'ms'))} ms wall, ${fmt(med(syncs.plain, 'cpuMs'))} / ${fmt(med(syncs.index, 'cpuMs'))} ms CPU`,
    `no-op sync (CLI process) without / with the index: ${fmt(median(cli.plain))} / ${fmt(cliIndex)} ms (each store's median of ${NOOP_SYNC_RUNS}: ${cli.plain.map(fmt).join(', ')} / ${cli.index.map(fmt).join(', ')}), pair by pair ${pairRatio(cli.plain, cli.index)}${againstFloor}`,
  ];
}

/** The median over the pairs of (with the index) / (without), as a signed percentage. */
function pairRatio(plain: readonly number[], index: readonly number[]): string {
  const ratio = median(index.map((value, i) => value / plain[i]!));
  return `${ratio >= 1 ? '+' : ''}${(100 * (ratio - 1)).toFixed(1)}%`;
}

/** `floorMs`: the tree's floor, which the no-op sync with the index is compared with (run-all.ts passes the 1× import's). */
export function sessionIndexCost(tree: string, repeats = 3, floorMs?: number): string[] {
  const index = indexTreeFor(tree);
  const someId = manifests(tree)[0]!.sessionId;
  return [...readCosts(index.root, someId), hookWall(tree, index.root, someId), ...importCosts(tree, index.root, repeats, floorMs)];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const tree = process.argv[2];
  if (!tree) throw new Error('usage: node dist/bench/session-index-cost.js TREE [REPEATS]');
  const rows = [`load average at start: ${os.loadavg().map((n) => n.toFixed(2)).join(' ')}`, ...sessionIndexCost(path.resolve(tree), Number(process.argv[3] ?? 3))];
  rows.push(`load average at end: ${os.loadavg().map((n) => n.toFixed(2)).join(' ')}`);
  process.stdout.write(`${rows.join('\n')}\n`);
}
