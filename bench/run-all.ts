import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../src/store/database.js';
import { LocalStore } from '../src/store/message-store.js';
import { generateBigTranscript, generateCorpus, generateHugeLine } from './corpus.js';
import { benchSessionStart, benchStopToDelivered } from './session-hooks.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 3000);
const AVG_BYTES = Number(process.env.BENCH_AVG_BYTES ?? 38_000);
const BIG_BYTES = Number(process.env.BENCH_BIG_MB ?? 500) * 1024 * 1024;
const HUGE_LINE_BYTES = Number(process.env.BENCH_HUGE_LINE_MB ?? 1024) * 1024 * 1024;

interface Measured {
  ms: number;
  maxRssMb: number;
  [key: string]: unknown;
}

function child(script: string, args: string[], nodeArgs: string[] = []): Measured {
  const out = execFileSync(process.execPath, [...nodeArgs, path.join(here, script), ...args], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(out.trim().split('\n').at(-1)!) as Measured;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const fmt = (n: number) => n.toFixed(1);

function firstSessionId(root: string): string {
  let dir = path.join(root, 'v2', 'sessions');
  for (let depth = 0; depth < 4; depth++) dir = path.join(dir, readdirSync(dir).sort()[0]!);
  return (JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { sessionId: string }).sessionId;
}

async function main(): Promise<void> {
  const corpusRoot = path.join(repo, 'bench', '.corpus', `tree-v2-${SESSIONS}-${AVG_BYTES}`);
  const marker = path.join(corpusRoot, '.complete');
  if (!existsSync(marker)) {
    rmSync(corpusRoot, { recursive: true, force: true });
    process.stderr.write(`generating ${SESSIONS} sessions (~${((SESSIONS * AVG_BYTES) / 1e6).toFixed(0)} MB) in ${corpusRoot}\n`);
    const stats = generateCorpus(corpusRoot, SESSIONS, AVG_BYTES);
    writeFileSync(marker, JSON.stringify({ sessions: stats.sessions, bytes: stats.bytes }));
  }
  const corpus = JSON.parse(readFileSync(marker, 'utf8')) as { sessions: number; bytes: number };
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'everme-bench-state-'));
  const rows: string[] = [];
  try {
    // Warm the page cache once so the floor and the import read from the same place.
    child('floor.js', [corpusRoot]);
    const floor = child('floor.js', [corpusRoot]);
    const cold = child('measure-run.js', ['import', corpusRoot, stateDir]);
    const noop = child('measure-run.js', ['sync', corpusRoot, stateDir]);
    rows.push(`corpus: ${corpus.sessions} sessions, ${fmt(corpus.bytes / 1024 / 1024)} MiB, ${floor.lines} lines`);
    rows.push(`floor (walk + JSON.parse):  ${fmt(floor.ms)} ms  rss ${fmt(floor.maxRssMb)} MB`);
    rows.push(`cold import (local):        ${fmt(cold.ms)} ms  rss ${fmt(cold.maxRssMb)} MB  ratio ${(cold.ms / floor.ms).toFixed(2)}x (target ≤ 3x)  ${cold.messages} messages`);
    rows.push(`no-op sync:                 ${fmt(noop.ms)} ms  rss ${fmt(noop.maxRssMb)} MB  ratio ${(noop.ms / floor.ms).toFixed(2)}x (target ≤ 0.25x)`);
    rows.push(`peak RSS (import):          ${fmt(cold.maxRssMb)} MB (target ≤ 256 MB)`);
    // Redaction alone over every text of the corpus: its share of the cold import above.
    const redaction = child('redact-throughput.js', [corpusRoot]);
    rows.push(
      `redaction:                  ${fmt(redaction.ms)} ms for ${fmt((redaction.bytes as number) / 1024 / 1024)} MiB of text (${fmt((redaction.bytes as number) / 1024 / 1024 / (redaction.ms / 1000))} MiB/s), ${fmt((100 * redaction.ms) / cold.ms)}% of the cold import`,
    );

    // Export streams page by page: its RSS must stay flat however large the store is.
    const exportDir = mkdtempSync(path.join(os.tmpdir(), 'everme-bench-export-'));
    const reimportState = mkdtempSync(path.join(os.tmpdir(), 'everme-bench-reimport-'));
    try {
      const jsonl = child('measure-export.js', ['jsonl', corpusRoot, stateDir, exportDir]);
      const markdown = child('measure-export.js', ['markdown', corpusRoot, stateDir, path.join(exportDir, 'md')]);
      const reimport = child('measure-export.js', ['reimport', corpusRoot, reimportState, exportDir]);
      // The same export with the JS heap capped far below the store's size: it completes only if it streams.
      const capped = child('measure-export.js', ['jsonl', corpusRoot, stateDir, path.join(exportDir, 'capped')], ['--max-old-space-size=32']);
      const mb = (n: unknown) => fmt(Number(n) / 1024 / 1024);
      rows.push(`export jsonl:               ${fmt(jsonl.ms)} ms  rss ${fmt(jsonl.maxRssMb)} MB  store ${fmt(Number(jsonl.storeMb))} MB  wrote ${mb(jsonl.bytes)} MB, ${jsonl.messages} messages`);
      rows.push(`export markdown:            ${fmt(markdown.ms)} ms  rss ${fmt(markdown.maxRssMb)} MB  ${markdown.conversations} files, ${mb(markdown.bytes)} MB`);
      rows.push(`import --from-export:       ${fmt(reimport.ms)} ms  rss ${fmt(reimport.maxRssMb)} MB  ${reimport.messages} messages`);
      rows.push(`export jsonl, 32 MB heap:   ${fmt(capped.ms)} ms  rss ${fmt(capped.maxRssMb)} MB  ${capped.messages} messages (completes: memory does not grow with the store)`);
    } finally {
      rmSync(exportDir, { recursive: true, force: true });
      rmSync(reimportState, { recursive: true, force: true });
    }

    // Search latency on the store the import just built.
    const db = openDatabase(stateDir);
    const store = new LocalStore(db);
    const queries = ['payload', 'cache index', '优先级', '缓存', 'テスト', '데이터', 'migration parser', 'timeout retry', 'payload优先', '数据', 'karomi', 'socket'];
    for (const q of queries) store.search(q, { limit: 10 });
    const times: number[] = [];
    for (let i = 0; i < 200; i++) {
      const q = queries[i % queries.length]!;
      const t0 = performance.now();
      store.search(q, { limit: 10 });
      times.push(performance.now() - t0);
    }
    db.close();
    rows.push(`search (warm, 200 queries): p50 ${fmt(percentile(times, 50))} ms  p95 ${fmt(percentile(times, 95))} ms (target p95 ≤ 50 ms)`);

    // After search, since it rewrites the index: one conversation forgotten, down to the file's bytes.
    const forgot = child('measure-export.js', ['forget', corpusRoot, stateDir, '-']);
    rows.push(`forget one conversation:    ${fmt(forgot.ms)} ms  rss ${fmt(forgot.maxRssMb)} MB  ${forgot.messages} messages removed (FTS optimize + WAL truncate)`);

    // The hook next to a bare node start, interleaved so both see the same machine state.
    // A real, old session: the hook finds it by the fallback walk, its slowest lookup.
    const hookSessionId = firstSessionId(corpusRoot);
    const hookInput = JSON.stringify({ session_id: hookSessionId, hook_event_name: 'PreToolUse', cwd: '/tmp' });
    const env = { ...process.env, MINIMAX_DATA_DIR: corpusRoot, EVERME_STATE_DIR: stateDir, EVERME_MINIMAX_SYNC_INTERVAL_MS: '600000' };
    const bare: number[] = [];
    const hook: number[] = [];
    for (let i = 0; i < 15; i++) {
      let t0 = performance.now();
      spawnSync(process.execPath, ['-e', '0']);
      bare.push(performance.now() - t0);
      t0 = performance.now();
      spawnSync(process.execPath, [path.join(repo, 'bin', 'run.js'), 'hook'], { input: hookInput, env });
      hook.push(performance.now() - t0);
    }
    rows.push(`hook wall time:             median ${fmt(median(hook))} ms vs node -e 0 ${fmt(median(bare))} ms  ratio ${(median(hook) / median(bare)).toFixed(2)}x (target ≤ 1.5x)`);

    // The plugin route on the same store: recall at session start, and a turn delivered after Stop.
    rows.push(...benchSessionStart(repo, corpusRoot, stateDir));
    rows.push(...(await benchStopToDelivered(repo, stateDir)));

    if (process.env.BENCH_SKIP_BIG !== '1') {
      const bigRoot = mkdtempSync(path.join(os.tmpdir(), 'everme-bench-big-'));
      const bigState = mkdtempSync(path.join(os.tmpdir(), 'everme-bench-bigstate-'));
      try {
        await generateBigTranscript(bigRoot, BIG_BYTES);
        const big = child('measure-run.js', ['import', bigRoot, bigState]);
        rows.push(`single ${fmt(BIG_BYTES / 1024 / 1024)} MiB transcript: ${fmt(big.ms)} ms  rss ${fmt(big.maxRssMb)} MB  ${big.messages} messages`);
      } finally {
        rmSync(bigRoot, { recursive: true, force: true });
        rmSync(bigState, { recursive: true, force: true });
      }
      // One line far over the 32 MiB line cap: skipped as it streams past, never held.
      const hugeRoot = mkdtempSync(path.join(os.tmpdir(), 'everme-bench-huge-'));
      const hugeState = mkdtempSync(path.join(os.tmpdir(), 'everme-bench-hugestate-'));
      try {
        await generateHugeLine(hugeRoot, HUGE_LINE_BYTES);
        const huge = child('measure-run.js', ['import', hugeRoot, hugeState]);
        rows.push(
          `single ${fmt(HUGE_LINE_BYTES / 1024 / 1024)} MiB line:   ${fmt(huge.ms)} ms  rss ${fmt(huge.maxRssMb)} MB (target ≤ 256 MB)  ${huge.messages} messages  warnings ${JSON.stringify(huge.warnings)}`,
        );
      } finally {
        rmSync(hugeRoot, { recursive: true, force: true });
        rmSync(hugeState, { recursive: true, force: true });
      }
    }
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
  process.stdout.write(`${rows.join('\n')}\n`);
}

void main();
