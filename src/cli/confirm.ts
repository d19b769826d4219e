import { createInterface } from 'node:readline/promises';

/** Asks a yes/no question on the terminal (stderr: stdout is for results); only "y"/"yes" confirm. */
export async function confirmOnTerminal(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(question);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}
