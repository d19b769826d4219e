/**
 * The outbound-socket guard and the hermetic environment (support/net-guard.mjs,
 * support/hermetic-env.ts, support/suite-setup.ts, global-setup.ts), shown on planted faults.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './support/cli.js';
import { envelopeOf, runCli } from './support/cli-process.js';
import { readGuardLog } from './support/guard-log.js';
import { DEAD_API_BASE, GUARD_NODE_OPTION, hermeticEnv } from './support/hermetic-env.js';
import { tempDir } from './support/temp.js';

const vitestBin = path.join(repoRoot, 'node_modules', 'vitest', 'vitest.mjs');

/**
 * Runs `node -e script` with `env` (or, when undefined, with no env option at all: it inherits this
 * process's), its guard reporting to a log of its own rather than this test's, and returns what
 * that log holds.
 */
function blockedIn(script: string, env: NodeJS.ProcessEnv | undefined): { stdout: string; blocked: ReturnType<typeof readGuardLog> } {
  const log = path.join(tempDir(), 'guard.jsonl');
  const own = { NET_GUARD_LOG: log, NET_GUARD_TEST: 'the planted child' };
  const saved = { NET_GUARD_LOG: process.env.NET_GUARD_LOG, NET_GUARD_TEST: process.env.NET_GUARD_TEST };
  if (env === undefined) Object.assign(process.env, own);
  try {
    const options = { cwd: repoRoot, encoding: 'utf8' as const, timeout: 15_000 };
    const run = env === undefined ? spawnSync(process.execPath, ['-e', script], options) : spawnSync(process.execPath, ['-e', script], { ...options, env: { ...env, ...own } });
    return { stdout: run.stdout, blocked: readGuardLog(log) };
  } finally {
    Object.assign(process.env, saved);
  }
}

describe('the outbound-socket guard', () => {
  it('fails the run for a socket opened in a test or by a CLI it spawned, naming each test, and for temp litter', () => {
    const run = spawnSync(process.execPath, [vitestBin, 'run', '--config', 'test/guard-fixture/vitest.config.ts'], {
      cwd: repoRoot,
      env: hermeticEnv(tempDir()),
      encoding: 'utf8',
      timeout: 120_000,
    });
    const out = run.stdout + run.stderr;
    expect(run.status, out).toBe(1);
    const file = 'test/guard-fixture/planted.guard.ts';
    expect(out).toContain(`connect to 192.0.2.1:8080, by pid`);
    expect(out).toContain(`started by test "${file} > planted > opens a socket from the test process"`);
    expect(out).toContain('connect to api.everme.evermind.ai:443, by pid');
    expect(out).toContain(`started by test "${file} > planted > runs a CLI that asks the real EverMe service"`);
    // The two tests fail by the guard alone (their own assertions hold); the loopback one passes.
    expect(out).toMatch(/Tests {2}2 failed \| 2 passed \(4\)/);
    expect(out).toMatch(/1 temp dir\(s\) left behind by the tests: everme-litter-\w+/);
  }, 120_000);

  it('refuses TCP, TLS, fetch, DNS and UDP outside loopback in a spawned node and its worker threads, and lets loopback through', () => {
    const script = `
      const net = require('node:net'), dns = require('node:dns'), dgram = require('node:dgram'), https = require('node:https');
      const { Worker } = require('node:worker_threads');
      const codes = {};
      const settle = (name) => (err) => { codes[name] = err ? err.code : 'ok'; };
      Promise.all([
        fetch('http://192.0.2.1:8080/').then(() => 'ok', (e) => e.cause.code).then((c) => (codes.fetch = c)),
        new Promise((r) => https.get('https://example.com/').on('error', (e) => r(settle('https')(e)))),
        new Promise((r) => dns.lookup('example.com', (e) => r(settle('lookup')(e)))),
        dns.promises.resolve4('example.com').then(() => 'ok', (e) => e.code).then((c) => (codes.resolve4 = c)),
        new Promise((r) => dgram.createSocket('udp4').send('x', 53, '8.8.8.8', (e) => r(settle('udp')(e)))),
        new Promise((r) => net.connect(9, '127.0.0.1').on('error', (e) => r(settle('loopback')(e)))),
        new Promise((r) => {
          const w = new Worker('./test/guard-fixture/worker-connect.mjs');
          w.on('message', (c) => { codes.worker = c; r(); });
        }),
      ]).then(() => process.stdout.write(JSON.stringify(codes)));
    `;
    const { stdout, blocked } = blockedIn(script, hermeticEnv(tempDir()));
    expect(JSON.parse(stdout)).toEqual({
      fetch: 'ENETUNREACH',
      https: 'ENETUNREACH',
      lookup: 'ENOTFOUND',
      resolve4: 'ENOTFOUND',
      udp: 'ENETUNREACH',
      loopback: 'ECONNREFUSED',
      worker: 'ENETUNREACH',
    });
    expect(blocked.map((b) => `${b.kind} ${b.target}`).sort()).toEqual([
      'connect 192.0.2.1:8080',
      'connect 198.51.100.7:443',
      'connect example.com:443',
      'dns lookup(example.com)',
      'dns resolve4(example.com)',
      'udp 8.8.8.8:53',
    ]);
    expect(new Set(blocked.map((b) => b.test))).toEqual(new Set(['the planted child']));
  });

  it('is loaded into a process spawned without an explicit env too', () => {
    // suite-setup.ts put the guard into this process's NODE_OPTIONS, which a child inherits.
    expect(process.env.NODE_OPTIONS).toBe(GUARD_NODE_OPTION);
    const { blocked } = blockedIn("fetch('http://192.0.2.9/').catch(() => undefined)", undefined);
    expect(blocked.map((b) => b.target)).toEqual(['192.0.2.9:80']);
  });
});

describe('the hermetic environment', () => {
  it('gives a spawned CLI nothing of a parent environment that names a token, an API base and a data dir', async () => {
    const planted = { EVERME_AGENT_TOKEN: 'evt_plantedtoken0000000000000000', EVERME_API_BASE: 'https://planted.example', MINIMAX_DATA_DIR: tempDir() };
    const saved = { ...process.env };
    Object.assign(process.env, planted);
    try {
      const home = tempDir();
      fs.mkdirSync(path.join(home, '.minimax', 'v2', 'sessions'), { recursive: true });
      const run = await runCli(['status', '--json'], hermeticEnv(home));
      const envelope = envelopeOf(run);
      const report = (envelope.ok ? envelope.data : (envelope.error?.detail as { status: Record<string, unknown> }).status) as {
        dataDir: string;
        sink: string;
        gateway: { configured: boolean };
        credential?: unknown;
      };
      expect(report.dataDir).toBe(path.join(home, '.minimax'));
      expect(report.sink).toBe('local');
      expect(report.gateway).toEqual({ configured: false });
      expect(report.credential).toBeUndefined();
      expect(run.stdout + run.stderr).not.toContain('planted');
    } finally {
      for (const key of Object.keys(planted)) delete process.env[key];
      Object.assign(process.env, saved);
    }
  });

  it('leaves none of the shell\'s EVERME_*, MINIMAX_*, MAVIS_* or XDG_* in the test process, whose HOME is a temp dir', () => {
    // .ci/run plants EVERME_AGENT_TOKEN, EVERME_API_BASE and MINIMAX_DATA_DIR: suite-setup.ts removed them.
    const leaked = Object.keys(process.env).filter((key) => /^(EVERME_|MINIMAX_|MAVIS_|XDG_)/.test(key) && !key.startsWith('EVERME_TEST_'));
    expect(leaked).toEqual([]);
    expect(os.homedir().startsWith(os.tmpdir() + path.sep)).toBe(true);
  });

  it('points the CLI at a loopback API base, and refuses any other', () => {
    expect(hermeticEnv('/h').EVERME_API_BASE).toBe(DEAD_API_BASE);
    expect(hermeticEnv('/h', { EVERME_API_BASE: 'http://127.0.0.1:4000' }).EVERME_API_BASE).toBe('http://127.0.0.1:4000');
    expect('EVERME_API_BASE' in hermeticEnv('/h', { EVERME_API_BASE: null })).toBe(false);
    expect(() => hermeticEnv('/h', { EVERME_API_BASE: 'https://api.everme.evermind.ai' })).toThrow(/must be a loopback address/);
    expect(hermeticEnv('/h', { NODE_OPTIONS: '--max-old-space-size=64' }).NODE_OPTIONS).toBe(`${GUARD_NODE_OPTION} --max-old-space-size=64`);
  });
});

describe('the run\'s temp dir', () => {
  it('is where tempDir() and a spawned process put temp files', () => {
    const suiteTmp = path.join(process.env.TEST_SUITE_DIR!, 'tmp');
    expect(os.tmpdir()).toBe(suiteTmp);
    expect(path.dirname(tempDir())).toBe(suiteTmp);
    expect(hermeticEnv('/h').TMPDIR).toBe(suiteTmp);
    expect(fs.existsSync(suiteTmp)).toBe(true);
  });
});
