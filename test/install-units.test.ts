import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './support/cli.js';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { EvermeError } from '../src/core/errors.js';
import { parseEnvText } from '../src/config/env-file.js';
import { ENV_HEADER_MARKER, planEnvFile, validateEnvValue, writeEnvFile } from '../src/install/env-file-writer.js';
import { hookCommand, readHookCommand, renderHookFile, shellQuote } from '../src/install/markdown-hooks.js';
import { MCP_SERVER_NAME, mcpBackupPath, removeMcpServer, upsertMcpServer } from '../src/install/mcp-config.js';
import { detectOfficialPlugin } from '../src/install/official-plugin.js';
import { productionClosure, runtimeFiles, stageRuntime } from '../src/install/staging.js';
import { makeFakePackage, tempDir } from './install-helpers.js';

/** An mcp.json as these tests read it back: its servers by name, and whatever else the user keeps. */
type McpDoc = { mcpServers: Record<string, Record<string, unknown>>; [key: string]: unknown };
function readMcp(file: string): McpDoc {
  return JSON.parse(readFileSync(file, 'utf8')) as McpDoc;
}

const FIXTURE_MCP = path.join(repoRoot, 'fixtures', 'minimax', 'mcp.json');
const entry = { command: '/usr/bin/node', args: ['/data/everme/runtime/bin/run.js', 'mcp'], env: { MINIMAX_DATA_DIR: '/data' } };

describe('production closure', () => {
  it('takes dependencies, installed optional and peer dependencies, nested versions; never devDependencies', () => {
    const root = tempDir();
    makeFakePackage(root);
    const dests = productionClosure(root).map((p) => p.dest);
    expect(dests).toEqual(['', 'node_modules/@scope/native', 'node_modules/alpha', 'node_modules/alpha/node_modules/gamma', 'node_modules/beta', 'node_modules/gamma']);
  });

  it('finds packages hoisted above the package root, as npx and global installs lay them out', () => {
    const base = tempDir();
    const flat = path.join(base, 'flat');
    makeFakePackage(flat);
    const cacheModules = path.join(base, '_npx', 'node_modules');
    mkdirSync(path.join(cacheModules, '@everme'), { recursive: true });
    renameSync(path.join(flat, 'node_modules'), cacheModules + '-tmp');
    for (const name of readdirSync(cacheModules + '-tmp')) renameSync(path.join(cacheModules + '-tmp', name), path.join(cacheModules, name));
    const root = path.join(cacheModules, '@everme', 'minimaxcode');
    renameSync(flat, root);
    const closure = productionClosure(root);
    expect(closure.map((p) => p.dest)).toEqual(['', 'node_modules/@scope/native', 'node_modules/alpha', 'node_modules/alpha/node_modules/gamma', 'node_modules/beta', 'node_modules/gamma']);
    expect(closure.find((p) => p.dest === 'node_modules/beta')?.sourceDir).toBe(path.join(cacheModules, 'beta'));
  });

  it('refuses a source whose regular dependency is not installed', () => {
    const root = tempDir();
    makeFakePackage(root);
    const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    manifest.dependencies.vanished = '1';
    writeFileSync(path.join(root, 'package.json'), JSON.stringify(manifest));
    expect(() => productionClosure(root)).toThrow(/vanished/);
  });

  it('copies the built package and dependency files, not sources, typings, maps, .bin links or native build leftovers', () => {
    const root = tempDir();
    makeFakePackage(root);
    const files = [...runtimeFiles(root, productionClosure(root)).keys()];
    expect(files).toContain('bin/run.js');
    expect(files).toContain('dist/src/main.js');
    expect(files).toContain('oclif.manifest.json');
    expect(files).toContain('node_modules/@scope/native/build/Release/addon.node');
    expect(files).toContain('node_modules/alpha/node_modules/gamma/package.json');
    expect(files).toContain('node_modules/alpha/index.js');
    expect(files.filter((f) => /^src\/|tsconfig|devonly|\.bin|obj\.target|Makefile|\/deps\/|\.d\.ts$|\.map$/.test(f))).toEqual([]);
  });
});

describe('stageRuntime', () => {
  it('stages once, then reports unchanged and leaves the bytes alone; a new node path restages', () => {
    const root = tempDir();
    makeFakePackage(root);
    const data = tempDir();
    const runtime = path.join(data, 'everme', 'runtime');
    const first = stageRuntime({ sourceRoot: root, runtimeDir: runtime, node: '/usr/bin/node', dataDir: data, dryRun: false });
    expect(first.status).toBe('created');
    expect(statSync(path.join(runtime, 'bin', 'run.js')).mode & 0o777).toBe(0o755);
    expect(JSON.parse(readFileSync(path.join(runtime, 'runtime.json'), 'utf8'))).toEqual({ version: '9.9.9', node: '/usr/bin/node', dataDir: data });
    const inode = statSync(path.join(runtime, 'package.json')).ino;
    expect(stageRuntime({ sourceRoot: root, runtimeDir: runtime, node: '/usr/bin/node', dataDir: data, dryRun: false }).status).toBe('unchanged');
    expect(statSync(path.join(runtime, 'package.json')).ino).toBe(inode);
    expect(stageRuntime({ sourceRoot: root, runtimeDir: runtime, node: '/opt/node/bin/node', dataDir: data, dryRun: true }).status).toBe('updated');
    expect((JSON.parse(readFileSync(path.join(runtime, 'runtime.json'), 'utf8')) as { node: string }).node).toBe('/usr/bin/node');
    expect(stageRuntime({ sourceRoot: root, runtimeDir: runtime, node: '/opt/node/bin/node', dataDir: data, dryRun: false }).status).toBe('updated');
    expect((JSON.parse(readFileSync(path.join(runtime, 'runtime.json'), 'utf8')) as { node: string }).node).toBe('/opt/node/bin/node');
    expect(readdirSync(path.join(data, 'everme'))).toEqual(['runtime']);
  });

  it('restages over a runtime someone damaged', () => {
    const root = tempDir();
    makeFakePackage(root);
    const data = tempDir();
    const runtime = path.join(data, 'everme', 'runtime');
    stageRuntime({ sourceRoot: root, runtimeDir: runtime, node: '/usr/bin/node', dataDir: data, dryRun: false });
    writeFileSync(path.join(runtime, 'dist', 'src', 'main.js'), 'broken');
    expect(stageRuntime({ sourceRoot: root, runtimeDir: runtime, node: '/usr/bin/node', dataDir: data, dryRun: false }).status).toBe('updated');
    expect(readFileSync(path.join(runtime, 'dist', 'src', 'main.js'), 'utf8')).toBe('export {};\n');
  });
});

describe('everme.env', () => {
  let savedUmask: number | undefined;
  afterEach(() => {
    if (savedUmask !== undefined) process.umask(savedUmask);
    savedUmask = undefined;
  });

  it('keeps the user\'s keys and comments, updates keys where they stand and appends new ones, adding no header of its own', () => {
    const existing = '# my notes\nEVERME_STATE_DIR=/srv/everme\nEVERME_API_BASE=https://old.example\n\n# trailing comment\n';
    const next = planEnvFile(existing, { EVERME_API_KEY: 'evt_abcd1234', EVERME_API_BASE: 'https://new.example' }).text;
    expect(next).toBe('# my notes\nEVERME_STATE_DIR=/srv/everme\nEVERME_API_BASE=https://new.example\n\n# trailing comment\nEVERME_API_KEY=evt_abcd1234\n');
    expect(Object.fromEntries(parseEnvText(next))).toEqual({
      EVERME_STATE_DIR: '/srv/everme',
      EVERME_API_BASE: 'https://new.example',
      EVERME_API_KEY: 'evt_abcd1234',
    });
    expect(planEnvFile(next, { EVERME_API_KEY: 'evt_abcd1234' }).text).toBe(next);
  });

  it('starts a file it creates with the managed header', () => {
    expect(planEnvFile(undefined, { EVERME_API_KEY: 'evt_abcd1234' }).text).toMatch(new RegExp(`^${ENV_HEADER_MARKER.replace(/[.`]/g, '\\$&')}\n(#.*\n)+EVERME_API_KEY=evt_abcd1234\n$`));
  });

  it('leaves an existing file byte for byte when it has nothing to add or change, a missing final newline included', () => {
    for (const existing of ['# EverMe\nEVERME_AGENT_TOKEN=evt_abcd1234secret\n', 'EVERME_API_KEY=evt_abcd1234', 'A=1\r\nB=2\r\n']) {
      expect(planEnvFile(existing, {}).text).toBe(existing);
    }
    expect(planEnvFile('EVERME_API_KEY=evt_abcd1234', { EVERME_API_KEY: 'evt_abcd1234' }).text).toBe('EVERME_API_KEY=evt_abcd1234');
  });

  it('is created 0600 even with a umask of 000, and a wider existing file is narrowed', () => {
    savedUmask = process.umask(0);
    const dir = tempDir();
    const file = path.join(dir, 'everme.env');
    expect(writeEnvFile(file, { EVERME_API_KEY: 'evt_abcd1234' }, false).status).toBe('created');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    chmodSync(file, 0o644);
    const again = writeEnvFile(file, { EVERME_API_KEY: 'evt_abcd1234' }, false);
    expect(again).toMatchObject({ status: 'updated', tightened: true });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(writeEnvFile(file, { EVERME_API_KEY: 'evt_abcd1234' }, false).status).toBe('unchanged');
    expect(readdirSync(dir)).toEqual(['everme.env']);
  });

  it('refuses values with control characters as invalid arguments', () => {
    for (const bad of ['evt_abcd\nEVIL=1', 'evt_\u0000x', 'evt_\u001b[31m']) {
      let caught: unknown;
      try {
        validateEnvValue('api-key', bad);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(EvermeError);
      expect((caught as EvermeError).type).toBe('invalid_args');
      expect((caught as EvermeError).message).not.toContain('evt_abcd');
    }
  });
});

describe('markdown hooks', () => {
  it('names the event, matcher "*", the quoted absolute command and a 5 s timeout in front matter', () => {
    const command = hookCommand('/opt/node 20/bin/node', "/home/o'brien/.minimax/everme/runtime/bin/run.js", 'markdown');
    expect(command).toBe(`'/opt/node 20/bin/node' '/home/o'\\''brien/.minimax/everme/runtime/bin/run.js' hook --route=markdown`);
    const text = renderHookFile('PostToolUse', command);
    expect(text.startsWith('---\nname: everme-post-tool-use\n')).toBe(true);
    expect(text).toContain('hooks:\n  PostToolUse:\n    - matcher: "*"\n      hooks:\n        - type: command\n');
    expect(text).toContain('          timeout: 5\n---\n');
    expect(text).toContain('everme uninstall');
    expect(readHookCommand(text)).toBe(command);
  });

  it('quotes paths so the shell passes them through unchanged', () => {
    const odd = "/tmp/a b/it's $HOME `x`";
    const run = spawnSync('sh', ['-c', `printf '%s' ${shellQuote(odd)}`], { encoding: 'utf8' });
    expect(run.stdout).toBe(odd);
  });
});

describe('mcp.json', () => {
  function fixtureCopy(): string {
    const dir = tempDir();
    const file = path.join(dir, 'mcp.json');
    cpSync(FIXTURE_MCP, file);
    return file;
  }

  it('adds our server after the user\'s, keeping their servers, keys and order, and backs the old file up', () => {
    const file = fixtureCopy();
    const doc = readMcp(file);
    doc.theme = 'dark';
    writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
    const original = readFileSync(file);
    expect(upsertMcpServer(file, entry, false)).toMatchObject({ status: 'updated', backup: mcpBackupPath(file) });
    const next = readMcp(file);
    expect(Object.keys(next)).toEqual(['mcpServers', 'theme']);
    expect(Object.keys(next.mcpServers)).toEqual(['repo-notes', 'docs-search', 'disabled-one', MCP_SERVER_NAME]);
    expect(next.mcpServers['docs-search']).toEqual(doc.mcpServers['docs-search']);
    expect(next.mcpServers[MCP_SERVER_NAME]).toEqual(entry);
    expect(readFileSync(mcpBackupPath(file)).equals(original)).toBe(true);
    const backupInode = statSync(mcpBackupPath(file)).ino;
    expect(upsertMcpServer(file, entry, false).status).toBe('unchanged');
    expect(statSync(mcpBackupPath(file)).ino).toBe(backupInode);
  });

  it('keeps the pre-everme backup when a later install changes our entry, so uninstall still restores it exactly', () => {
    const file = fixtureCopy();
    const original = readFileSync(file);
    upsertMcpServer(file, entry, false);
    expect(upsertMcpServer(file, { ...entry, command: '/opt/node/bin/node' }, false).status).toBe('updated');
    expect(readFileSync(mcpBackupPath(file)).equals(original)).toBe(true);
    expect(removeMcpServer(file, { fileCreatedByInstall: false, backupCreatedByInstall: true, dryRun: false })).toMatchObject({ restoredFromBackup: true });
    expect(readFileSync(file).equals(original)).toBe(true);
  });

  it('keeps what the user added to our entry (a timeout, enabled) when it updates it', () => {
    const file = fixtureCopy();
    upsertMcpServer(file, entry, false);
    const doc = readMcp(file);
    doc.mcpServers[MCP_SERVER_NAME]!.timeout = 90000;
    writeFileSync(file, JSON.stringify(doc, null, 2));
    upsertMcpServer(file, { ...entry, command: '/opt/node' }, false);
    expect(readMcp(file).mcpServers[MCP_SERVER_NAME]).toEqual({ ...entry, command: '/opt/node', timeout: 90000 });
  });

  it('leaves a file that is not valid JSON, or whose mcpServers is not an object, untouched', () => {
    const dir = tempDir();
    const file = path.join(dir, 'mcp.json');
    for (const bad of ['{ "mcpServers": { "a": 1, } }', '{"mcpServers": []}', '[1,2]', '']) {
      writeFileSync(file, bad);
      expect(upsertMcpServer(file, entry, false).status).toBe('skipped');
      expect(readFileSync(file, 'utf8')).toBe(bad);
      expect(existsSync(mcpBackupPath(file))).toBe(false);
    }
  });

  it('removal puts the pre-install bytes back; a file edited since keeps the edit', () => {
    const file = fixtureCopy();
    const original = readFileSync(file);
    upsertMcpServer(file, entry, false);
    expect(removeMcpServer(file, { fileCreatedByInstall: false, backupCreatedByInstall: true, dryRun: false })).toMatchObject({ status: 'removed', restoredFromBackup: true });
    expect(readFileSync(file).equals(original)).toBe(true);
    expect(existsSync(mcpBackupPath(file))).toBe(false);

    upsertMcpServer(file, entry, false);
    const edited = readMcp(file);
    edited.mcpServers.added = { command: 'x' };
    writeFileSync(file, `${JSON.stringify(edited, null, 2)}\n`);
    removeMcpServer(file, { fileCreatedByInstall: false, backupCreatedByInstall: true, dryRun: false });
    const after = readMcp(file);
    expect(Object.keys(after.mcpServers)).toEqual(['repo-notes', 'docs-search', 'disabled-one', 'added']);
  });

  it('puts back a server of the user\'s that an earlier everme merged its entry into: the backup holds it', () => {
    const dir = tempDir();
    const file = path.join(dir, 'mcp.json');
    const theirs = { url: 'https://mcp.everme.example/mcp', headers: { Authorization: 'Bearer x' } };
    const original = `${JSON.stringify({ mcpServers: { a: { command: 'a' }, [MCP_SERVER_NAME]: theirs } }, null, 2)}\n`;
    // What an earlier install left: the backup, and our command and args merged over their server.
    writeFileSync(mcpBackupPath(file), original);
    writeFileSync(file, `${JSON.stringify({ mcpServers: { a: { command: 'a' }, [MCP_SERVER_NAME]: { ...theirs, ...entry } } }, null, 2)}\n`);
    expect(removeMcpServer(file, { fileCreatedByInstall: false, backupCreatedByInstall: true, dryRun: false })).toMatchObject({ status: 'removed', restoredFromBackup: true });
    expect(readFileSync(file, 'utf8')).toBe(original);
    // Now it is theirs alone: install leaves it, and so does uninstall.
    expect(upsertMcpServer(file, entry, false)).toMatchObject({ status: 'skipped', why: 'foreign' });
    expect(removeMcpServer(file, { fileCreatedByInstall: false, backupCreatedByInstall: false, dryRun: false }).status).toBe('foreign');
    expect(readFileSync(file, 'utf8')).toBe(original);
  });

  it('removes a file install created once only our entry is left, and keeps it when the user added a server', () => {
    const dir = tempDir();
    const file = path.join(dir, 'mcp.json');
    expect(upsertMcpServer(file, entry, false).status).toBe('created');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(removeMcpServer(file, { fileCreatedByInstall: true, backupCreatedByInstall: false, dryRun: false }).status).toBe('file_removed');
    expect(existsSync(file)).toBe(false);

    upsertMcpServer(file, entry, false);
    const doc = readMcp(file);
    doc.mcpServers.mine = { command: 'mine' };
    writeFileSync(file, JSON.stringify(doc, null, 2));
    expect(removeMcpServer(file, { fileCreatedByInstall: true, backupCreatedByInstall: false, dryRun: false }).status).toBe('removed');
    expect(readMcp(file)).toEqual({ mcpServers: { mine: { command: 'mine' } } });
  });
});

describe('official everme plugin detection', () => {
  const noMcode = { pathEnv: '' };

  /** The runtime's table as the public MiniMax Code source creates it, one row per account. */
  function runtimeState(data: string, rows: Array<{ principal: string; updatedAtMs: number; state: unknown }>): string {
    const dir = path.join(data, 'v2', 'sqlite');
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'runtime-state.sqlite');
    const db = new Database(file);
    db.exec(`CREATE TABLE local_runtime_plugin_official_state (
      principal_id TEXT NOT NULL, deployment TEXT NOT NULL, state_json TEXT NOT NULL, updated_at_ms INTEGER NOT NULL,
      PRIMARY KEY (principal_id, deployment))`);
    const insert = db.prepare('INSERT INTO local_runtime_plugin_official_state VALUES (?, ?, ?, ?)');
    for (const row of rows) insert.run(row.principal, 'prod', typeof row.state === 'string' ? row.state : JSON.stringify(row.state), row.updatedAtMs);
    db.close();
    return file;
  }

  const installation = (name: string, installed: boolean, enabled: boolean) => ({
    name,
    installed,
    enabled,
    installationPolicy: 'USER_MANAGED',
    cachedPackages: [{ name, version: '1.0.0', archiveSha256: 'a'.repeat(64), contentDigest: `sha256-tree-v1:${'b'.repeat(64)}`, cacheKey: `sha256-tree-v1-${'b'.repeat(64)}` }],
  });
  const state = (...installations: unknown[]) => ({ schemaVersion: 1, installations });

  it('enabled: the runtime state lists everme installed and enabled, and install warns with that message', async () => {
    const data = tempDir();
    const file = runtimeState(data, [{ principal: 'acct', updatedAtMs: 2, state: state(installation('other', true, true), installation('everme', true, true)) }]);
    const found = await detectOfficialPlugin(data, noMcode);
    expect(found).toMatchObject({ status: 'enabled', source: 'runtime-state' });
    expect(found.message).toBe("everme@official is installed and enabled according to MiniMax Code's runtime state");
    expect(found.evidence).toEqual([`${file} lists everme@official as installed and enabled`]);
  });

  it('disabled: installed but not enabled', async () => {
    const data = tempDir();
    runtimeState(data, [{ principal: 'acct', updatedAtMs: 2, state: state(installation('everme', true, false)) }]);
    const found = await detectOfficialPlugin(data, noMcode);
    expect(found).toMatchObject({ status: 'disabled', source: 'runtime-state' });
    expect(found.message).toBe("everme@official is installed but disabled according to MiniMax Code's runtime state");
  });

  it('absent: the state holds no everme installation (or none installed); the most recently updated account decides', async () => {
    const data = tempDir();
    runtimeState(data, [
      { principal: 'old-account', updatedAtMs: 1, state: state(installation('everme', true, true)) },
      { principal: 'current', updatedAtMs: 5, state: state(installation('other', true, true)) },
    ]);
    const found = await detectOfficialPlugin(data, noMcode);
    expect(found).toMatchObject({ status: 'not_detected', source: 'runtime-state' });
    expect(found.message).toBe("everme@official is not installed according to MiniMax Code's runtime state");
  });

  it('says it could not tell in an empty data dir, and never reads digest-named cache dirs as the plugin', async () => {
    const data = tempDir();
    mkdirSync(path.join(data, 'v2', 'plugin-cache', 'official', `sha256-tree-v1-${'c'.repeat(64)}`), { recursive: true });
    const found = await detectOfficialPlugin(data, noMcode);
    expect(found).toMatchObject({ status: 'not_detected', source: 'none', evidence: [] });
    expect(found.message).toBe("everme@official was not detected (neither `mcode` nor MiniMax Code's runtime state could tell)");
  });

  it('shrugs off rows of another shape, a file that is not SQLite, and a database locked by the runtime', async () => {
    const odd = tempDir();
    runtimeState(odd, [{ principal: 'acct', updatedAtMs: 1, state: 'not json' }, { principal: 'b', updatedAtMs: 0, state: { plugins: {} } }]);
    expect((await detectOfficialPlugin(odd, noMcode)).source).toBe('none');
    const garbage = tempDir();
    mkdirSync(path.join(garbage, 'v2', 'sqlite'), { recursive: true });
    writeFileSync(path.join(garbage, 'v2', 'sqlite', 'runtime-state.sqlite'), 'not a database');
    expect((await detectOfficialPlugin(garbage, noMcode)).source).toBe('none');

    const locked = tempDir();
    const file = runtimeState(locked, [{ principal: 'acct', updatedAtMs: 1, state: state(installation('everme', true, true)) }]);
    const holder = new Database(file);
    holder.exec('BEGIN EXCLUSIVE');
    try {
      const started = Date.now();
      expect((await detectOfficialPlugin(locked, noMcode)).source).toBe('none');
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
  });

  it('asks `mcode plugin list --json` first: enabled, disabled and absent each with its message', async () => {
    const bin = tempDir();
    const mcode = path.join(bin, 'mcode');
    const answer = (json: string): void => {
      writeFileSync(mcode, `#!/bin/sh\necho 'note: listing plugins'\necho '${json}'\n`);
      chmodSync(mcode, 0o755);
    };
    answer('{"plugins":[{"id":"everme@official","name":"everme","enabled":true}]}');
    const enabled = await detectOfficialPlugin(tempDir(), { pathEnv: bin });
    expect(enabled).toMatchObject({ status: 'enabled', source: 'mcode', message: 'everme@official is installed and enabled according to `mcode plugin list`' });
    answer('[{"id":"everme@official","enabled":false}]');
    expect(await detectOfficialPlugin(tempDir(), { pathEnv: bin })).toMatchObject({ status: 'disabled', source: 'mcode', message: 'everme@official is installed but disabled according to `mcode plugin list`' });
    answer('{"plugins":[{"id":"other@official","enabled":true}]}');
    expect(await detectOfficialPlugin(tempDir(), { pathEnv: bin })).toMatchObject({ status: 'not_detected', source: 'mcode', message: 'everme@official is not installed according to `mcode plugin list`' });
  });

  it('gives up on a hanging `mcode` at the timeout (its children killed too) and falls back to the runtime state', async () => {
    const bin = tempDir();
    const mcode = path.join(bin, 'mcode');
    // Not exec'd: the shell waits on a child that holds the output pipe open; both write their pid.
    const pids = path.join(bin, 'pids');
    writeFileSync(mcode, `#!/bin/sh\necho $$ >> '${pids}'\nsleep 30 &\necho $! >> '${pids}'\nwait\necho "[]"\n`);
    chmodSync(mcode, 0o755);
    const data = tempDir();
    runtimeState(data, [{ principal: 'acct', updatedAtMs: 1, state: state(installation('everme', true, true)) }]);
    const started = Date.now();
    const found = await detectOfficialPlugin(data, { pathEnv: bin, timeoutMs: 300 });
    // A hang budget, well under the child's 30 s: the answer did not wait for the pipe to close.
    expect(Date.now() - started).toBeLessThan(15_000);
    // `mcode` and the child it started are both gone (killed as a group), not left running.
    const pidsSeen = readFileSync(pids, 'utf8').trim().split('\n').map(Number);
    expect(pidsSeen).toHaveLength(2);
    // Alive means running: a killed child whose new parent has not reaped it yet is a zombie ('Z').
    const alive = (pid: number): boolean => {
      try {
        return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      } catch {
        return false;
      }
    };
    const deadline = Date.now() + 15_000;
    while (pidsSeen.some(alive) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(pidsSeen.filter(alive)).toEqual([]);
    expect(found).toMatchObject({ status: 'enabled', source: 'runtime-state' });
    expect(found.evidence[0]).toBe(`\`${mcode} plugin list --json\` timed out after 0.3 s`);
  });
});
