/**
 * Builds `longmemeval-oracle.json.gz` (committed) from the LongMemEval "oracle" instances: one JSON
 * file per question, as `LongMemEval/data/longmemeval_oracle.json` holds them (500 questions, their
 * evidence sessions only). Run once by hand:
 *
 *   node dist/bench/recall/build-fixture.js DIR_OF_QUESTION_JSONS bench/recall/longmemeval-oracle.json.gz
 *
 * Source: LongMemEval (Di Wu et al., ICLR 2025), MIT License, Copyright (c) 2024 Di Wu. The copy
 * read here was the per-question split in github.com/hussainzs/Memoria (evaluations/data/lme_jsons,
 * files with 1–6 haystack sessions). Every session of every question is kept (they are each
 * other's haystack); questions without a labelled evidence turn (abstention questions) are dropped.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import * as z from 'zod';
import type { FixtureQuestion, FixtureSession, RecallFixture } from './fixture.js';

const turnSchema = z.object({ role: z.enum(['user', 'assistant']), content: z.string(), has_answer: z.boolean().optional() });
const instanceSchema = z.object({
  question_id: z.string(),
  question_type: z.string(),
  question: z.string(),
  question_date: z.string(),
  haystack_session_ids: z.array(z.string()),
  haystack_dates: z.array(z.string()),
  haystack_sessions: z.array(z.array(turnSchema)),
});

/** `2023/05/21 (Sun) 19:50` → epoch ms (UTC). */
function parseDate(text: string): number {
  const m = /^(\d{4})\/(\d{2})\/(\d{2}) \(\w+\) (\d{2}):(\d{2})$/.exec(text);
  if (!m) throw new Error(`unexpected date ${text}`);
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]));
}

function main(): void {
  const [dir, out] = process.argv.slice(2);
  if (!dir || !out) throw new Error('usage: build-fixture DIR OUT');
  const sessions = new Map<string, FixtureSession>();
  const questions: FixtureQuestion[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    const d = instanceSchema.parse(JSON.parse(readFileSync(path.join(dir, file), 'utf8')));
    if (d.haystack_sessions.length > 6) continue;
    const evidence: Array<[string, number]> = [];
    d.haystack_session_ids.forEach((id, i) => {
      const turns = d.haystack_sessions[i]!;
      if (!sessions.has(id)) sessions.set(id, { id, at: parseDate(d.haystack_dates[i]!), turns: turns.map((t) => [t.role, t.content]) });
      turns.forEach((t, j) => {
        if (t.has_answer) evidence.push([id, j]);
      });
    });
    if (evidence.length > 0 && !questions.some((q) => q.id === d.question_id)) {
      questions.push({ id: d.question_id, type: d.question_type, question: d.question, evidence });
    }
  }
  const fixture: RecallFixture = {
    source: 'LongMemEval oracle split (Wu et al., "LongMemEval: Benchmarking Chat Assistants on Long-Term Interactive Memory", ICLR 2025)',
    license: 'MIT License, Copyright (c) 2024 Di Wu',
    sessions: [...sessions.values()].sort((a, b) => a.at - b.at || a.id.localeCompare(b.id)),
    questions,
  };
  writeFileSync(out, gzipSync(JSON.stringify(fixture), { level: 9 }));
  process.stderr.write(`${fixture.questions.length} questions, ${fixture.sessions.length} sessions -> ${out}\n`);
}

main();
