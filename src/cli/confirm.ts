import { createInterface } from 'node:readline/promises';

/**
 * Asks a yes/no question on the terminal (stderr: stdout is for results); only "y"/"yes" confirm.
 * Ctrl-C or Ctrl-D at the prompt, or `signal` (SIGTERM), is a no: readline rejects the question
 * with an AbortError, which is the user declining, not a failure.
 */
export async function confirmOnTerminal(question: string, signal?: AbortSignal): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(question, signal ? { signal } : {});
    return /^y(es)?$/i.test(answer.trim());
  } catch (err) {
    if (!(err instanceof Error && err.name === 'AbortError')) throw err;
    // The key was not echoed: what follows starts on its own line.
    process.stderr.write('\n');
    return false;
  } finally {
    rl.close();
  }
}
