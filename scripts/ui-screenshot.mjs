#!/usr/bin/env node
// The README's screenshot of `everme ui`: the demo data dir (a temp copy, so the checkout is not
// touched) imported as the README's first command does, the viewer started on it, its search page
// captured in Debian's headless Chromium (driven by playwright-core). Needs `npm run build` first.
//
//   node scripts/ui-screenshot.mjs [out.png]     (default docs/everme-ui.png)
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.resolve(process.argv[2] ?? path.join(repo, 'docs', 'everme-ui.png'));
const work = mkdtempSync(path.join(os.tmpdir(), 'everme-screenshot-'));
const dataDir = path.join(work, 'demo');
cpSync(path.join(repo, 'fixtures', 'demo'), dataDir, { recursive: true });
// Only what the CLI needs: no EVERME_* or MINIMAX_* of the shell (a key would switch the sink).
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work, LANG: 'C.UTF-8' };
const cli = path.join(repo, 'bin', 'run.js');

let viewer;
let browser;
try {
  const imported = spawnSync(process.execPath, [cli, 'import', '--since', '2026-07-01', '--data-dir', dataDir], { env, encoding: 'utf8' });
  if (imported.status !== 0) throw new Error(`import failed: ${imported.stderr}`);
  viewer = spawn(process.execPath, [cli, 'ui', '--port', '0', '--no-open', '--data-dir', dataDir], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve, reject) => {
    let text = '';
    viewer.stdout.setEncoding('utf8').on('data', (chunk) => {
      text += chunk;
      if (text.includes('\n')) resolve(text.split('\n')[0]);
    });
    viewer.on('exit', (code) => reject(new Error(`everme ui exited (${code})`)));
  });
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  const page = await browser.newPage({ viewport: { width: 1000, height: 520 }, colorScheme: 'light' });
  // Every page lives under the printed URL's secret path (`http://127.0.0.1:<port>/<secret>/`).
  await page.goto(`${url}search`);
  await page.getByLabel('Words to find').pressSequentially('widget', { delay: 20 });
  await page.waitForSelector('#results[data-query="widget"]');
  // The caret blinks: hide it so the picture is the same every time.
  await page.getByLabel('Words to find').blur();
  await page.screenshot({ path: out });
  process.stdout.write(`${path.relative(process.cwd(), out)}\n`);
} finally {
  await browser?.close();
  viewer?.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
}
