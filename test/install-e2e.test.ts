import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookDocument } from '../src/install/local-plugin.js';
import { readHookCommand } from '../src/install/markdown-hooks.js';
import { filesContaining, hashTree, tempDir } from './install-helpers.js';
import { hermeticEnv } from './support/hermetic-env.js';

/** The CLI's --json envelope, as far as these tests read it. */
interface InstallEnvelope {
  ok: boolean;
  data: { steps: Array<{ status: string }> };
  error: { type: string; code?: string };
}
function parseEnvelope(stdout: string): InstallEnvelope {
  return JSON.parse(stdout) as InstallEnvelope;
}

/**
 * End to end through the real CLI, from a throwaway "npx cache" copy of the built package that is
 * deleted after install: what MiniMax Code runs must live entirely in the data dir.
 * Needs the built package (`dist/`); it is built once here when missing. EVERME_TEST_PACKAGE_ROOT
 * points at another built copy (bin/, dist/, package.json, node_modules/) when set.
 */
const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const builtRoot = process.env.EVERME_TEST_PACKAGE_ROOT ?? repoRoot;
const KEY = 'evt_a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6';
const HOOK_STDIN = path.join(repoRoot, 'fixtures', 'minimax', 'hooks', 'posttooluse-stdin.native.json');
const FIXTURE_MCP = path.join(repoRoot, 'fixtures', 'minimax', 'mcp.json');

/*
 * Every test stands alone (it passes run alone, and in any order): beforeAll installs once into
 * `data` from a throwaway "npx cache" copy; a test that removes something works on a data dir of
 * its own, or puts back what it moved.
 */
let work: string;
let sourceRoot: string;
let home: string;
let data: string;
/** The CLI as npx runs it: the source install. */
let sourceEntry: string;
/** The install beforeAll ran. */
let firstInstall: SpawnSyncReturns<string>;

/**
 * The reduced environment MiniMax gives hooks: no MINIMAX_DATA_DIR, no key in the environment; the
 * hermetic env's loopback API base keeps the key install wrote from reaching the real service.
 */
function hostEnv(): NodeJS.ProcessEnv {
  return hermeticEnv(home, { PATH: '/usr/local/bin:/usr/bin:/bin' });
}

/** Runs `node <entry> args --data-dir <dataDir>`; no run of any test may print the key. */
function cli(args: string[], dataDir = data, entry = sourceEntry): SpawnSyncReturns<string> {
  const run = spawnSync(process.execPath, [entry, ...args, '--data-dir', dataDir], {
    encoding: 'utf8',
    env: hostEnv(),
    timeout: 120_000,
  });
  expect(run.stdout + run.stderr, `everme ${args[0]} printed the key`).not.toContain(KEY);
  return run;
}

/** The runtime install staged into a data dir, which hooks and the MCP server run. */
const stagedEntry = (dataDir = data): string => path.join(dataDir, 'everme', 'runtime', 'bin', 'run.js');

/** A data dir as MiniMax Code leaves it before any install: sessions and the fixture mcp.json. */
function freshDataDir(name: string): string {
  const dir = path.join(work, name, '.minimax');
  mkdirSync(path.join(dir, 'v2', 'sessions'), { recursive: true });
  cpSync(FIXTURE_MCP, path.join(dir, 'mcp.json'));
  return dir;
}

/** Runs `body` with the source install moved away (as npx deletes its cache), and puts it back. */
function withoutSourceInstall(body: () => void): void {
  const npx = path.join(work, '_npx');
  renameSync(npx, `${npx}-away`);
  try {
    body();
  } finally {
    renameSync(`${npx}-away`, npx);
  }
}

/** npx layout: the package under node_modules/@everme/, its dependencies hoisted beside it. */
function makeSourceInstall(): string {
  const modules = path.join(work, '_npx', 'node_modules');
  const pkg = path.join(modules, '@everme', 'minimaxcode');
  mkdirSync(pkg, { recursive: true });
  for (const entry of ['bin', 'dist', 'package.json', 'oclif.manifest.json']) {
    if (existsSync(path.join(builtRoot, entry))) cpSync(path.join(builtRoot, entry), path.join(pkg, entry), { recursive: true });
  }
  const deps = realpathSync(path.join(builtRoot, 'node_modules'));
  // Hard links keep this fast; the staged runtime copies bytes, so deleting these links later is a real test.
  const linked = spawnSync('cp', ['-al', `${deps}/.`, modules]);
  if (linked.status !== 0) cpSync(deps, modules, { recursive: true, verbatimSymlinks: true });
  return pkg;
}

beforeAll(() => {
  if (!existsSync(path.join(builtRoot, 'dist', 'commands', 'install.js'))) {
    throw new Error(`the package is not built (${path.join(builtRoot, 'dist')} has no commands/install.js): run npm run build`);
  }
  work = tempDir('everme-e2e-');
  sourceRoot = makeSourceInstall();
  sourceEntry = path.join(sourceRoot, 'bin', 'run.js');
  data = freshDataDir('home');
  home = path.dirname(data);
  firstInstall = cli(['install', '--api-key', KEY]);
  if (firstInstall.status !== 0) throw new Error(`install failed: ${firstInstall.stderr}`);
}, 300_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('everme install / uninstall, end to end', () => {
  it('--dry-run through the CLI writes nothing', () => {
    const fresh = freshDataDir('dry-run');
    const before = hashTree(fresh);
    const run = cli(['install', '--dry-run', '--json', '--api-key', KEY], fresh);
    expect(run.status).toBe(0);
    const envelope = parseEnvelope(run.stdout);
    expect(envelope.ok).toBe(true);
    expect(envelope.data.steps.map((s: { status: string }) => s.status)).toEqual(['created', 'created', 'created', 'created', 'created', 'updated']);
    expect(hashTree(fresh)).toEqual(before);
  });

  it('installs, then a second install is byte-for-byte a no-op', () => {
    const first = firstInstall;
    expect(first.stdout).toMatch(/created\s+runtime/);
    expect(first.stdout).toContain('EVERME_API_KEY set (evt_a1b2_REDACTED)');
    expect(first.stdout).toMatch(/everme import --since \d{4}-\d{2}-\d{2}/);
    expect(statSync(path.join(data, 'everme.env')).mode & 0o777).toBe(0o600);
    const installed = hashTree(data);
    const second = cli(['install', '--api-key', KEY, '--json']);
    expect(second.status, second.stderr).toBe(0);
    const envelope = parseEnvelope(second.stdout);
    expect(envelope.data.steps.every((s: { status: string }) => s.status === 'unchanged')).toBe(true);
    expect(hashTree(data)).toEqual(installed);
  });

  it('an invalid mcp.json is left alone, the rest installed, and the run ends in a conflict', () => {
    const other = path.join(work, 'other-data');
    mkdirSync(other);
    const broken = '{"mcpServers": {"x": {"command": "y"},}}\n';
    writeFileSync(path.join(other, 'mcp.json'), broken);
    const json = cli(['install', '--json'], other);
    expect(json.status).toBe(1);
    const envelope = parseEnvelope(json.stdout);
    expect(envelope.ok).toBe(false);
    expect(envelope.error).toMatchObject({ type: 'conflict', code: 'mcp_config_invalid' });
    expect(readFileSync(path.join(other, 'mcp.json'), 'utf8')).toBe(broken);
    expect(existsSync(path.join(other, 'hooks', 'everme-pre-tool-use.md'))).toBe(true);
    const text = cli(['install'], other);
    expect(text.status).toBe(1);
    // #15: a failing command leaves stdout empty; the report goes to stderr with the error.
    expect(text.stdout).toBe('');
    expect(text.stderr).toMatch(/skipped\s+mcp/);
    // Said once, by the error: the warning it repeats is not printed beside it.
    expect(text.stderr).toMatch(/error: .*mcp\.json was left untouched/);
    expect(text.stderr.split('was left untouched')).toHaveLength(2);
  });

  it('staged only the production dependencies', () => {
    const modules = path.join(data, 'everme', 'runtime', 'node_modules');
    expect(existsSync(path.join(modules, '@oclif', 'core', 'package.json'))).toBe(true);
    expect(existsSync(path.join(modules, 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node'))).toBe(true);
    for (const dev of ['vitest', 'typescript', 'oclif', '@types']) expect(existsSync(path.join(modules, dev)), dev).toBe(false);
  });

  it('runs each hook command from the staged runtime after the source install is gone', () => withoutSourceInstall(() => {
    for (const name of ['everme-pre-tool-use.md', 'everme-post-tool-use.md']) {
      const command = readHookCommand(readFileSync(path.join(data, 'hooks', name), 'utf8'));
      expect(command).toBeDefined();
      expect(command).toMatch(/ hook --route=markdown$/);
      const run = spawnSync('sh', ['-c', command!], { input: readFileSync(HOOK_STDIN), env: hostEnv(), encoding: 'utf8', timeout: 15_000 });
      expect(run.stderr).not.toMatch(/Cannot find|ERR_MODULE_NOT_FOUND/);
      expect(run.status).toBe(0);
      expect(run.stdout).toBe('');
    }
  }));

  it('writes the everme-memory plugin: a manifest and a hook document the host reads, every command running under sh with only PATH and HOME', () => withoutSourceInstall(() => {
    const plugin = path.join(data, 'plugins', 'everme-memory');
    expect(hashTree(plugin).size).toBe(4); // .claude-plugin/, its plugin.json, hooks/, hooks.json: nothing else
    expect(JSON.parse(readFileSync(path.join(plugin, '.claude-plugin', 'plugin.json'), 'utf8'))).toMatchObject({ name: 'everme-memory' });
    // The reference's own example parses with the same schema as ours.
    HookDocument.parse(JSON.parse(readFileSync(path.join(repoRoot, 'fixtures', 'minimax', 'hooks', 'plugin-hooks.json'), 'utf8')));
    const doc = HookDocument.parse(JSON.parse(readFileSync(path.join(plugin, 'hooks', 'hooks.json'), 'utf8')));
    const payloads: Record<string, string> = {
      SessionStart: 'sessionstart-stdin.native.json',
      PreToolUse: 'pretooluse-stdin.native.json',
      PostToolUse: 'posttooluse-stdin.native.json',
      Stop: 'stop-stdin.native.json',
      PreCompact: 'precompact-stdin.native.json',
      SessionEnd: 'sessionend-stdin.native.json',
    };
    expect(Object.keys(doc.hooks).sort()).toEqual(Object.keys(payloads).sort());
    // The install holds a key, so SessionStart asks the gateway: the hermetic env's refused loopback
    // port, never the real service (a recall that cannot reach the gateway prints nothing at all).
    for (const [event, groups] of Object.entries(doc.hooks)) {
      expect(groups).toHaveLength(1);
      const [group] = groups;
      expect(group!.matcher).toBe('*');
      const command = group!.hooks[0]!.command;
      expect(command).toContain(path.join(data, 'everme', 'runtime', 'bin', 'run.js'));
      const input = readFileSync(path.join(repoRoot, 'fixtures', 'minimax', 'hooks', payloads[event]!));
      const run = spawnSync('sh', ['-c', command], { input, env: hostEnv(), encoding: 'utf8', timeout: 15_000 });
      expect(run.stderr, event).toBe('');
      expect(run.status, event).toBe(0);
      expect(run.stdout, event).toBe('');
    }
  }));

  it('install run from the staged runtime itself finds nothing to change', () => {
    const before = hashTree(data);
    const run = cli(['install', '--json'], data, stagedEntry());
    expect(run.status, run.stderr).toBe(0);
    expect(parseEnvelope(run.stdout).data.steps.map((s: { status: string }) => s.status)).toEqual(['unchanged', 'unchanged', 'unchanged', 'unchanged', 'unchanged', 'unchanged']);
    expect(hashTree(data)).toEqual(before);
  });

  it('the registered MCP server answers initialize', async () => {
    const config = JSON.parse(readFileSync(path.join(data, 'mcp.json'), 'utf8')) as { mcpServers: Record<string, unknown> };
    const server = config.mcpServers['everme-memory'] as { command: string; args: string[]; env: Record<string, string> };
    const child = spawn(server.command, server.args, { env: { ...hostEnv(), ...server.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    try {
      const reply = await new Promise<{ id: number; result?: { serverInfo?: unknown } }>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no initialize reply within 15 s')), 15_000);
        let buffered = '';
        child.stdout.on('data', (chunk: Buffer) => {
          buffered += chunk.toString('utf8');
          for (const line of buffered.split('\n').slice(0, -1)) {
            try {
              const message = JSON.parse(line) as { id?: number; result?: { serverInfo?: unknown } };
              if (message.id === 1) {
                clearTimeout(timer);
                resolve({ ...message, id: 1 });
              }
            } catch {
              // not a frame
            }
          }
          buffered = buffered.slice(buffered.lastIndexOf('\n') + 1);
        });
        child.on('exit', (code) => reject(new Error(`MCP server exited (${code}) before answering`)));
        child.stdin.write(
          `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'everme-test', version: '0' } } })}\n`,
        );
      });
      expect(reply.result?.serverInfo).toBeDefined();
    } finally {
      child.kill();
    }
  });

  it('an invalid key is refused without echoing it', () => {
    const run = cli(['install', '--json', '--api-key', `${KEY}\nEVERME_API_BASE=http://evil`]);
    expect(run.status).toBe(2);
    expect(parseEnvelope(run.stdout).error.type).toBe('invalid_args');
  });

  it('never shows the key: not in any file but everme.env (no output of any test shows it: see cli())', () => {
    expect(filesContaining(data, KEY)).toEqual(['everme.env']);
    expect(firstInstall.stdout).toContain('evt_a1b2_REDACTED');
  });

  it('uninstall, run from the staged runtime itself, leaves every byte it did not add', () => {
    // A data dir of its own: the others keep theirs installed.
    const own = freshDataDir('uninstall');
    const beforeInstall = hashTree(own);
    expect(cli(['install', '--api-key', KEY], own).status).toBe(0);
    const run = cli(['uninstall'], own, stagedEntry(own));
    expect(run.status, run.stderr).toBe(0);
    expect(readFileSync(path.join(own, 'mcp.json')).equals(readFileSync(FIXTURE_MCP))).toBe(true);
    expect(existsSync(path.join(own, 'everme', 'runtime'))).toBe(false);
    // What stays is what the user keeps without --purge: the env file (it holds the key) and the
    // state dir.
    const after = [...hashTree(own).entries()].filter(([rel]) => rel !== 'everme.env' && !rel.startsWith('everme/'));
    expect(new Map(after)).toEqual(beforeInstall);
    expect(run.stdout).not.toContain(KEY);
  });
});
