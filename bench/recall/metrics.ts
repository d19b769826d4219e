import { createHash } from 'node:crypto';

/** A retrieved or labelled turn: `<fixture session id>#<turn index>`. */
export type TurnRef = string;

export interface Question {
  id: string;
  type: string;
  question: string;
  evidence: TurnRef[];
}

export interface Scores {
  questions: number;
  hit5: number;
  hit10: number;
  recall10: number;
}

/**
 * Which half a question belongs to, fixed by its id: ranking choices are tuned on `tune` and
 * reported on both, so a signal that only fits the questions it was chosen on shows as a gap.
 */
export function splitOf(questionId: string): 'tune' | 'report' {
  return createHash('sha256').update(questionId).digest()[0]! % 2 === 0 ? 'tune' : 'report';
}

export function score(questions: readonly Question[], results: ReadonlyMap<string, readonly TurnRef[]>): Scores {
  let hit5 = 0;
  let hit10 = 0;
  let recall10 = 0;
  for (const q of questions) {
    const got = results.get(q.id) ?? [];
    const evidence = new Set(q.evidence);
    if (got.slice(0, 5).some((r) => evidence.has(r))) hit5++;
    const top10 = new Set(got.slice(0, 10));
    const found = q.evidence.filter((r) => top10.has(r)).length;
    if (found > 0) hit10++;
    recall10 += found / evidence.size;
  }
  const n = questions.length || 1;
  return { questions: questions.length, hit5: hit5 / n, hit10: hit10 / n, recall10: recall10 / n };
}

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

export function formatRow(label: string, s: Scores): string {
  return `${label.padEnd(34)} ${String(s.questions).padStart(5)}  ${pct(s.hit5).padStart(6)}  ${pct(s.hit10).padStart(6)}  ${pct(s.recall10).padStart(6)}`;
}

export const TABLE_HEADER = `${'set'.padEnd(34)} ${'n'.padStart(5)}  ${'hit@5'.padStart(6)}  ${'hit@10'.padStart(6)}  ${'ev@10'.padStart(6)}`;
