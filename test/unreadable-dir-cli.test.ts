/**
 * The built CLI over a data dir with a date directory it may not read (chmod 000): import and sync
 * deliver every readable session and name that directory as one `unreadable_dir` warning, the
 * report lists it until the directory is readable again, `status` names it as a problem beside the
 * sessions it could count, and `show` of a session in it names the permission problem. Root ignores permissions, so as root the CLI runs as uid 65534.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliEntry, ensureBuilt, repoRoot } from './support/cli.js';
import { cliEnv, envelopeOf, type CliResult } from './support/cli-process.js';
import { tempDir } from './support/temp.js';
import { traversable } from './support/traversable.js';

const asRoot = process.getuid?.() === 0;
const NOBODY = 65534;

function chownTree(dir: string): void {
  fs.chownSync(dir, NOBODY, NOBODY);
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) chownTree(p);
    else fs.lchownSync(p, NOBODY, NOBODY);
  }
}

/** The built CLI, as uid 65534 when this test runs as root (chmod 000 would not stop root). */
function runCliAs(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  ensureBuilt();
  const child = spawn(process.execPath, [cliEntry, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'], ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}) });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

const HIDDEN = 'mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40';

describe('a date directory of v2/sessions that cannot be read', () => {
  it.runIf(process.platform !== 'win32')('is one unreadable_dir warning in import, sync and report; every readable session is delivered; show names it', async () => {
    const root = tempDir();
    fs.cpSync(path.join(repoRoot, 'fixtures', 'demo', 'v2'), path.join(root, 'v2'), { recursive: true });
    for (const d of ['home', 'state', 'tmp']) fs.mkdirSync(path.join(root, d));
    if (asRoot) chownTree(root);
    const month = path.join(root, 'v2', 'sessions', '2026', '09');
    const env = cliEnv(path.join(root, 'home'), { EVERME_STATE_DIR: path.join(root, 'state'), TMPDIR: path.join(root, 'tmp') });
    const opened = asRoot ? traversable([root, path.join(repoRoot, 'dist')]) : [];
    fs.chmodSync(month, 0o000);
    try {
      const imported = await runCliAs(['import', '--since', '2026-07-01', '--sink', 'local', '--data-dir', root, '--json'], env);
      // A warning, as an unreadable manifest.json is: the run delivered all it could find.
      expect(imported.code, imported.stderr).toBe(0);
      expect(envelopeOf(imported).data).toMatchObject({ sessions: { scanned: 2, delivered: 2, failed: 0 }, warnings: { unreadable_dir: 1 } });

      // status counts the sessions it can see and says, as a problem, that the rest are behind that directory.
      const status = await runCliAs(['status', '--data-dir', root, '--json'], env);
      const statusError = envelopeOf(status).error as { detail?: { status?: { sessions: number; unreadableDirs: unknown; problems: Array<{ what: string }> } } } | undefined;
      expect(statusError?.detail?.status).toMatchObject({ sessions: 2, unreadableDirs: [{ path: month, reason: 'EACCES' }] });
      expect(statusError?.detail?.status?.problems.map((p) => p.what)).toContain(`a directory of the session tree cannot be read (EACCES): ${month}`);
      const statusText = await runCliAs(['status', '--data-dir', root], env);
      expect(statusText.code).not.toBe(0);
      expect(statusText.stderr).toContain('(2 sessions; 1 directory could not be read)');

      const text = await runCliAs(['sync', '--data-dir', root], env);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toContain('warnings: unreadable_dir 1 (see `everme report`)');

      const report = await runCliAs(['report', '--data-dir', root, '--json'], env);
      expect(envelopeOf(report).data).toMatchObject({
        conversations: [{ sessionDir: month, source: 'directory', warnings: [{ code: 'unreadable_dir', count: 1 }] }],
        totals: { unreadable_dir: 1 },
      });
      const reportText = await runCliAs(['report', '--data-dir', root], env);
      expect(reportText.stdout).not.toContain('No warnings');
      expect(reportText.stdout).toContain(month);

      const show = await runCliAs(['show', HIDDEN, '--data-dir', root, '--json'], env);
      expect(show.code).toBe(1);
      expect(envelopeOf(show).error).toMatchObject({ type: 'permission', code: 'sessions_dir_unreadable' });
      expect(JSON.stringify(envelopeOf(show).error)).toContain(month);

      // Readable again: the next sync reads its sessions and the warning is gone.
      fs.chmodSync(month, 0o755);
      const again = await runCliAs(['sync', '--data-dir', root, '--json'], env);
      expect(again.code, again.stderr).toBe(0);
      expect(envelopeOf(again).data).toMatchObject({ sessions: { scanned: 4, failed: 0 } });
      expect(envelopeOf(again).data?.warnings).toEqual({});
      expect(envelopeOf(await runCliAs(['report', '--data-dir', root, '--json'], env)).data).toMatchObject({ conversations: [], totals: {} });
    } finally {
      fs.chmodSync(month, 0o755);
      for (const [d, mode] of opened) fs.chmodSync(d, mode);
    }
  });
});
