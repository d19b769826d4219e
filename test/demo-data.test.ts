import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEnv, runCli } from './support/cli-process.js';
import { copyTree, repoRoot } from './transcript-helpers.js';
import { untouchable } from './support/session-index-host.js';

let copy: string | undefined;
afterEach(() => {
  if (copy) fs.rmSync(copy, { recursive: true, force: true });
  copy = undefined;
});

describe("the README's demo data", { timeout: 120_000 }, () => {
  it('shows projects and titles from the first command (import, then search), and its session index is left as it was', async () => {
    copy = copyTree(path.join(repoRoot, 'fixtures', 'demo'));
    fs.rmSync(path.join(copy, 'everme'), { recursive: true, force: true });
    const env = cliEnv(copy);
    const before = untouchable(copy);
    const imported = await runCli(['import', '--since', '2026-07-01', '--data-dir', copy], env);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toContain('projects: /home/demo/projects/widget (2), /home/demo/projects/toolbox (1)');
    expect(imported.stdout).toContain('session index: 4 of 4 sessions known');
    expect(imported.stdout).not.toContain('workspace unknown');
    const searched = await runCli(['search', 'widget', '--data-dir', copy], env);
    expect(searched.code, searched.stderr).toBe(0);
    expect(searched.stdout).toMatch(/"What src\/widget\.ts exports" · .* · \/home\/demo\/projects\/widget/);
    expect(untouchable(copy)).toEqual(before);
  });
});
