/**
 * Once per `vitest run`, around every test file:
 * - rebuild dist/ when any source is newer than the last build, so the end-to-end tests never
 *   spawn a CLI older than the code under test (CI builds first; this is for local runs);
 * - give the run a temp dir of its own (TMPDIR for the test processes and everything they spawn),
 *   and at the end fail the run, naming them, if any `everme-*` entry is left in it;
 * - fail the run, naming the test, if the outbound-socket guard blocked anything, including what a
 *   detached process did after its test had finished;
 * - as root, make the temp dir and the checkout traversable for the run (see below).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { staleBuildReason } from './support/fresh-build.js';
import { describeBlocked, readGuardLog } from './support/guard-log.js';
import { traversable } from './support/traversable.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function leftovers(dir: string): string[] {
  return fs.existsSync(dir) ? fs.readdirSync(dir).filter((name) => name.startsWith('everme-')) : [];
}

export default function setup(): () => void {
  const stale = staleBuildReason(root);
  if (stale) {
    process.stderr.write(`global setup: ${stale}; running npm run build\n`);
    execFileSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  }

  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'everme-suite-'));
  const tmp = path.join(runDir, 'tmp');
  fs.mkdirSync(tmp);
  // Inherited by the test processes vitest forks from here, and by everything they spawn.
  process.env.TEST_SUITE_DIR = runDir;
  process.env.TMPDIR = tmp;
  // Tests that run the CLI as `nobody` (root ignores permissions) make the directories above their
  // files traversable and put the modes back when they end (traversable.ts). The run's temp dir and
  // the checkout are above every such test's files: opened by one test and put back by another
  // while the first still ran, its child could no longer reach its own home. Opened here, once for
  // the whole run, no test changes them.
  const opened = process.getuid?.() === 0 ? traversable([tmp, root, fs.realpathSync(path.join(root, 'node_modules'))]) : [];

  return () => {
    for (const [dir, mode] of opened.reverse()) fs.chmodSync(dir, mode);
    const problems: string[] = [];
    const blocked = fs
      .readdirSync(runDir)
      .filter((name) => name.startsWith('net-guard-'))
      .flatMap((name) => readGuardLog(path.join(runDir, name)));
    if (blocked.length > 0) problems.push(`the outbound-socket guard blocked ${blocked.length} attempt(s):\n${describeBlocked(blocked)}`);
    const left = leftovers(tmp);
    if (left.length > 0) problems.push(`${left.length} temp dir(s) left behind by the tests: ${left.join(', ')}`);
    fs.rmSync(runDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    if (problems.length > 0) throw new Error(problems.join('\n'));
  };
}
