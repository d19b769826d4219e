/**
 * Modes are explicit, never the umask's: under `umask 000` the staged runtime (which the hook
 * executes) is 0755/0644 and everything that holds state is 0700/0600.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliEnv } from './support/cli-process.js';
import { cliEntry } from './support/cli.js';
import { turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { tempDir } from './transcript-helpers.js';
import { waitForWorkers } from './support/hook-harness.js';
import { readHookEvents } from '../src/hook/hook-events.js';

function runUnderUmask000(args: string[], env: NodeJS.ProcessEnv, input?: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', 'umask 000 && exec "$0" "$@"', process.execPath, cliEntry, ...args], {
      env,
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
    child.stdin.end(input ?? '');
  });
}

const modeOf = (p: string): number => fs.lstatSync(p).mode & 0o777;

function walk(dir: string): string[] {
  return [dir, ...fs.readdirSync(dir, { recursive: true }).map((rel) => path.join(dir, String(rel)))];
}

describe('explicit modes whatever the umask', () => {
  it('install, import and the hook under umask 000 leave nothing group- or world-writable', async () => {
    const root = tempDir();
    const dataDir = path.join(root, 'data');
    fs.mkdirSync(dataDir);
    writeMessagesSession(dataDir, 1, turnsEnvelopes('u', [0]));
    const env = cliEnv(root, { MINIMAX_DATA_DIR: dataDir });

    const install = await runUnderUmask000(['install', '--api-key', 'evt_a1b2c3d4e5f6a7b8c9d0', '--data-dir', dataDir], env);
    expect(install.code, install.stderr).toBe(0);
    const state = path.join(dataDir, 'everme');
    const runtime = path.join(state, 'runtime');
    expect(modeOf(state)).toBe(0o700);
    expect(modeOf(runtime)).toBe(0o755);
    expect(modeOf(path.join(dataDir, 'everme.env'))).toBe(0o600);
    const runtimeEntries = walk(runtime);
    expect(runtimeEntries.length).toBeGreaterThan(50);
    for (const p of runtimeEntries) {
      const st = fs.lstatSync(p);
      if (st.isSymbolicLink()) continue;
      if (st.isDirectory()) expect(modeOf(p), p).toBe(0o755);
      else expect([0o644, 0o755], p).toContain(modeOf(p));
    }
    expect(modeOf(path.join(runtime, 'bin', 'run.js'))).toBe(0o755);

    const imported = await runUnderUmask000(['import', '--since', '2026-09-01', '--sink', 'local', '--data-dir', dataDir], env);
    expect(imported.code, imported.stderr).toBe(0);
    expect(modeOf(path.join(state, 'everme.db'))).toBe(0o600);

    const hookInput = JSON.stringify({ hook_event_name: 'PostToolUse', session_id: 'mvs_00000001dddddddddddddddddddddddd', cwd: root });
    const hooked = await runUnderUmask000(['hook'], env, hookInput);
    expect(hooked.code).toBe(0);
    expect(modeOf(path.join(state, 'hook'))).toBe(0o700);
    // The hook started a detached worker (the install holds a key, so it delivers to the gateway:
    // the hermetic env's refused loopback port, never the real service). It is done before the
    // walk, so nothing it writes later escapes the check, and nothing outlives the test.
    expect(readHookEvents(state).map((e) => e.outcome)).toEqual(['claimed']);
    await waitForWorkers(state);

    // Nothing anywhere under the state dir is writable by anyone else.
    let checked = 0;
    for (const p of walk(state)) {
      const st = fs.lstatSync(p);
      if (st.isSymbolicLink()) continue;
      expect(st.mode & 0o022, p).toBe(0);
      checked++;
    }
    expect(checked).toBeGreaterThan(5);
  });

  it('a fresh state dir named by EVERME_STATE_DIR is created 0700, its parents too', async () => {
    const root = tempDir();
    const dataDir = path.join(root, 'data');
    fs.mkdirSync(dataDir);
    writeMessagesSession(dataDir, 1, turnsEnvelopes('u', [0]));
    const stateDir = path.join(root, 'deep', 'er', 'state');
    const run = await runUnderUmask000(['import', '--since', '2026-09-01', '--sink', 'local'], cliEnv(root, { MINIMAX_DATA_DIR: dataDir, EVERME_STATE_DIR: stateDir }));
    expect(run.code, run.stderr).toBe(0);
    for (const dir of [path.join(root, 'deep'), path.join(root, 'deep', 'er'), stateDir]) expect(modeOf(dir), dir).toBe(0o700);
    expect(modeOf(path.join(stateDir, 'everme.db'))).toBe(0o600);
  });
});
