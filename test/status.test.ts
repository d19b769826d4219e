import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEntry, ensureBuilt, repoRoot } from './support/cli.js';
import { FAKE_GATEWAY_TOKEN, startFakeGateway, type FakeGateway } from './support/fake-gateway.js';

interface StatusData {
  sessions: number;
  sink: string;
  gateway: { configured: boolean; reachable?: boolean; error?: { type: string; message: string } };
  lastImport?: { since?: string };
  hooks: { installed: Array<{ event: string; runnable: boolean }>; latencyMs: { count: number; p50?: number; p95?: number }; outcomes: Record<string, number> };
  mcp: { registered: boolean };
  store: { messages: number; conversations: number; bytes: number };
  warnings: number;
  problems: Array<{ what: string; hint: string }>;
}

function dataDirFromFixture(name: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'everme-status-'));
  fs.cpSync(path.join(repoRoot, 'fixtures', name), dir, { recursive: true });
  return dir;
}

function cli(dataDir: string, args: string[], env: Record<string, string> = {}, input?: string) {
  return spawnSync(process.execPath, [cliEntry, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: dataDir, ...env, MINIMAX_DATA_DIR: dataDir },
    input,
    encoding: 'utf8',
  });
}

/** Async, so the in-process fake gateway can answer while the CLI runs. */
function cliAsync(dataDir: string, args: string[], env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cliEntry, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: dataDir, ...env, MINIMAX_DATA_DIR: dataDir },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

describe('everme status', () => {
  let gateway: FakeGateway;
  beforeAll(async () => {
    ensureBuilt();
    gateway = await startFakeGateway();
  });
  afterAll(async () => gateway.close());

  it('exits non-zero with a hint when nothing is installed or imported', () => {
    const dataDir = dataDirFromFixture('report');
    const r = cli(dataDir, ['status', '--json']);
    expect(r.status).toBe(1);
    const body = JSON.parse(r.stdout) as { ok: false; error: { type: string; hint: string; detail: { status: StatusData } } };
    expect(body.ok).toBe(false);
    expect(body.error.type).toBe('conflict');
    expect(body.error.hint).toMatch(/everme install|everme import/);
    const whats = body.error.detail.status.problems.map((p) => p.what).join('\n');
    expect(whats).toContain('no everme hooks are installed');
    expect(whats).toContain('nothing has been imported yet');
    expect(body.error.detail.status.sessions).toBe(2);
  });

  it('reports hooks, hook latency and outcomes, the store and warnings once everything is wired', () => {
    const dataDir = dataDirFromFixture('report');
    expect(cli(dataDir, ['install', '--json']).status).toBe(0);
    expect(cli(dataDir, ['import', '--since', '2026-10-01', '--json']).status).toBe(0);
    const hookCommand = /command: "(.*)"/.exec(fs.readFileSync(path.join(dataDir, 'hooks', 'everme-post-tool-use.md'), 'utf8'))![1]!;
    const hook = spawnSync('sh', ['-c', hookCommand.replace(/\\"/g, '"')], {
      env: { PATH: process.env.PATH ?? '', HOME: dataDir, MINIMAX_DATA_DIR: dataDir, EVERME_MINIMAX_SYNC_INTERVAL_MS: '100' },
      input: JSON.stringify({ session_id: 'mvs_4e9a7c1d2b3f40c8a6d5e4f3b2a1c0d9', hook_event_name: 'PostToolUse' }),
      encoding: 'utf8',
    });
    expect(hook.status).toBe(0);
    cli(dataDir, ['hook'], {}, 'garbage');

    const r = cli(dataDir, ['status', '--json']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const status = (JSON.parse(r.stdout) as { ok: true; data: StatusData }).data;
    expect(status.sink).toBe('local');
    expect(status.gateway.configured).toBe(false);
    expect(status.hooks.installed).toEqual([
      { event: 'PreToolUse', file: path.join(dataDir, 'hooks', 'everme-pre-tool-use.md'), runnable: true },
      { event: 'PostToolUse', file: path.join(dataDir, 'hooks', 'everme-post-tool-use.md'), runnable: true },
    ]);
    expect(status.hooks.latencyMs.count).toBe(2);
    expect(status.hooks.latencyMs.p95).toBeGreaterThan(0);
    expect(status.hooks.outcomes.ignored).toBe(1);
    expect((status.hooks.outcomes.claimed ?? 0) + (status.hooks.outcomes.debounced ?? 0)).toBe(1);
    expect(status.mcp.registered).toBe(true);
    expect(status.store).toMatchObject({ conversations: 2, messages: 6 });
    expect(status.store.bytes).toBeGreaterThan(0);
    expect(status.lastImport?.since).toBe('2026-10-01');
    expect(status.warnings).toBe(7);
    expect(status.problems).toEqual([]);

    const text = cli(dataDir, ['status']);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/hook latency: p50 [\d.]+ ms, p95 [\d.]+ ms over 2 runs/);
    expect(text.stdout).toContain('6 messages');
  }, 60_000);

  it('says whether the gateway answers, and never prints the key', async () => {
    const dataDir = dataDirFromFixture('report');
    const env = { EVERME_API_KEY: FAKE_GATEWAY_TOKEN, EVERME_API_BASE: gateway.url };
    // Installed and imported, so the gateway is the only thing left that can fail.
    expect(cli(dataDir, ['install', '--json'], env).status).toBe(0);
    expect(cli(dataDir, ['import', '--since', '2026-10-01', '--sink', 'local', '--json']).status).toBe(0);
    const up = await cliAsync(dataDir, ['status', '--json'], env);
    expect(up.status).toBe(0);
    const upBody = JSON.parse(up.stdout) as { ok: boolean; data: StatusData };
    expect(upBody.ok).toBe(true);
    const s1 = upBody.data;
    expect(s1.gateway.error).toBeUndefined();
    expect(s1.gateway).toMatchObject({ configured: true, reachable: true });
    expect(s1.sink).toBe('everme');
    expect(s1.problems).toEqual([]);

    await gateway.stop();
    try {
      const down = await cliAsync(dataDir, ['status'], env);
      expect(down.status).toBe(1);
      expect(down.stdout).toBe('');
      expect(down.stderr).toContain('does not answer (network)');
      expect(down.stderr).toMatch(/^error: 1 problem\(s\): the EverMe gateway at .* did not answer \(network\)$/m);
      expect(down.stderr).toMatch(/^hint: /m);
      for (const out of [up.stdout, up.stderr, down.stdout, down.stderr]) expect(out).not.toContain(FAKE_GATEWAY_TOKEN);
    } finally {
      await gateway.restart();
    }
  });
});
