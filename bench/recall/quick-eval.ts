/**
 * Ranking experiments without the MCP round trip: imports the fixture once into STATE (kept), then
 * scores everme's store search and the textbook BM25 on the same questions. The bench's own run
 * (recall-bench.ts) asks through `mem_search` over MCP instead.
 *   node dist/bench/recall/quick-eval.js STATE_DIR
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { LocalStore } from '../../src/store/local-store.js';
import type { RankingParams } from '../../src/store/search-ranking.js';
import { CODING_QUESTIONS, CODING_SESSIONS } from './coding-fixture.js';
import { loadFixture, minimaxSessionId, writeSessions } from './fixture.js';
import { formatRow, score, splitOf, TABLE_HEADER, type Question, type TurnRef } from './metrics.js';
import { TextbookBm25 } from './textbook-bm25.js';
import { repo } from '../repo-root.js';

const stateDir = process.argv[2]!;
const fixture = loadFixture(path.join(repo, 'bench', 'recall', 'longmemeval-oracle.json.gz'));
if (!existsSync(path.join(stateDir, 'everme.db'))) {
  const root = mkdtempSync(path.join(os.tmpdir(), 'everme-recall-'));
  writeSessions(root, [...fixture.sessions, ...CODING_SESSIONS]);
  execFileSync(process.execPath, [path.join(repo, 'bin', 'run.js'), 'import', '--since', '2000-01-01', '--sink', 'local', '--data-dir', root, '--json'], {
    env: { ...process.env, EVERME_STATE_DIR: stateDir, EVERME_API_KEY: '' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  rmSync(root, { recursive: true, force: true });
}
const sessions = [...fixture.sessions, ...CODING_SESSIONS];
const bySession = new Map(sessions.map((s) => [minimaxSessionId(s.id), s.id]));
const db = new Database(path.join(stateDir, 'everme.db'), { readonly: true });
const refOf = new Map<number, TurnRef>();
for (const row of db.prepare<[], { id: number; session_id: string; msg_key: string }>('SELECT m.id, c.session_id, m.msg_key FROM messages m JOIN conversations c USING (conversation_id)').all()) {
  const s = bySession.get(row.session_id);
  if (s) refOf.set(row.id, `${s}#${row.msg_key.slice(1)}`);
}
const store = new LocalStore(db);
const questions: Question[] = [...fixture.questions, ...CODING_QUESTIONS].map((q) => ({ ...q, evidence: q.evidence.map(([s, i]) => `${s}#${i}`) }));

const ranking = JSON.parse(process.env.RANKING ?? '{}') as Partial<RankingParams>;
const bm25 = new TextbookBm25();
for (const s of sessions) s.turns.forEach(([, text], i) => bm25.add(`${s.id}#${i}`, text));

const ours = new Map<string, TurnRef[]>();
const base = new Map<string, TurnRef[]>();
const t0 = performance.now();
for (const q of questions) ours.set(q.id, store.search(q.question, { limit: 10, ranking }).map((h) => refOf.get(h.messageId) ?? '?'));
const ms = performance.now() - t0;
for (const q of questions) base.set(q.id, bm25.search(q.question, 10));

console.log(TABLE_HEADER);
for (const [label, subset] of [
  ['all', questions],
  ['tune', questions.filter((q) => splitOf(q.id) === 'tune')],
  ['report', questions.filter((q) => splitOf(q.id) === 'report')],
  ...[...new Set(questions.map((q) => q.type))].map((t) => [t, questions.filter((q) => q.type === t)] as const),
] as const) {
  const a = score(subset, ours);
  const b = score(subset, base);
  console.log(`${formatRow(`everme ${label}`, a)}   ratio ${(a.hit10 / b.hit10).toFixed(3)}`);
  console.log(formatRow(`bm25   ${label}`, b));
}
console.log(`everme ${(ms / questions.length).toFixed(1)} ms/question`);
