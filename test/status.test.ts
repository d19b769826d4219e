import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEntry, ensureBuilt, repoRoot } from './support/cli.js';
import { spawnAsync } from './support/cli-process.js';
import { FAKE_GATEWAY_TOKEN, startFakeGateway, type FakeGateway } from './support/fake-gateway.js';
import { hermeticEnv } from './support/hermetic-env.js';
import { renderHookFile } from '../src/install/markdown-hooks.js';
import { tempDir } from './support/temp.js';

interface StatusData {
  sessions: number;
  sink: string;
  gateway: { configured: boolean; reachable?: boolean; error?: { type: string; code?: string; message: string } };
  lastImport?: { since?: string };
  hooks: {
    official: { status: string; source: string; message: string };
    plugin: { path: string; state: string; runnable: boolean; enabled: string; enabledUnverified?: string; events: string[] };
    markdown: { installed: Array<{ event: string; file: string; runnable: boolean }>; conflicts: Array<{ event: string; file: string; code: string; reason: string }> };
    arrivals: Array<{ route: string; event: string; count: number; lastAt: string }>;
    warnings: Array<{ code: string; message: string; missing?: string[] }>;
    latencyMs: { count: number; p50?: number; p95?: number };
    outcomes: Record<string, number>;
  };
  mcp: { registered: boolean };
  store: { messages: number; conversations: number; bytes: number };
  warnings: number;
  problems: Array<{ what: string; hint: string }>;
}

function dataDirFromFixture(name: string): string {
  const dir = tempDir('everme-status-');
  fs.cpSync(path.join(repoRoot, 'fixtures', name), dir, { recursive: true });
  return dir;
}

function cli(dataDir: string, args: string[], env: Record<string, string> = {}, input?: string) {
  return spawnAsync(process.execPath, [cliEntry, ...args], { env: hermeticEnv(dataDir, { ...env, MINIMAX_DATA_DIR: dataDir }), input });
}

/** Async, so the in-process fake gateway can answer while the CLI runs. */
function cliAsync(dataDir: string, args: string[], env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cliEntry, ...args], {
      env: hermeticEnv(dataDir, { ...env, MINIMAX_DATA_DIR: dataDir }),
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

  it('exits non-zero with a hint when nothing is installed or imported', async () => {
    const dataDir = dataDirFromFixture('report');
    const r = await cli(dataDir, ['status', '--json']);
    expect(r.status).toBe(1);
    const body = JSON.parse(r.stdout) as { ok: false; error: { type: string; hint: string; detail: { status: StatusData } } };
    expect(body.ok).toBe(false);
    expect(body.error.type).toBe('conflict');
    expect(body.error.hint).toMatch(/everme install|everme import/);
    const whats = body.error.detail.status.problems.map((p) => p.what).join('\n');
    expect(whats).toContain('no everme hooks are installed');
    expect(body.error.detail.status.hooks.plugin.state).toBe('missing');
    expect(whats).toContain('nothing has been imported yet');
    expect(body.error.detail.status.sessions).toBe(2);
  });

  /** The command the installed plugin registers for an event, run the way the host runs it. */
  function pluginCommand(dataDir: string, event: string): string {
    const doc = JSON.parse(fs.readFileSync(path.join(dataDir, 'plugins', 'everme-memory', 'hooks', 'hooks.json'), 'utf8')) as {
      hooks: Record<string, Array<{ hooks: Array<{ command: string }> }>>;
    };
    return doc.hooks[event]![0]!.hooks[0]!.command;
  }

  function payload(event: string, extra: Record<string, unknown> = {}): string {
    const base = JSON.parse(fs.readFileSync(path.join(repoRoot, 'fixtures', 'minimax', 'hooks', `${event.toLowerCase()}-stdin.native.json`), 'utf8')) as Record<string, unknown>;
    return JSON.stringify({ ...base, session_id: 'mvs_4e9a7c1d2b3f40c8a6d5e4f3b2a1c0d9', ...extra });
  }

  async function statusJson(dataDir: string, env: Record<string, string> = {}): Promise<{ code: number | null; data: StatusData; stderr: string }> {
    const r = await cli(dataDir, ['status', '--json'], env);
    const body = JSON.parse(r.stdout) as { ok: boolean; data?: StatusData; error?: { detail: { status: StatusData } } };
    return { code: r.status, data: body.data ?? body.error!.detail.status, stderr: r.stderr };
  }

  it('warns, naming every event never received, when hooks are installed but MiniMax Code has not run one', async () => {
    const dataDir = dataDirFromFixture('report');
    expect((await cli(dataDir, ['install', '--json'])).status).toBe(0);
    expect((await cli(dataDir, ['import', '--since', '2026-10-01', '--json'])).status).toBe(0);
    // A hand-run hook is no sign of the host: it names no event and no route.
    await cli(dataDir, ['hook'], {}, 'garbage');
    const { code, data } = await statusJson(dataDir);
    expect(code).toBe(0);
    expect(data.hooks.arrivals).toEqual([]);
    expect(data.hooks.warnings.map((w) => w.code)).toEqual(['no_hook_events']);
    expect(data.hooks.warnings[0]!.missing).toEqual(['SessionStart', 'PreToolUse', 'PostToolUse', 'Stop', 'PreCompact', 'SessionEnd']);
    const text = await cli(dataDir, ['status']);
    expect(text.status).toBe(0);
    expect(text.stdout).toContain('warning: hooks are installed, but MiniMax Code has not run one yet (never received: SessionStart, PreToolUse, PostToolUse, Stop, PreCompact, SessionEnd)');
    expect(text.stdout).toContain('Start a MiniMax Code session');
    expect(text.stdout).toMatch(/ {2}plugin: none received\n {2}markdown: none received/);
  }, 60_000);

  it('reports each route, every event that arrived through it with its last time, latency, outcomes, the store and warnings', async () => {
    const dataDir = dataDirFromFixture('report');
    expect((await cli(dataDir, ['install', '--json'])).status).toBe(0);
    expect((await cli(dataDir, ['import', '--since', '2026-10-01', '--json'])).status).toBe(0);
    const hostEnv = hermeticEnv(dataDir, { EVERME_MINIMAX_SYNC_INTERVAL_MS: '100' });
    const markdownCommand = /command: "(.*)"/.exec(fs.readFileSync(path.join(dataDir, 'hooks', 'everme-post-tool-use.md'), 'utf8'))![1]!.replace(/\\"/g, '"');
    const before = Date.now();
    const runs = [
      await spawnAsync('sh', ['-c', markdownCommand], { env: hostEnv, input: payload('PostToolUse') }),
      await spawnAsync('sh', ['-c', pluginCommand(dataDir, 'SessionStart')], { env: hostEnv, input: payload('SessionStart', { cwd: '/nowhere' }) }),
      await spawnAsync('sh', ['-c', pluginCommand(dataDir, 'Stop')], { env: hostEnv, input: payload('Stop') }),
      await spawnAsync('sh', ['-c', pluginCommand(dataDir, 'Stop')], { env: hostEnv, input: payload('Stop') }),
    ];
    for (const run of runs) {
      expect(run.status).toBe(0);
      expect(run.stdout).toBe('');
    }
    await cli(dataDir, ['hook'], {}, 'garbage');

    const { code, data: status, stderr } = await statusJson(dataDir);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(status.sink).toBe('local');
    expect(status.gateway.configured).toBe(false);
    expect(status.hooks.plugin).toMatchObject({
      path: path.join(dataDir, 'plugins', 'everme-memory'),
      state: 'installed',
      runnable: true,
      enabled: 'cannot_verify',
      events: ['SessionStart', 'PreToolUse', 'PostToolUse', 'Stop', 'PreCompact', 'SessionEnd'],
    });
    expect(status.hooks.markdown.installed).toEqual([
      { event: 'PreToolUse', file: path.join(dataDir, 'hooks', 'everme-pre-tool-use.md'), runnable: true },
      { event: 'PostToolUse', file: path.join(dataDir, 'hooks', 'everme-post-tool-use.md'), runnable: true },
    ]);
    expect(status.hooks.arrivals.map(({ route, event, count }) => ({ route, event, count }))).toEqual([
      { route: 'markdown', event: 'PostToolUse', count: 1 },
      { route: 'plugin', event: 'SessionStart', count: 1 },
      { route: 'plugin', event: 'Stop', count: 2 },
    ]);
    for (const a of status.hooks.arrivals) {
      expect(Date.parse(a.lastAt)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(a.lastAt)).toBeLessThanOrEqual(Date.now());
    }
    expect(status.hooks.warnings).toEqual([]);
    expect(status.hooks.latencyMs.count).toBe(5);
    expect(status.hooks.latencyMs.p95).toBeGreaterThan(0);
    expect(status.hooks.outcomes.ignored).toBe(2);
    expect((status.hooks.outcomes.claimed ?? 0) + (status.hooks.outcomes.debounced ?? 0)).toBe(3);
    expect(status.mcp.registered).toBe(true);
    expect(status.store).toMatchObject({ conversations: 2, messages: 6 });
    expect(status.store.bytes).toBeGreaterThan(0);
    expect(status.lastImport?.since).toBe('2026-10-01');
    expect(status.warnings).toBe(7);
    expect(status.problems).toEqual([]);

    const text = await cli(dataDir, ['status']);
    expect(text.status).toBe(0);
    expect(text.stdout).toContain(`plugin hooks: ${path.join(dataDir, 'plugins', 'everme-memory')}, enabled state cannot be verified`);
    expect(text.stdout).toContain('markdown hooks: PreToolUse, PostToolUse');
    expect(text.stdout).toMatch(/ {2}plugin: SessionStart ×1 \(last \d{4}-\d{2}-\d{2}T[\d:.]+Z\), Stop ×2 \(last [^)]+\)/);
    expect(text.stdout).toMatch(/ {2}markdown: PostToolUse ×1 \(last [^)]+\)/);
    expect(text.stdout).toMatch(/hook latency: p50 [\d.]+ ms, p95 [\d.]+ ms over 5 runs/);
    expect(text.stdout).toContain('6 messages');
    expect(text.stdout).not.toContain('warning:');
  }, 60_000);

  it("reports hooks whose paths hold a quote (a home like /home/o'brien) as runnable, as they are, not as a missing runtime", async () => {
    const dataDir = path.join(tempDir('everme-status-'), "o'brien's data");
    fs.cpSync(path.join(repoRoot, 'fixtures', 'report'), dataDir, { recursive: true });
    expect((await cli(dataDir, ['install', '--json'])).status).toBe(0);
    // The host runs the command through the shell: it does run (for a session it cannot find, so no worker outlives the test).
    const run = await spawnAsync('sh', ['-c', pluginCommand(dataDir, 'Stop')], { env: hermeticEnv(dataDir), input: payload('Stop', { session_id: `mvs_${'0'.repeat(32)}` }) });
    expect(run).toMatchObject({ status: 0, stdout: '', stderr: '' });
    const { data } = await statusJson(dataDir);
    expect(data.hooks.arrivals.map(({ route, event }) => `${route} ${event}`)).toEqual(['plugin Stop']);
    expect(data.hooks.plugin).toMatchObject({ state: 'installed', runnable: true });
    expect(data.hooks.markdown.installed.map((h) => h.runnable)).toEqual([true, true]);
    expect(data.problems.map((p) => p.what).filter((what) => what.includes('runtime that is missing'))).toEqual([]);
  });

  it("says whether MiniMax's own everme@official is enabled beside ours, as install does, and warns that it stores everything twice", async () => {
    const dataDir = dataDirFromFixture('report');
    expect((await cli(dataDir, ['install', '--json'])).status).toBe(0);
    expect((await cli(dataDir, ['import', '--since', '2026-10-01', '--json'])).status).toBe(0);
    const plain = await statusJson(dataDir);
    expect(plain.data.hooks.official).toMatchObject({ status: 'not_detected', source: 'none' });
    // Enabled after install (the state MiniMax Code's runtime keeps per account, as §7 describes it).
    fs.mkdirSync(path.join(dataDir, 'v2', 'sqlite'), { recursive: true });
    const db = new Database(path.join(dataDir, 'v2', 'sqlite', 'runtime-state.sqlite'));
    db.exec('CREATE TABLE local_runtime_plugin_official_state (principal_id TEXT, deployment TEXT, state_json TEXT, updated_at_ms INTEGER)');
    db.prepare('INSERT INTO local_runtime_plugin_official_state VALUES (?, ?, ?, ?)').run('acct', 'prod', JSON.stringify({ schemaVersion: 1, installations: [{ name: 'everme', installed: true, enabled: true }] }), 1);
    db.close();
    const { data } = await statusJson(dataDir);
    expect(data.hooks.official).toMatchObject({ status: 'enabled', source: 'runtime-state' });
    expect(data.hooks.warnings.map((w) => w.code)).toContain('official_plugin_enabled');
    const text = await cli(dataDir, ['status']);
    expect(text.status).toBe(0);
    expect(text.stdout).toContain("official plugin: everme@official is installed and enabled according to MiniMax Code's runtime state\n");
    expect(text.stdout).toContain('warning: everme@official is installed and enabled');
    expect(text.stdout).toContain('every conversation is stored twice');
  });

  it('reports a directory at mcp.json or everme.env as a problem naming the path, and still reports the rest', async () => {
    const dataDir = dataDirFromFixture('report');
    fs.mkdirSync(path.join(dataDir, 'mcp.json'));
    fs.mkdirSync(path.join(dataDir, 'everme.env'));
    const { code, data } = await statusJson(dataDir);
    expect(code).toBe(1);
    const whats = data.problems.map((p) => p.what);
    expect(whats).toContain(`${path.join(dataDir, 'mcp.json')} cannot be used: it is a directory, not a JSON file`);
    expect(whats).toContain(`${path.join(dataDir, 'everme.env')} is a directory, not a file of KEY=VALUE lines: its settings are not read`);
    expect(data.sessions).toBe(2);
  });

  it("names a directory or another tool's hook at a markdown hook path as the problem it is, never as everme's broken hook", async () => {
    const dataDir = dataDirFromFixture('report');
    const pre = path.join(dataDir, 'hooks', 'everme-pre-tool-use.md');
    const post = path.join(dataDir, 'hooks', 'everme-post-tool-use.md');
    fs.mkdirSync(pre, { recursive: true });
    // Another tool's hook in everme's format: its command runs nothing of everme's, so install never overwrites it.
    fs.writeFileSync(post, renderHookFile('PostToolUse', "'/opt/other/node' '/opt/other/hook.js' capture"));
    const { code, data, stderr } = await statusJson(dataDir);
    expect(code).toBe(1);
    expect(stderr).not.toContain('EISDIR');
    expect(data.hooks.markdown).toEqual({
      installed: [],
      conflicts: [
        { event: 'PreToolUse', file: pre, code: 'hook_file_unusable', reason: 'it is a directory, not a hook file' },
        { event: 'PostToolUse', file: post, code: 'hook_file_conflict', reason: "it holds a hook everme did not write (it runs '/opt/other/node' '/opt/other/hook.js' capture)" },
      ],
    });
    const problems = data.problems.filter((p) => p.what.includes(path.join(dataDir, 'hooks')));
    expect(problems).toEqual([
      { what: `${pre} cannot be everme's PreToolUse hook: it is a directory, not a hook file`, hint: `Move ${pre} away (everme never overwrites or removes it), then run \`everme install\` again.` },
      {
        what: `${post} is not everme's PostToolUse hook (hook_file_conflict): it holds a hook everme did not write (it runs '/opt/other/node' '/opt/other/hook.js' capture)`,
        hint: `Move ${post} away (everme never overwrites or removes it), then run \`everme install\` again.`,
      },
    ]);
    const text = await cli(dataDir, ['status']);
    expect(text.status).toBe(1);
    expect(text.stderr).toContain(`markdown hooks: PreToolUse not installed (${pre}: it is a directory, not a hook file), PostToolUse not installed (${post}: it holds a hook everme did not write`);
    expect(text.stderr).not.toMatch(/EISDIR|points at a runtime that is missing/);
  });

  it('asks `mcode plugin list --json` whether the plugin is enabled, and warns when it is disabled', async () => {
    const dataDir = dataDirFromFixture('report');
    expect((await cli(dataDir, ['install', '--json'])).status).toBe(0);
    const bin = tempDir('everme-mcode-');
    const mcode = path.join(bin, 'mcode');
    const list = (enabled: boolean) =>
      fs.writeFileSync(mcode, `#!/bin/sh\necho '{"plugins":[{"id":"everme@official","enabled":false},{"id":"everme-memory@local","name":"everme-memory","enabled":${enabled}}]}'\n`, { mode: 0o755 });
    const env = { PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` };
    list(false);
    const disabled = (await statusJson(dataDir, env)).data;
    expect(disabled.hooks.plugin.enabled).toBe('disabled');
    expect(disabled.hooks.warnings.map((w) => w.code)).toEqual(['plugin_disabled', 'no_hook_events']);
    list(true);
    const enabled = (await statusJson(dataDir, env)).data;
    expect(enabled.hooks.plugin.enabled).toBe('enabled');
    expect(enabled.hooks.warnings.map((w) => w.code)).toEqual(['no_hook_events']);
  }, 60_000);

  it('says why the enabled state cannot be verified when `mcode` is on PATH but times out or fails, not that it is missing', async () => {
    const dataDir = dataDirFromFixture('report');
    expect((await cli(dataDir, ['install', '--json'])).status).toBe(0);
    const bin = tempDir('everme-mcode-');
    const mcode = path.join(bin, 'mcode');
    const env = { PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` };
    const plugin = path.join(dataDir, 'plugins', 'everme-memory');

    fs.writeFileSync(mcode, '#!/bin/sh\nexec sleep 30\n', { mode: 0o755 });
    const hanging = await cli(dataDir, ['status'], env);
    // Nothing imported yet, so the report comes with the failure on stderr.
    const report = `${hanging.stdout}${hanging.stderr}`;
    expect(report).toContain(`plugin hooks: ${plugin}, enabled state cannot be verified (\`${mcode} plugin list --json\` timed out after 3 s)`);
    expect(report).not.toContain('not on PATH');

    fs.writeFileSync(mcode, '#!/bin/sh\necho "mcode: not logged in" >&2\nexit 2\n', { mode: 0o755 });
    const failing = await statusJson(dataDir, env);
    expect(failing.data.hooks.plugin).toMatchObject({ enabled: 'cannot_verify', enabledUnverified: `\`${mcode} plugin list --json\` exited with status 2` });
  }, 60_000);

  it('reports each sink: with a key the gateway and the embedded store, each with its own counts and last run; EVERME_LOCAL_STORE=0 the gateway alone', async () => {
    const dataDir = dataDirFromFixture('report');
    const env = { EVERME_API_KEY: FAKE_GATEWAY_TOKEN, EVERME_API_BASE: gateway.url };
    expect((await cli(dataDir, ['install', '--json'], env)).status).toBe(0);
    // The run summary names each sink and what it took.
    const imported = await cliAsync(dataDir, ['import', '--since', '2026-10-01'], env);
    expect(imported.status, imported.stderr).toBe(0);
    expect(imported.stdout).toMatch(/^import → everme \+ local since 2026-10-01$/m);
    expect(imported.stdout).toMatch(/^  everme: 2 delivered; \d+ messages delivered in \d+ requests$/m);
    expect(imported.stdout).toMatch(/^  local: 2 delivered; \d+ messages delivered in \d+ requests$/m);

    const both = JSON.parse((await cliAsync(dataDir, ['status', '--json'], env)).stdout) as { data: StatusData & { sinks: Array<Record<string, unknown>> } };
    const messages = both.data.store.messages;
    expect(messages).toBeGreaterThan(0);
    expect(both.data.sinks).toEqual([
      { sink: 'everme', sessions: 2, conversations: 2, messages, lastRun: expect.objectContaining({ kind: 'import', delivered: 2, failed: 0, messages }) as unknown },
      { sink: 'local', sessions: 2, conversations: 2, messages, lastRun: expect.objectContaining({ kind: 'import', delivered: 2, failed: 0, messages }) as unknown },
    ]);
    const text = (await cliAsync(dataDir, ['status'], env)).stdout;
    expect(text).toMatch(new RegExp(`^  everme: +2 sessions, 2 conversations, ${messages} messages; last import `, 'm'));
    expect(text).toMatch(new RegExp(`^  local: +2 sessions, 2 conversations, ${messages} messages; last import `, 'm'));

    const gatewayOnly = JSON.parse((await cliAsync(dataDir, ['status', '--json'], { ...env, EVERME_LOCAL_STORE: '0' })).stdout) as { data: { sinks: Array<{ sink: string }> } };
    expect(gatewayOnly.data.sinks.map((s) => s.sink)).toEqual(['everme']);
    // Five CLI processes: a budget for a loaded two-core machine.
  }, 120_000);

  it('says whether the gateway answers, and never prints the key', async () => {
    const dataDir = dataDirFromFixture('report');
    const env = { EVERME_API_KEY: FAKE_GATEWAY_TOKEN, EVERME_API_BASE: gateway.url };
    // Installed and imported, so the gateway is the only thing left that can fail.
    expect((await cli(dataDir, ['install', '--json'], env)).status).toBe(0);
    expect((await cli(dataDir, ['import', '--since', '2026-10-01', '--sink', 'local', '--json'])).status).toBe(0);
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
  it('says a refused key and a refused plain-http base in their own words, with their own fix, never as the network', async () => {
    const dataDir = dataDirFromFixture('report');
    const env = { EVERME_API_KEY: FAKE_GATEWAY_TOKEN, EVERME_API_BASE: gateway.url };
    expect((await cli(dataDir, ['import', '--since', '2026-10-01', '--sink', 'local', '--json'])).status).toBe(0);
    const gatewayOf = async (extra: Record<string, string>) => {
      const r = await cliAsync(dataDir, ['status'], { ...env, ...extra });
      const json = JSON.parse((await cliAsync(dataDir, ['status', '--json'], { ...env, ...extra })).stdout) as { error: { detail: { status: StatusData } } };
      const status = json.error.detail.status;
      return { text: r.stderr, gateway: status.gateway, problem: status.problems.find((p) => p.what.includes('EverMe gateway'))! };
    };

    gateway.failNext({ kind: 'http', status: 401 }, { kind: 'http', status: 401 });
    const refusedKey = await gatewayOf({});
    expect(refusedKey.gateway.error).toMatchObject({ type: 'auth' });
    expect(refusedKey.text).toMatch(/^sink: +everme → \S+ refused the key \(auth\)$/m);
    expect(refusedKey.problem.what).toMatch(/^the EverMe gateway at \S+ refused the key \(auth\): /);
    expect(refusedKey.problem.hint).toContain('everme install --api-key');

    // 0.0.0.0 is no loopback address: the client refuses to send the key there in clear text.
    const plainHttp = await gatewayOf({ EVERME_API_BASE: `http://0.0.0.0:${gateway.port}` });
    expect(plainHttp.gateway.error).toMatchObject({ type: 'invalid_args', code: 'insecure_api_base' });
    expect(plainHttp.text).toMatch(/^sink: +everme → http:\/\/0\.0\.0\.0:\d+ is not used \(insecure_api_base\): EVERME_API_BASE is plain http:\/\/ to 0\.0\.0\.0/m);
    expect(plainHttp.problem.what).toContain('is plain http:// to 0.0.0.0: the API key would be sent in clear text');
    expect(plainHttp.problem.hint).toContain('EVERME_ALLOW_INSECURE_HTTP=1');
    for (const said of [refusedKey, plainHttp]) {
      expect(said.text).not.toMatch(/did not answer|does not answer/);
      expect(said.problem.hint).not.toMatch(/network/i);
    }
  });

  it('reports a gateway that rate limits the probe as rate limiting, at once, not as a network failure', async () => {
    const dataDir = dataDirFromFixture('report');
    const env = { EVERME_API_KEY: FAKE_GATEWAY_TOKEN, EVERME_API_BASE: gateway.url };
    expect((await cli(dataDir, ['install', '--json'], env)).status).toBe(0);
    expect((await cli(dataDir, ['import', '--since', '2026-10-01', '--sink', 'local', '--json'])).status).toBe(0);
    // Retry-After longer than the probe's 5 s deadline: waiting it out could only end in `cancelled`.
    gateway.failNext({ kind: 'rate_limit', retryAfter: '10', path: '/mem/context' });
    const probes = gateway.requestsTo('/mem/context').length;
    const started = Date.now();
    const limited = await cliAsync(dataDir, ['status', '--json'], env);
    expect(Date.now() - started).toBeLessThan(5000);
    const body = JSON.parse(limited.stdout) as { ok: boolean; error: { detail: { status: StatusData } } };
    expect(body.ok).toBe(false);
    const status = body.error.detail.status;
    expect(status.gateway).toMatchObject({ configured: true, reachable: false, error: { type: 'rate_limit' } });
    expect(status.problems).toEqual([expect.objectContaining({ what: expect.stringMatching(/ is rate limiting requests \(rate_limit\)$/) as unknown })]);
    expect(status.problems[0]!.hint).not.toMatch(/network/i);
    expect(gateway.requestsTo('/mem/context')).toHaveLength(probes + 1);
  });
});
