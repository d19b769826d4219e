import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { percentile } from './stats.js';
import { repo } from './repo-root.js';

/**
 * `everme ui` on a bench store, in Debian's headless Chromium: the home page's time to `load`
 * (first visit, with the URL's secret and its redirect, then warm reloads), the time from the
 * search box's debounce firing to the results in the page (measured by the page's own script,
 * `data-ms`), and the server's peak RSS. One JSON line on stdout.
 *
 * node dist/bench/measure-ui.js DATA_DIR STATE_DIR
 */

/** As the browser tests start it (test/support/browser.ts): no traffic of Chromium's own. */
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

/** The search bench's mix: rare words, CJK runs, two common words. */
const QUERIES = ['payload', 'cache index', '优先级', '缓存', 'テスト', '데이터', 'migration parser', 'timeout retry', 'socket', 'build test', 'error handler', 'deploy fix'];
const ROUNDS = 3;
const HOME_RELOADS = 5;

function procStatusMb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

async function main(dataDir: string, stateDir: string): Promise<void> {
  const env = { ...process.env, EVERME_STATE_DIR: stateDir, EVERME_API_KEY: '', EVERME_AGENT_TOKEN: '' };
  const child = spawn(process.execPath, [path.join(repo, 'bin', 'run.js'), 'ui', '--port', '0', '--no-open', '--data-dir', dataDir], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    child.on('exit', (code) => reject(new Error(`everme ui exited (${code})`)));
  });
  const origin = new URL(url).origin;
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS, headless: true });
  try {
    const page = await browser.newPage();
    // Chromium's own first navigation (a renderer process started) is not the viewer's time: a
    // request that gets 401 warms it before the measured one.
    await page.goto(`${origin}/favicon.ico`);
    let t0 = performance.now();
    // The printed URL is the home page itself (`/<secret>/`): every page lives under its path.
    await page.goto(url, { waitUntil: 'load' });
    const homeFirstMs = performance.now() - t0;
    const homeWarm: number[] = [];
    for (let i = 0; i < HOME_RELOADS; i++) {
      t0 = performance.now();
      await page.goto(url, { waitUntil: 'load' });
      homeWarm.push(performance.now() - t0);
    }
    await page.goto(`${url}search`, { waitUntil: 'load' });
    const box = page.getByLabel('Words to find');
    const search: number[] = [];
    const perQuery = new Map<string, number>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const q of QUERIES) {
        await box.fill('');
        await page.waitForSelector('#results:not([data-query])');
        await box.pressSequentially(q, { delay: 15 });
        const results = await page.waitForSelector(`#results[data-query="${q}"]`, { timeout: 30_000 });
        const ms = Number(await results.getAttribute('data-ms'));
        search.push(ms);
        perQuery.set(q, Math.max(perQuery.get(q) ?? 0, ms));
      }
    }
    const slowest = [...perQuery].sort((a, b) => b[1] - a[1]).slice(0, 3);
    process.stdout.write(
      `${JSON.stringify({
        ms: homeFirstMs,
        homeFirstMs,
        homeWarmP50: percentile(homeWarm, 50),
        homeWarmMax: Math.max(...homeWarm),
        searchP50: percentile(search, 50),
        searchP95: percentile(search, 95),
        searches: search.length,
        slowest,
        serverRssMb: procStatusMb(child.pid!, 'VmRSS'),
        maxRssMb: procStatusMb(child.pid!, 'VmHWM'),
      })}\n`,
    );
  } finally {
    await browser.close();
    child.kill('SIGTERM');
  }
}

void main(process.argv[2]!, process.argv[3]!);
