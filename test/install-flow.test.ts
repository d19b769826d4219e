import { cpSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './support/cli.js';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { EvermeError } from '../src/core/errors.js';
import { installOutcomeError, runInstall, type InstallOptions } from '../src/install/install-plan.js';
import { HookDocument, PLUGIN_EVENTS } from '../src/install/local-plugin.js';
import { HOOK_EVENTS, hookFilePath, readHookCommand } from '../src/install/markdown-hooks.js';
import { renderInstall, renderUninstall } from '../src/install/render.js';
import { ENV_HEADER } from '../src/install/env-file-writer.js';
import { MCP_SERVER_NAME } from '../src/install/mcp-config.js';
import { runUninstall } from '../src/install/uninstall-plan.js';
import { filesContaining, hashTree, makeFakePackage, tempDir } from './install-helpers.js';

const FIXTURE_MCP = path.join(repoRoot, 'fixtures', 'minimax', 'mcp.json');
const KEY = 'evt_a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6';
const noMcode = { pathEnv: '' };

let source: string;
beforeAll(() => {
  source = tempDir();
  makeFakePackage(source);
});

/** A data dir as MiniMax leaves it: sessions and settings that install must not touch. */
function dataDir(): string {
  const data = tempDir('everme-data-');
  mkdirSync(path.join(data, 'v2', 'sessions', '2026', '09', '14'), { recursive: true });
  writeFileSync(path.join(data, 'v2', 'sessions', '2026', '09', '14', 'note.txt'), 'session stand-in\n');
  writeFileSync(path.join(data, 'settings.json'), '{"theme":"dark"}\n');
  return data;
}

function install(data: string, extra: Partial<InstallOptions> = {}) {
  return runInstall({ dataDir: data, sourceRoot: source, node: '/usr/bin/node', detect: noMcode, now: new Date('2026-10-01T12:00:00Z'), ...extra });
}

describe('everme install', () => {
  it('stages the runtime, writes env, hooks and the MCP entry, and names the next step', async () => {
    const data = dataDir();
    const result = await install(data);
    expect(result.steps.map((s) => [s.step, s.status])).toEqual([
      ['runtime', 'created'],
      ['env', 'created'],
      ['hook', 'created'],
      ['hook', 'created'],
      ['plugin', 'created'],
      ['mcp', 'created'],
    ]);
    const runJs = path.join(data, 'everme', 'runtime', 'bin', 'run.js');
    expect(existsSync(runJs)).toBe(true);
    const pre = readFileSync(path.join(data, 'hooks', 'everme-pre-tool-use.md'), 'utf8');
    expect(pre).toContain('  PreToolUse:\n');
    expect(readHookCommand(pre)).toBe(`'/usr/bin/node' '${runJs}' hook --route=markdown`);
    const plugin = path.join(data, 'plugins', 'everme-memory');
    expect(JSON.parse(readFileSync(path.join(plugin, '.claude-plugin', 'plugin.json'), 'utf8'))).toEqual({
      name: 'everme-memory',
      version: '9.9.9',
      description: expect.stringContaining('everme') as unknown,
    });
    const doc = HookDocument.parse(JSON.parse(readFileSync(path.join(plugin, 'hooks', 'hooks.json'), 'utf8')));
    expect(Object.keys(doc.hooks)).toEqual([...PLUGIN_EVENTS]);
    for (const groups of Object.values(doc.hooks)) {
      expect(groups).toEqual([{ matcher: '*', hooks: [{ type: 'command', command: `'/usr/bin/node' '${runJs}' hook --route=plugin`, timeout: expect.any(Number) as unknown }] }]);
      expect(groups[0]!.hooks[0]!.timeout).toBeGreaterThanOrEqual(1);
      expect(groups[0]!.hooks[0]!.timeout).toBeLessThanOrEqual(5);
    }
    expect(readFileSync(path.join(data, 'hooks', 'everme-post-tool-use.md'), 'utf8')).toContain('  PostToolUse:\n');
    expect((JSON.parse(readFileSync(path.join(data, 'mcp.json'), 'utf8')) as { mcpServers: Record<string, unknown> }).mcpServers[MCP_SERVER_NAME]).toEqual({
      command: '/usr/bin/node',
      args: [runJs, 'mcp'],
      env: { MINIMAX_DATA_DIR: data },
    });
    // No key given: the env file still exists, holding only the header that says where a key goes.
    expect(readFileSync(path.join(data, 'everme.env'), 'utf8')).toMatch(/^# everme configuration.*\n(#.*\n)+$/);
    expect(statSync(path.join(data, 'everme.env')).mode & 0o777).toBe(0o600);
    expect(result.apiKey).toBe('none');
    expect(result.next).toEqual(['everme import --since 2026-09-01']);
    expect((JSON.parse(readFileSync(path.join(data, 'everme', 'install.json'), 'utf8')) as { created: string[] }).created).toEqual([
      'everme',
      'everme.env',
      'hooks',
      'mcp.json',
      'plugins',
      'plugins/everme-memory',
      'plugins/everme-memory/.claude-plugin',
      'plugins/everme-memory/hooks',
    ]);
  });

  it('is idempotent: a second run reports unchanged and leaves every byte of the data dir as it was', async () => {
    const data = dataDir();
    cpSync(FIXTURE_MCP, path.join(data, 'mcp.json'));
    await install(data, { apiKey: KEY, apiBase: 'https://gw.example' });
    const before = hashTree(data);
    const again = await install(data, { apiKey: KEY, apiBase: 'https://gw.example' });
    expect(again.steps.every((s) => s.status === 'unchanged')).toBe(true);
    expect(hashTree(data)).toEqual(before);
  });

  it('--dry-run lists the planned changes and writes nothing', async () => {
    const data = dataDir();
    cpSync(FIXTURE_MCP, path.join(data, 'mcp.json'));
    const before = hashTree(data);
    const planned = await install(data, { apiKey: KEY, dryRun: true });
    expect(planned.dryRun).toBe(true);
    expect(planned.steps.map((s) => s.status)).toEqual(['created', 'created', 'created', 'created', 'created', 'updated']);
    expect(hashTree(data)).toEqual(before);

    await install(data);
    const installed = hashTree(data);
    const replanned = await install(data, { apiKey: KEY, dryRun: true });
    expect(replanned.steps.find((s) => s.step === 'env')?.status).toBe('updated');
    expect(hashTree(data)).toEqual(installed);
  });

  it('keeps the key in everme.env and nowhere else: not in other files, not in the result', async () => {
    const data = dataDir();
    const result = await install(data, { apiKey: KEY });
    expect(filesContaining(data, KEY)).toEqual(['everme.env']);
    expect(JSON.stringify(result)).not.toContain(KEY);
    expect(result.apiKey).toBe('set');
    expect(result.steps.find((s) => s.step === 'env')?.note).toBe('EVERME_API_KEY set (evt_a1b2_REDACTED)');
  });

  it('leaves an invalid mcp.json untouched, finishes the other steps and ends in a conflict', async () => {
    const data = dataDir();
    const broken = '{ "mcpServers": { "mine": { "command": "x" }, } }\n';
    writeFileSync(path.join(data, 'mcp.json'), broken);
    const result = await install(data);
    expect(readFileSync(path.join(data, 'mcp.json'), 'utf8')).toBe(broken);
    expect(existsSync(path.join(data, 'mcp.json.everme-backup'))).toBe(false);
    expect(result.steps.find((s) => s.step === 'mcp')?.status).toBe('skipped');
    expect(existsSync(path.join(data, 'hooks', 'everme-post-tool-use.md'))).toBe(true);
    expect(result.warnings.map((w) => w.code)).toEqual(['mcp_config_invalid']);
    const failure = installOutcomeError(result);
    expect(failure).toBeInstanceOf(EvermeError);
    expect(failure?.type).toBe('conflict');
  });

  it('warns about an enabled official everme plugin (from the runtime state) and leaves it alone', async () => {
    const data = dataDir();
    const stateFile = path.join(data, 'v2', 'sqlite', 'runtime-state.sqlite');
    mkdirSync(path.dirname(stateFile), { recursive: true });
    const db = new Database(stateFile);
    db.exec('CREATE TABLE local_runtime_plugin_official_state (principal_id TEXT, deployment TEXT, state_json TEXT, updated_at_ms INTEGER)');
    db.prepare('INSERT INTO local_runtime_plugin_official_state VALUES (?, ?, ?, ?)').run(
      'acct',
      'prod',
      JSON.stringify({ schemaVersion: 1, installations: [{ name: 'everme', installed: true, enabled: true, cachedPackages: [] }] }),
      1,
    );
    db.close();
    const before = readFileSync(stateFile);
    const result = await install(data);
    expect(result.warnings.map((w) => w.code)).toEqual(['official_plugin_enabled']);
    expect(result.warnings[0]!.message).toMatch(/^everme@official is installed and enabled according to MiniMax Code's runtime state\. .*stored twice/);
    expect(readFileSync(stateFile)).toEqual(before);
    expect(installOutcomeError(result)).toBeUndefined();
  });

  it('keeps an everme.env written by EverMe\'s own installer: its agent token counts as the configured credential', async () => {
    const data = dataDir();
    const everme = '# EverMe plugin for MiniMax Code\nEVERME_API_BASE=https://api.everme.evermind.ai\nEVERME_AGENT_ID=agt_1\nEVERME_AGENT_TOKEN=evt_agent0000000000\n';
    writeFileSync(path.join(data, 'everme.env'), everme, { mode: 0o600 });
    const result = await install(data);
    expect(result.apiKey).toBe('kept');
    expect(readFileSync(path.join(data, 'everme.env'), 'utf8')).toBe(everme);
    expect(result.steps.find((s) => s.step === 'env')?.status).toBe('unchanged');
    const text = renderInstall(result);
    expect(text).toContain('A credential is configured in everme.env');
    expect(text).toContain('Official EverMe plugin: everme@official was not detected');
    expect(text).not.toContain('evt_agent0000000000');
  });

  it('reports a symlink or another plugin at the plugin path and never writes through or into it', async () => {
    for (const kind of ['symlink', 'foreign', 'other-manifest'] as const) {
      const data = dataDir();
      const plugins = path.join(data, 'plugins');
      mkdirSync(plugins);
      const target = tempDir('everme-elsewhere-');
      if (kind === 'symlink') symlinkSync(target, path.join(plugins, 'everme-memory'));
      if (kind === 'foreign') {
        mkdirSync(path.join(plugins, 'everme-memory', 'hooks'), { recursive: true });
        writeFileSync(path.join(plugins, 'everme-memory', 'hooks', 'guard.sh'), '#!/bin/sh\n');
        const guard = { hooks: { PreToolUse: [{ matcher: '*', hooks: [{ type: 'command', command: 'sh "$HOME/guard.sh"' }] }] } };
        writeFileSync(path.join(plugins, 'everme-memory', 'hooks', 'hooks.json'), `${JSON.stringify(guard)}\n`);
      }
      if (kind === 'other-manifest') {
        mkdirSync(path.join(plugins, 'everme-memory', '.claude-plugin'), { recursive: true });
        writeFileSync(path.join(plugins, 'everme-memory', '.claude-plugin', 'plugin.json'), '{"name":"someone-else"}\n');
      }
      const before = hashTree(data);
      const targetBefore = hashTree(target);
      const result = await install(data);
      const step = result.steps.find((s) => s.step === 'plugin');
      expect(step?.status, kind).toBe('skipped');
      expect(result.warnings.map((w) => w.code)).toEqual(['plugin_path_conflict']);
      expect(installOutcomeError(result)).toMatchObject({ type: 'conflict', code: 'plugin_path_conflict' });
      expect(hashTree(target)).toEqual(targetBefore);
      const pluginEntries = [...hashTree(data).entries()].filter(([rel]) => rel.startsWith('plugins'));
      expect(new Map(pluginEntries), kind).toEqual(new Map([...before.entries()].filter(([rel]) => rel.startsWith('plugins'))));
      if (kind === 'symlink') expect(readlinkSync(path.join(plugins, 'everme-memory'))).toBe(target);
      // The rest is installed; uninstall leaves the foreign path as it found it.
      expect(existsSync(path.join(data, 'hooks', 'everme-post-tool-use.md'))).toBe(true);
      const removed = runUninstall({ dataDir: data });
      expect(removed.steps.find((s) => s.step === 'plugin')?.status).toBe('kept');
      expect(hashTree(data)).toEqual(before);
      if (kind === 'symlink') expect(lstatSync(path.join(plugins, 'everme-memory')).isSymbolicLink()).toBe(true);
    }
  });

  it('skips a directory at mcp.json like an invalid file: a warning naming the path, every other step done', async () => {
    const data = dataDir();
    const mcpDir = path.join(data, 'mcp.json');
    mkdirSync(mcpDir);
    const result = await install(data);
    expect(result.steps.find((s) => s.step === 'mcp')).toMatchObject({ status: 'skipped', note: 'it is a directory, not a JSON file' });
    expect(result.warnings).toEqual([expect.objectContaining({ code: 'mcp_config_invalid', path: mcpDir, message: expect.stringContaining(`${mcpDir} was left untouched: it is a directory`) as unknown })]);
    expect(installOutcomeError(result)).toMatchObject({ type: 'conflict', code: 'mcp_config_invalid' });
    expect(existsSync(path.join(data, 'hooks', 'everme-pre-tool-use.md'))).toBe(true);
    expect(existsSync(path.join(data, 'plugins', 'everme-memory', 'hooks', 'hooks.json'))).toBe(true);
    const removed = runUninstall({ dataDir: data });
    // Install never wrote there, so there is nothing of everme's to remove from it: no warning.
    expect(removed.warnings).toEqual([]);
    expect(removed.steps.find((s) => s.step === 'mcp')).toMatchObject({ status: 'kept', path: mcpDir });
    expect(statSync(mcpDir).isDirectory()).toBe(true);
  });

  it('refuses a directory at everme.env before staging anything, naming the path with a hint; uninstall leaves it alone', async () => {
    const data = dataDir();
    const envDir = path.join(data, 'everme.env');
    mkdirSync(envDir);
    const before = hashTree(data);
    const failure = install(data);
    await expect(failure).rejects.toMatchObject({ type: 'io', code: 'env_file_not_a_file', message: `${envDir} is a directory, not a file of KEY=VALUE lines` });
    await expect(failure).rejects.toMatchObject({ hint: expect.stringContaining(`Move ${envDir} away`) as unknown });
    expect(hashTree(data)).toEqual(before);
    const removed = runUninstall({ dataDir: data, purge: true });
    expect(removed.steps.find((s) => s.step === 'env')?.status).toBe('kept');
    expect(hashTree(data)).toEqual(before);
  });

  it('refuses a key with a line break before writing anything', async () => {
    const data = dataDir();
    const before = hashTree(data);
    await expect(install(data, { apiKey: `${KEY}\nEVERME_API_BASE=http://evil` })).rejects.toMatchObject({ type: 'invalid_args' });
    expect(hashTree(data)).toEqual(before);
  });
});

describe('everme uninstall', () => {
  it('restores a data dir without mcp.json or hooks to exactly its state before install', async () => {
    const data = dataDir();
    const before = hashTree(data);
    await install(data);
    const result = runUninstall({ dataDir: data });
    expect(result.steps.find((s) => s.step === 'mcp')?.status).toBe('removed');
    expect(hashTree(data)).toEqual(before);
  });

  it('leaves a directory standing where install wrote a hook file, with what it holds', async () => {
    const data = dataDir();
    await install(data);
    const hookPath = hookFilePath(data, HOOK_EVENTS[0]);
    rmSync(hookPath);
    mkdirSync(hookPath);
    writeFileSync(path.join(hookPath, 'notes.md'), 'mine');
    const result = runUninstall({ dataDir: data });
    expect(result.steps.find((s) => s.path === hookPath)).toMatchObject({ step: 'hook', status: 'kept' });
    expect(readFileSync(path.join(hookPath, 'notes.md'), 'utf8')).toBe('mine');
    expect(existsSync(hookFilePath(data, HOOK_EVENTS[1]))).toBe(false);
  });

  it('restores the user\'s mcp.json byte for byte and keeps their own hooks', async () => {
    const data = dataDir();
    cpSync(FIXTURE_MCP, path.join(data, 'mcp.json'));
    mkdirSync(path.join(data, 'hooks'));
    writeFileSync(path.join(data, 'hooks', 'mine.md'), '---\nname: mine\n---\n');
    const before = hashTree(data);
    await install(data);
    await install(data); // a re-install must not make the backup forget the original
    const result = runUninstall({ dataDir: data });
    expect(result.steps.find((s) => s.step === 'mcp')?.status).toBe('restored');
    expect(hashTree(data)).toEqual(before);
  });

  it('keeps the env file holding a key and the store unless --purge, which removes both', async () => {
    const data = dataDir();
    const before = hashTree(data);
    await install(data, { apiKey: KEY });
    mkdirSync(path.join(data, 'everme', 'store'));
    writeFileSync(path.join(data, 'everme', 'store', 'memory.sqlite'), 'db');
    const kept = runUninstall({ dataDir: data });
    expect(kept.steps.filter((s) => s.status === 'kept').map((s) => s.step)).toEqual(['env', 'store']);
    expect(existsSync(path.join(data, 'everme.env'))).toBe(true);
    expect(existsSync(path.join(data, 'everme', 'runtime'))).toBe(false);
    expect(existsSync(path.join(data, 'everme', 'store', 'memory.sqlite'))).toBe(true);

    runUninstall({ dataDir: data, purge: true });
    expect(hashTree(data)).toEqual(before);
  });

  it('--purge removes the store EVERME_STATE_DIR put elsewhere (named in everme.env), and only what everme keeps there', async () => {
    const data = dataDir();
    const stateDir = tempDir('everme-state-');
    await install(data);
    writeFileSync(path.join(data, 'everme.env'), `${readFileSync(path.join(data, 'everme.env'), 'utf8')}EVERME_STATE_DIR=${stateDir}\n`);
    writeFileSync(path.join(stateDir, 'everme.db'), 'db');
    writeFileSync(path.join(stateDir, 'everme.db-wal'), 'wal');
    mkdirSync(path.join(stateDir, 'hook'));
    writeFileSync(path.join(stateDir, 'hook', 'events.jsonl'), '{}\n');
    // The user's own file in the directory they chose.
    writeFileSync(path.join(stateDir, 'notes.txt'), 'mine');

    const kept = runUninstall({ dataDir: data });
    expect(kept.steps.find((s) => s.path === stateDir)).toMatchObject({ step: 'store', status: 'kept' });
    expect(existsSync(path.join(stateDir, 'everme.db'))).toBe(true);

    const purged = runUninstall({ dataDir: data, purge: true });
    expect(purged.steps.find((s) => s.path === stateDir)).toMatchObject({ step: 'store', status: 'removed' });
    expect(['everme.db', 'everme.db-wal', 'hook'].filter((name) => existsSync(path.join(stateDir, name)))).toEqual([]);
    expect(readFileSync(path.join(stateDir, 'notes.txt'), 'utf8')).toBe('mine');
  });

  /** everme.env exactly as EverMe's own installer writes it: its agent token is not everme's to delete. */
  const EVERME_ENV = '# EverMe agent credentials (written by evercli)\nEVERME_API_BASE=https://api.everme.evermind.ai\nEVERME_AGENT_ID=agt_123\nEVERME_AGENT_TOKEN=evt_abcd1234secret\n';

  it('leaves EverMe\'s own everme.env byte for byte through install, uninstall and uninstall --purge, and says why', async () => {
    const data = dataDir();
    writeFileSync(path.join(data, 'everme.env'), EVERME_ENV, { mode: 0o600 });
    const before = hashTree(data);
    await install(data);
    expect(readFileSync(path.join(data, 'everme.env'), 'utf8')).toBe(EVERME_ENV);
    runUninstall({ dataDir: data });
    expect(hashTree(data)).toEqual(before);

    await install(data);
    const purged = runUninstall({ dataDir: data, purge: true });
    expect(hashTree(data)).toEqual(before);
    expect(purged.steps.find((s) => s.step === 'env')).toMatchObject({ status: 'kept', note: expect.stringContaining('not created by `everme install`') as unknown });
    expect(renderUninstall(purged)).toMatch(/kept\s+env\s+\S+everme\.env\s+\(not created by `everme install`, so never deleted/);
  });

  it('takes out of EverMe\'s everme.env only the key install appended, and only with --purge', async () => {
    const data = dataDir();
    writeFileSync(path.join(data, 'everme.env'), EVERME_ENV, { mode: 0o600 });
    const before = hashTree(data);
    await install(data, { apiKey: KEY });
    expect(readFileSync(path.join(data, 'everme.env'), 'utf8')).toBe(`${EVERME_ENV}EVERME_API_KEY=${KEY}\n`);
    const kept = runUninstall({ dataDir: data });
    expect(kept.steps.find((s) => s.step === 'env')?.note).toContain('EVERME_API_KEY (set by install) kept');
    expect(readFileSync(path.join(data, 'everme.env'), 'utf8')).toBe(`${EVERME_ENV}EVERME_API_KEY=${KEY}\n`);

    await install(data, { apiKey: KEY });
    const purged = runUninstall({ dataDir: data, purge: true });
    expect(purged.steps.find((s) => s.step === 'env')).toMatchObject({ status: 'restored', note: expect.stringContaining('removed only what install added (EVERME_API_KEY)') as unknown });
    expect(hashTree(data)).toEqual(before);
  });

  it('takes the header an earlier everme prepended back out of a file it did not create', async () => {
    const data = dataDir();
    writeFileSync(path.join(data, 'everme.env'), EVERME_ENV, { mode: 0o600 });
    const before = hashTree(data);
    await install(data);
    // What earlier versions did to any existing file.
    writeFileSync(path.join(data, 'everme.env'), `${ENV_HEADER}\n${EVERME_ENV}`, { mode: 0o600 });
    const result = runUninstall({ dataDir: data });
    expect(result.steps.find((s) => s.step === 'env')?.status).toBe('restored');
    expect(hashTree(data)).toEqual(before);
  });

  it('removes the plugin and keeps a plugins directory that holds the user\'s other plugins', async () => {
    const data = dataDir();
    mkdirSync(path.join(data, 'plugins', 'mine', '.claude-plugin'), { recursive: true });
    writeFileSync(path.join(data, 'plugins', 'mine', '.claude-plugin', 'plugin.json'), '{"name":"mine"}\n');
    const before = hashTree(data);
    await install(data);
    expect(existsSync(path.join(data, 'plugins', 'everme-memory', 'hooks', 'hooks.json'))).toBe(true);
    const planned = runUninstall({ dataDir: data, dryRun: true });
    expect(planned.steps.find((s) => s.step === 'plugin')?.status).toBe('removed');
    expect(existsSync(path.join(data, 'plugins', 'everme-memory', 'hooks', 'hooks.json'))).toBe(true);
    const result = runUninstall({ dataDir: data });
    expect(result.steps.find((s) => s.step === 'plugin')?.status).toBe('removed');
    expect(hashTree(data)).toEqual(before);
  });

  it('--dry-run removes nothing', async () => {
    const data = dataDir();
    await install(data);
    const installed = hashTree(data);
    const planned = runUninstall({ dataDir: data, dryRun: true });
    expect(planned.steps.filter((s) => s.status === 'removed').length).toBeGreaterThan(0);
    expect(hashTree(data)).toEqual(installed);
  });
});
