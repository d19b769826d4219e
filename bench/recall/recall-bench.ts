/**
 * The recall benchmark: questions with labelled evidence turns, asked the way the agent asks them
 * (`mem_search` over MCP, through the real SDK client and `everme mcp`), next to the textbook BM25
 * of the issue measured in the same run on the same turns.
 *
 *   node dist/bench/recall/recall-bench.js                  fixture conversations alone
 *   node dist/bench/recall/recall-bench.js --beside STATE   imported into an existing store (kept)
 *
 * Prints hit@5, hit@10 and evidence recall@10 for everme and BM25, on all questions, on the tune
 * and report halves (signals were chosen on `tune`), by question type, and the coding questions.
 * The last line is JSON for run-all.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CODING_QUESTIONS, CODING_SESSIONS } from './coding-fixture.js';
import { loadFixture, minimaxSessionId, writeSessions, type FixtureSession } from './fixture.js';
import { formatRow, score, splitOf, TABLE_HEADER, type Question, type Scores, type TurnRef } from './metrics.js';
import { TextbookBm25 } from './textbook-bm25.js';
import { percentile } from '../stats.js';
import { repo } from '../repo-root.js';

export interface RecallBenchResult {
  everme: Scores;
  bm25: Scores;
  tune: { everme: Scores; bm25: Scores };
  report: { everme: Scores; bm25: Scores };
  coding: { everme: Scores; bm25: Scores };
  /** Warm mem_search round trips over MCP, ms: the questions, and the extra keyword queries. */
  latency: Latency;
  keywordLatency?: Latency;
  rows: string[];
}

interface Latency {
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

function latencyOf(times: number[]): Latency {
  return { p50: percentile(times, 50), p95: percentile(times, 95), p99: percentile(times, 99), max: Math.max(...times) };
}

function formatLatency(label: string, times: number[]): string {
  const l = latencyOf(times);
  return `  warm mem_search over MCP, ${label} (${times.length}): p50 ${l.p50.toFixed(1)} ms  p95 ${l.p95.toFixed(1)} ms (target ≤ 50)  p99 ${l.p99.toFixed(1)} ms (target ≤ 150)  max ${l.max.toFixed(1)} ms`;
}

/** Imports the sessions into `stateDir` through the CLI, as a user's import would. */
function importSessions(sessions: readonly FixtureSession[], stateDir: string): void {
  const root = mkdtempSync(path.join(os.tmpdir(), 'everme-recall-tree-'));
  try {
    writeSessions(root, sessions);
    execFileSync(process.execPath, [path.join(repo, 'bin', 'run.js'), 'import', '--since', '2000-01-01', '--sink', 'local', '--data-dir', root, '--json'], {
      env: { ...process.env, EVERME_STATE_DIR: stateDir, EVERME_API_KEY: '', EVERME_AGENT_TOKEN: '' },
      stdio: ['ignore', 'ignore', 'inherit'],
      maxBuffer: 64 * 1024 * 1024,
    });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** Store row id → `<fixture session>#<turn>` for the fixture's messages. */
function turnRefs(stateDir: string, sessions: readonly FixtureSession[]): Map<string, TurnRef> {
  const bySession = new Map(sessions.map((s) => [minimaxSessionId(s.id), s.id]));
  const db = new Database(path.join(stateDir, 'everme.db'), { readonly: true });
  try {
    const refs = new Map<string, TurnRef>();
    const rows = db
      .prepare<[string], { id: number; session_id: string; msg_key: string }>(
        `SELECT m.id, c.session_id, m.msg_key FROM messages m JOIN conversations c USING (conversation_id)
         WHERE c.session_id IN (SELECT value FROM json_each(?))`,
      )
      .all(JSON.stringify([...bySession.keys()]));
    for (const row of rows) refs.set(`m${row.id}`, `${bySession.get(row.session_id)}#${row.msg_key.slice(1)}`);
    return refs;
  } finally {
    db.close();
  }
}

interface McpHit {
  id: string | null;
}

export interface RecallBenchOptions {
  /** A store to import the questions' conversations into, beside its history (kept). */
  beside?: string;
  label?: string;
  /** More queries to time (not scored), e.g. the search bench's keyword queries. */
  timeQueries?: readonly string[];
}

export async function runRecallBench(opts: RecallBenchOptions = {}): Promise<RecallBenchResult> {
  const fixture = loadFixture(path.join(repo, 'bench', 'recall', 'longmemeval-oracle.json.gz'));
  const sessions = [...fixture.sessions, ...CODING_SESSIONS];
  const questions: Question[] = [
    ...fixture.questions.map((q) => ({ ...q, evidence: q.evidence.map(([s, i]) => `${s}#${i}`) })),
    ...CODING_QUESTIONS.map((q) => ({ ...q, type: 'coding', evidence: q.evidence.map(([s, i]) => `${s}#${i}`) })),
  ];
  const stateDir = opts.beside ?? mkdtempSync(path.join(os.tmpdir(), 'everme-recall-state-'));
  // `everme mcp` resolves the MiniMax data directory at start and refuses one that is missing; the
  // bench's sessions are already imported, so an empty one serves.
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'everme-recall-data-'));
  try {
    importSessions(sessions, stateDir);
    const refs = turnRefs(stateDir, sessions);

    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [path.join(repo, 'bin', 'run.js'), 'mcp', '--sink', 'local', '--data-dir', dataDir],
      env: { ...(process.env as Record<string, string>), EVERME_STATE_DIR: stateDir, EVERME_API_KEY: '', EVERME_AGENT_TOKEN: '' },
      stderr: 'ignore',
    });
    const client = new Client({ name: 'everme-recall-bench', version: '0.0.0' });
    await client.connect(transport);
    const ours = new Map<string, TurnRef[]>();
    const times: number[] = [];
    const keywordTimes: number[] = [];
    try {
      for (const query of opts.timeQueries ?? []) {
        for (let i = 0; i < 6; i++) {
          const t0 = performance.now();
          await client.callTool({ name: 'mem_search', arguments: { query, topK: 10 } });
          // The first of each is the warm-up.
          if (i > 0) keywordTimes.push(performance.now() - t0);
        }
      }
      for (const q of questions) {
        const ask = async () => {
          const t0 = performance.now();
          const result = await client.callTool({ name: 'mem_search', arguments: { query: q.question, topK: 10 } });
          times.push(performance.now() - t0);
          return result;
        };
        // Once to warm the pages this question touches, once measured.
        await ask();
        times.pop();
        const result = await ask();
        const hits = ((result.structuredContent as { hits?: McpHit[] } | undefined)?.hits ?? []).map((h) => (h.id ? (refs.get(h.id) ?? '?') : '?'));
        ours.set(q.id, hits);
      }
    } finally {
      await client.close();
    }

    const bm25 = new TextbookBm25();
    for (const s of sessions) s.turns.forEach(([, text], i) => bm25.add(`${s.id}#${i}`, text));
    const base = new Map(questions.map((q) => [q.id, bm25.search(q.question, 10)]));
    bm25.close();

    const both = (subset: Question[]) => ({ everme: score(subset, ours), bm25: score(subset, base) });
    const nl = questions.filter((q) => q.type !== 'coding');
    const sets: Array<[string, Question[]]> = [
      ['all questions', questions],
      ['LongMemEval, tune half', nl.filter((q) => splitOf(q.id) === 'tune')],
      ['LongMemEval, report half', nl.filter((q) => splitOf(q.id) === 'report')],
      ...[...new Set(questions.map((q) => q.type))].map((t): [string, Question[]] => [t, questions.filter((q) => q.type === t)]),
    ];
    const rows = [`recall${opts.label ? ` ${opts.label}` : ''}: ${questions.length} questions (${nl.length} LongMemEval oracle, ${questions.length - nl.length} coding), mem_search over MCP, topK 10`];
    rows.push(`  ${TABLE_HEADER}   hit@10 ratio`);
    for (const [label, subset] of sets) {
      const r = both(subset);
      rows.push(`  ${formatRow(`everme  ${label}`, r.everme)}   ${(r.everme.hit10 / r.bm25.hit10).toFixed(2)}x`);
      rows.push(`  ${formatRow(`bm25    ${label}`, r.bm25)}`);
    }
    rows.push(formatLatency('the questions', times));
    if (keywordTimes.length > 0) rows.push(formatLatency('keyword queries ×5', keywordTimes));
    return {
      ...both(questions),
      tune: both(nl.filter((q) => splitOf(q.id) === 'tune')),
      report: both(nl.filter((q) => splitOf(q.id) === 'report')),
      coding: both(questions.filter((q) => q.type === 'coding')),
      latency: latencyOf(times),
      ...(keywordTimes.length > 0 ? { keywordLatency: latencyOf(keywordTimes) } : {}),
      rows,
    };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    if (!opts.beside) rmSync(stateDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--beside');
  const beside = at >= 0 ? process.argv[at + 1] : undefined;
  const result = await runRecallBench(beside ? { beside, label: `beside ${beside}` } : {});
  process.stdout.write(`${result.rows.join('\n')}\n${JSON.stringify({ ...result, rows: undefined })}\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) void main();
