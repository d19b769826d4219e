/**
 * Runs in every test file's process before the file (vitest `setupFiles`):
 * - the process itself is made hermetic: nothing of the developer's shell that points everme at a
 *   store, a gateway or a credential (EVERME_*, MINIMAX_*, MAVIS_*, XDG_*, NODE_OPTIONS) stays in
 *   `process.env`, and HOME is a temp dir, so in-process code and anything spawned without an
 *   explicit env see none of it (spawned CLIs get support/hermetic-env.ts);
 * - the outbound-socket guard is loaded here too, and every attempt it blocked in this process or
 *   in one the test spawned fails that test, by name;
 * - the file's temp dirs are removed after it.
 */
import path from 'node:path';
import { afterAll, afterEach, beforeEach } from 'vitest';
import './net-guard.mjs';
import { readGuardLog, describeBlocked } from './guard-log.js';
import { GUARD_NODE_OPTION } from './hermetic-env.js';
import { removeTempDirs, tempDir } from './temp.js';

const SHELL_VARIABLES = /^(EVERME_|MINIMAX_|MAVIS_|XDG_)/;
/** Knobs of the tests themselves (EVERME_TEST_PACKAGE_ROOT): the product reads none of them. */
const TEST_KNOBS = /^EVERME_TEST_/;
for (const key of Object.keys(process.env)) if (SHELL_VARIABLES.test(key) && !TEST_KNOBS.test(key)) delete process.env[key];
process.env.HOME = tempDir('everme-home-');
// A process spawned without an explicit env (a `node -e` helper) inherits this one's: it gets the
// guard too. The developer's own NODE_OPTIONS is dropped.
process.env.NODE_OPTIONS = GUARD_NODE_OPTION;

/** The suite's run dir (global-setup.ts); a file run some other way logs next to its temp dirs. */
const runDir = process.env.TEST_SUITE_DIR ?? path.dirname(process.env.HOME);
const guardLog = path.join(runDir, `net-guard-${process.pid}.jsonl`);
process.env.NET_GUARD_LOG = guardLog;

interface Named {
  name: string;
  suite?: Named;
}

/** `test/foo.test.ts > describe > test`. */
function fullName(task: Named & { file: { name: string } }): string {
  const names: string[] = [];
  for (let t: Named | undefined = task; t; t = t.suite) names.unshift(t.name);
  if (names[0] !== task.file.name) names.unshift(task.file.name);
  return names.join(' > ');
}

let seen = 0;

/** Fails (throws) for every blocked attempt logged since the last check. */
function checkGuard(when: string): void {
  const blocked = readGuardLog(guardLog);
  const fresh = blocked.slice(seen);
  seen = blocked.length;
  if (fresh.length > 0) throw new Error(`the outbound-socket guard blocked ${fresh.length} attempt(s) ${when}:\n${describeBlocked(fresh)}`);
}

beforeEach((context) => {
  process.env.NET_GUARD_TEST = fullName(context.task);
});

afterEach((context) => {
  process.env.NET_GUARD_TEST = context.task.file.name;
  checkGuard(`during "${fullName(context.task)}"`);
});

afterAll((file) => {
  try {
    checkGuard(`after the tests of ${file.name} (by a process one of them left running)`);
  } finally {
    removeTempDirs();
  }
});
