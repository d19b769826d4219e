/**
 * The hook's hot path has no unbounded synchronous loop: with a state dir the OS refuses in unusual
 * ways it still exits 0, silent on stdout, well inside the host's budget (Node's recursive mkdir
 * used to spin at 100% CPU forever under /proc, starving the watchdog timer).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, hookEnv, runHookCli } from './support/hook-harness.js';
import { sessionIdFor, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { tempDir } from './transcript-helpers.js';

let root: string;
let dataDir: string;
let immutableDir: string | undefined;

beforeAll(() => {
  ensureBuilt();
  root = tempDir();
  dataDir = path.join(root, 'data');
  fs.mkdirSync(dataDir);
  writeMessagesSession(dataDir, 1, turnsEnvelopes('h', [0]));
  fs.writeFileSync(path.join(root, 'a-file'), 'not a directory');
  // Read-only for everyone, root included: the immutable flag where available, else mode 0500.
  const readOnly = path.join(root, 'read-only');
  fs.mkdirSync(readOnly);
  fs.chmodSync(readOnly, 0o500);
  if (process.getuid?.() === 0 && spawnSync('chattr', ['+i', readOnly]).status === 0) immutableDir = readOnly;
});

afterAll(() => {
  if (immutableDir) spawnSync('chattr', ['-i', immutableDir]);
});

describe('the hook with a state dir the OS refuses', () => {
  const cases: Array<[string, () => string]> = [
    ['under /proc/<pid>', () => '/proc/1/everme-state'],
    ['under /proc/self/fd', () => '/proc/self/fd/everme-state'],
    ['below a regular file (ENOTDIR)', () => path.join(root, 'a-file', 'state')],
    ['inside a read-only directory', () => path.join(root, 'read-only', 'state')],
  ];
  for (const [name, stateDir] of cases) {
    for (const [which, sessionId] of [
      ['a known session', sessionIdFor(1)],
      ['an unknown session', 'mvs_ffffffffffffffffffffffffffffffff'],
    ] as const) {
      it(`${name}, for ${which}: exits 0 without hanging, nothing on stdout`, async () => {
        const input = JSON.stringify({ hook_event_name: 'PostToolUse', session_id: sessionId, cwd: root });
        const run = await runHookCli(input, hookEnv({ HOME: root, MINIMAX_DATA_DIR: dataDir, EVERME_STATE_DIR: stateDir(), EVERME_HOOK_WATCHDOG_MS: null }));
        expect(run.code).toBe(0);
        expect(run.stdout).toBe('');
        // A hang detector (the harness kills at 60 s), not a speed limit: 3 s failed on a loaded machine.
        expect(run.ms).toBeLessThan(15_000);
        expect(run.stderr.split('\n').filter(Boolean).length).toBeLessThanOrEqual(1);
      });
    }
  }
});
