/**
 * The built CLI over a data dir with a date directory it may not read (chmod 000): import and sync
 * deliver every readable session and name that directory as one `unreadable_dir` warning, the
 * report lists it until the directory is readable again, `status` names it as a problem beside the
 * sessions it could count, and `show` of a session in it names the permission problem. Root ignores permissions, so as root the CLI runs as uid 65534.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './support/cli.js';
import { asRoot, chownTree, runCliAsNobody } from './support/as-nobody.js';
import { cliEnv, envelopeOf } from './support/cli-process.js';
import { tempDir } from './support/temp.js';
import { traversable } from './support/traversable.js';

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
      const imported = await runCliAsNobody(['import', '--since', '2026-07-01', '--sink', 'local', '--data-dir', root, '--json'], env);
      // A warning, as an unreadable manifest.json is: the run delivered all it could find.
      expect(imported.code, imported.stderr).toBe(0);
      expect(envelopeOf(imported).data).toMatchObject({ sessions: { scanned: 2, delivered: 2, failed: 0 }, warnings: { unreadable_dir: 1 } });

      // status counts the sessions it can see and says, as a problem, that the rest are behind that directory.
      const status = await runCliAsNobody(['status', '--data-dir', root, '--json'], env);
      const statusError = envelopeOf(status).error as { detail?: { status?: { sessions: number; unreadableDirs: unknown; problems: Array<{ what: string }> } } } | undefined;
      expect(statusError?.detail?.status).toMatchObject({ sessions: 2, unreadableDirs: [{ path: month, reason: 'EACCES' }] });
      expect(statusError?.detail?.status?.problems.map((p) => p.what)).toContain(`a directory of the session tree cannot be read (EACCES): ${month}`);
      const statusText = await runCliAsNobody(['status', '--data-dir', root], env);
      expect(statusText.code).not.toBe(0);
      expect(statusText.stderr).toContain('(2 sessions; 1 directory could not be read)');

      const text = await runCliAsNobody(['sync', '--data-dir', root], env);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toContain('warnings: unreadable_dir 1 (see `everme report`)');

      const report = await runCliAsNobody(['report', '--data-dir', root, '--json'], env);
      expect(envelopeOf(report).data).toMatchObject({
        conversations: [{ sessionDir: month, source: 'directory', warnings: [{ code: 'unreadable_dir', count: 1 }] }],
        totals: { unreadable_dir: 1 },
      });
      const reportText = await runCliAsNobody(['report', '--data-dir', root], env);
      expect(reportText.stdout).not.toContain('No warnings');
      expect(reportText.stdout).toContain(month);

      const show = await runCliAsNobody(['show', HIDDEN, '--data-dir', root, '--json'], env);
      expect(show.code).toBe(1);
      expect(envelopeOf(show).error).toMatchObject({ type: 'permission', code: 'sessions_dir_unreadable' });
      expect(JSON.stringify(envelopeOf(show).error)).toContain(month);

      // Readable again: the next sync reads its sessions and the warning is gone.
      fs.chmodSync(month, 0o755);
      const again = await runCliAsNobody(['sync', '--data-dir', root, '--json'], env);
      expect(again.code, again.stderr).toBe(0);
      expect(envelopeOf(again).data).toMatchObject({ sessions: { scanned: 4, failed: 0 } });
      expect(envelopeOf(again).data?.warnings).toEqual({});
      expect(envelopeOf(await runCliAsNobody(['report', '--data-dir', root, '--json'], env)).data).toMatchObject({ conversations: [], totals: {} });
    } finally {
      fs.chmodSync(month, 0o755);
      for (const [d, mode] of opened) fs.chmodSync(d, mode);
    }
  });
});
