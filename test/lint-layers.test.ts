import fs from 'node:fs';
import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './support/cli.js';

/**
 * The lint step's import rules, run through ESLint's Node API with the repository's own
 * eslint.config.js on planted files: an import against the layer order and an import cycle each
 * fail it. Only the import rules run here (they need no type information), so the planted code
 * needs no place in the TypeScript program.
 */
function importRulesOnly(): ESLint {
  return new ESLint({
    cwd: repoRoot,
    overrideConfig: { languageOptions: { parserOptions: { project: null } } },
    ruleFilter: ({ ruleId }) => ruleId.startsWith('import-x/'),
  });
}

async function lintPlanted(relPath: string, source: string): Promise<ESLint.LintResult> {
  const [result] = await importRulesOnly().lintText(source, { filePath: path.join(repoRoot, relPath) });
  if (!result) throw new Error('eslint returned no result');
  return result;
}

describe('the lint step enforces the layer order', () => {
  it('fails a store module that imports the engine (a layer above it)', async () => {
    const result = await lintPlanted('src/store/planted-violation.ts', "import { runPipeline } from '../engine/run-pipeline.js';\nexport const run = runPipeline;\n");
    expect(result.errorCount).toBe(1);
    expect(result.messages[0]).toMatchObject({ ruleId: 'import-x/no-restricted-paths', severity: 2 });
    expect(result.messages[0]?.message).toContain('src/store sits below');
  });

  it('fails core importing anything of the project, and a feature folder importing its peer', async () => {
    const core = await lintPlanted('src/core/planted-violation.ts', "import type { Settings } from '../config/settings.js';\nexport type S = Settings;\n");
    expect(core.messages.map((m) => m.ruleId)).toEqual(['import-x/no-restricted-paths']);
    const peer = await lintPlanted('src/hook/planted-violation.ts', "import { renderInstall } from '../install/render.js';\nexport const r = renderInstall;\n");
    expect(peer.messages.map((m) => m.ruleId)).toEqual(['import-x/no-restricted-paths']);
  });

  it('places the viewer (src/ui) above status and beside cli, and keeps its browser script apart', async () => {
    const up = await lintPlanted('src/status/planted-violation.ts', "import { startViewer } from '../ui/viewer.js';\nexport const s = startViewer;\n");
    expect(up.messages.map((m) => m.ruleId)).toEqual(['import-x/no-restricted-paths']);
    const peer = await lintPlanted('src/ui/planted-violation.ts', "import { renderRunSummary } from '../cli/render-run.js';\nexport const r = renderRunSummary;\n");
    expect(peer.messages.map((m) => m.ruleId)).toEqual(['import-x/no-restricted-paths']);
    const down = await lintPlanted('src/ui/planted-fine.ts', "import { collectStatus } from '../status/status.js';\nexport const c = collectStatus;\n");
    expect(down.messages).toEqual([]);
    const browser = await lintPlanted('src/ui/client/planted-violation.ts', "import { EvermeError } from '../../core/errors.js';\nexport const E = EvermeError;\n");
    expect(browser.messages.map((m) => m.ruleId)).toEqual(['import-x/no-restricted-paths']);
    expect(browser.messages[0]?.message).toContain('runs in the browser');
  });

  it('passes the same kind of import when it runs down the layers', async () => {
    const result = await lintPlanted('src/engine/planted-fine.ts', "import { LocalStore } from '../store/local-store.js';\nexport const S = LocalStore;\n");
    expect(result.messages).toEqual([]);
  });

  it('fails an import cycle', async () => {
    const dir = fs.mkdtempSync(path.join(repoRoot, 'test', 'planted-cycle-'));
    try {
      fs.writeFileSync(path.join(dir, 'left.ts'), "import { right } from './right.js';\nexport const left = (): number => right() + 1;\n");
      fs.writeFileSync(path.join(dir, 'right.ts'), "import { left } from './left.js';\nexport const right = (): number => (left.length > 0 ? 1 : 0);\n");
      const [result] = await importRulesOnly().lintFiles([path.join(dir, 'left.ts')]);
      expect(result?.messages.map((m) => m.ruleId)).toEqual(['import-x/no-cycle']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
