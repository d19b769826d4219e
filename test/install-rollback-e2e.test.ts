/**
 * `everme install` is all-or-nothing: the built CLI, spawned, meets a failure at each of its steps
 * (a directory where a file must go, a directory it may not write) on a fresh data dir and on one
 * an older install left, and every time the data dir ends byte-identical to before (names, modes,
 * contents), EverMe's own everme.env included, and the failure is the typed error naming its path.
 * Root ignores permissions, so as root the CLI runs as uid 65534 over a tree that uid owns.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, repoRoot } from './support/cli.js';
import { asRoot, chownTree, runCliAsNobody } from './support/as-nobody.js';
import { cliEnv, envelopeOf, type CliResult } from './support/cli-process.js';
import { traversable } from './support/traversable.js';
import { hashTree, tempDir } from './install-helpers.js';

const KEY = 'evt_a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6';
const NEW_KEY = 'evt_ffff0000ffff0000ffff0000ffff0000';
/** As EverMe's own installer writes it (reference: everme-gateway.md, "Credentials"). */
const EVERME_ENV = '# EverMe agent credentials (written by evercli)\nEVERME_API_BASE=https://api.everme.evermind.ai\nEVERME_AGENT_ID=agt_123\nEVERME_AGENT_TOKEN=evt_abcd1234secret\n';
const FIXTURE_MCP = path.join(repoRoot, 'fixtures', 'minimax', 'mcp.json');

let opened: Array<[string, number]> = [];
beforeAll(() => {
  ensureBuilt();
  // The CLI stages its own package (this checkout and its dependencies): uid 65534 must reach it.
  opened = asRoot ? traversable([path.join(repoRoot, 'dist'), fs.realpathSync(path.join(repoRoot, 'node_modules'))]) : [];
});
afterAll(() => {
  for (const [d, mode] of opened.reverse()) fs.chmodSync(d, mode);
});

/** A home holding a data dir as MiniMax Code and EverMe's installer leave it, owned by the user the CLI runs as. */
interface Home {
  root: string;
  data: string;
  env: NodeJS.ProcessEnv;
  /** Modes to put back after the test, so the temp dir can be removed by a non-root owner too. */
  chmods: Array<[string, number]>;
}

function makeHome(): Home {
  const root = tempDir('everme-rollback-');
  const data = path.join(root, 'home', '.minimax');
  fs.mkdirSync(path.join(data, 'v2', 'sessions'), { recursive: true });
  fs.mkdirSync(path.join(root, 'tmp'));
  fs.cpSync(FIXTURE_MCP, path.join(data, 'mcp.json'));
  fs.writeFileSync(path.join(data, 'everme.env'), EVERME_ENV, { mode: 0o600 });
  if (asRoot) {
    chownTree(root);
    opened.push(...traversable([root]));
  }
  return { root, data, env: cliEnv(path.join(root, 'home'), { TMPDIR: path.join(root, 'tmp') }), chmods: [] };
}

function runInstall(home: Home, args: string[]): Promise<CliResult> {
  return runEverme(home, 'install', args);
}

async function runEverme(home: Home, command: 'install' | 'uninstall', args: string[]): Promise<CliResult> {
  const run = await runCliAsNobody([command, '--data-dir', home.data, '--json', ...args], home.env);
  expect(run.stdout + run.stderr, `${command} printed a key`).not.toContain(KEY);
  expect(run.stdout + run.stderr, `${command} printed a key`).not.toContain(NEW_KEY);
  return run;
}

/** Something in the way, created as the user the CLI runs as. */
function obstacleDir(home: Home, rel: string, mode = 0o755): string {
  const dir = path.join(home.data, rel);
  fs.mkdirSync(dir, { recursive: true });
  if (asRoot) chownTree(home.root);
  if (mode !== 0o755) readOnly(home, dir, mode);
  return dir;
}

function readOnly(home: Home, dir: string, mode = 0o555): void {
  home.chmods.push([dir, fs.statSync(dir).mode & 0o7777]);
  fs.chmodSync(dir, mode);
}

function putBack(home: Home): void {
  for (const [dir, mode] of home.chmods.reverse()) fs.chmodSync(dir, mode);
}

/** An install by an older everme: its runtime, plugin manifest, hook files and MCP entry all differ from this build's. */
async function olderInstall(home: Home): Promise<void> {
  const first = await runInstall(home, ['--api-key', KEY]);
  expect(first.code, first.stderr).toBe(0);
  const data = home.data;
  const age = (file: string, from: string | RegExp, to: string): void => {
    const text = fs.readFileSync(file, 'utf8');
    const next = text.replace(from, to);
    expect(next, `nothing to age in ${file}`).not.toBe(text);
    fs.writeFileSync(file, next);
  };
  age(path.join(data, 'everme', 'runtime', 'runtime.json'), /"version": "[^"]+"/, '"version": "0.0.1"');
  age(path.join(data, 'plugins', 'everme-memory', '.claude-plugin', 'plugin.json'), /"version": "[^"]+"/, '"version": "0.0.1"');
  age(path.join(data, 'hooks', 'everme-post-tool-use.md'), '# everme PostToolUse hook', '# everme PostToolUse hook (0.0.1)');
  age(path.join(data, 'mcp.json'), /"mcp"\n/, '"mcp",\n        "--legacy"\n');
}

interface FailureCase {
  step: string;
  /** Makes the step fail; returns the path the error must name. */
  arrange(home: Home): string;
  args: string[];
  code: string;
}

/** On a fresh data dir each step, in install's order, meets something in its way after the steps before it wrote. */
const FRESH: FailureCase[] = [
  {
    step: 'runtime',
    arrange: (home) => {
      const file = path.join(home.data, 'everme');
      fs.writeFileSync(file, 'not a directory\n');
      if (asRoot) chownTree(home.root);
      return file;
    },
    args: ['--api-key', KEY],
    code: 'enotdir',
  },
  {
    // The store dir exists (an import ran before install); the data dir itself may not be written.
    step: 'env',
    arrange: (home) => {
      obstacleDir(home, 'everme');
      readOnly(home, home.data);
      return path.join(home.data, 'everme.env');
    },
    args: ['--api-key', KEY],
    code: 'eacces',
  },
  {
    // The first hook file is written, then a directory sits where the second goes.
    step: 'hook',
    arrange: (home) => obstacleDir(home, path.join('hooks', 'everme-post-tool-use.md')),
    args: ['--api-key', KEY],
    code: 'eisdir',
  },
  {
    step: 'plugin',
    arrange: (home) => obstacleDir(home, path.join('plugins', 'everme-memory'), 0o555),
    args: ['--api-key', KEY],
    code: 'eacces',
  },
  {
    step: 'mcp',
    arrange: (home) => obstacleDir(home, 'mcp.json.everme-backup'),
    args: ['--api-key', KEY],
    code: 'eisdir',
  },
  {
    step: 'install record',
    arrange: (home) => obstacleDir(home, path.join('everme', 'install.json')),
    args: ['--api-key', KEY],
    code: 'eisdir',
  },
];

/** Over an older install, which every step would update: the previous runtime, files and record come back as they were. */
const UPGRADE: FailureCase[] = [
  {
    step: 'env',
    arrange: (home) => {
      readOnly(home, home.data);
      return path.join(home.data, 'everme.env');
    },
    args: ['--api-key', NEW_KEY],
    code: 'eacces',
  },
  {
    step: 'hook',
    arrange: (home) => {
      readOnly(home, path.join(home.data, 'hooks'));
      return path.join(home.data, 'hooks', 'everme-post-tool-use.md');
    },
    args: ['--api-key', NEW_KEY],
    code: 'eacces',
  },
  {
    step: 'plugin',
    arrange: (home) => {
      readOnly(home, path.join(home.data, 'plugins', 'everme-memory', '.claude-plugin'));
      return path.join(home.data, 'plugins', 'everme-memory');
    },
    args: ['--api-key', NEW_KEY],
    code: 'eacces',
  },
  {
    // No new key: env and hooks need no write; the runtime and the plugin do, then mcp.json cannot be written.
    step: 'mcp',
    arrange: (home) => {
      readOnly(home, home.data);
      return path.join(home.data, 'mcp.json');
    },
    args: [],
    code: 'eacces',
  },
  {
    step: 'install record',
    arrange: (home) => {
      const record = path.join(home.data, 'everme', 'install.json');
      fs.rmSync(record);
      return obstacleDir(home, path.join('everme', 'install.json'));
    },
    args: ['--api-key', NEW_KEY],
    code: 'eisdir',
  },
];

async function expectUndone(home: Home, failure: FailureCase): Promise<void> {
  const named = failure.arrange(home);
  const before = hashTree(home.data);
  const envBefore = fs.readFileSync(path.join(home.data, 'everme.env'));
  try {
    const run = await runInstall(home, failure.args);
    expect(run.code, run.stderr).toBe(5);
    const { error } = envelopeOf(run);
    expect(error).toMatchObject({ type: 'io', code: failure.code });
    expect(String(error?.message)).toContain(named);
    expect(String(error?.hint)).toContain('Nothing was changed');
    expect(hashTree(home.data)).toEqual(before);
    expect(fs.readFileSync(path.join(home.data, 'everme.env')).equals(envBefore)).toBe(true);
    expect(fs.readdirSync(path.join(home.data)).filter((name) => name.includes('everme-tmp'))).toEqual([]);
  } finally {
    putBack(home);
  }
}

describe.runIf(process.platform !== 'win32')('everme install that fails part way', () => {
  for (const failure of FRESH) {
    it(`leaves a fresh data dir byte-identical when the ${failure.step} step fails, EverMe's everme.env included`, async () => {
      const home = makeHome();
      await expectUndone(home, failure);
      expect(fs.readFileSync(path.join(home.data, 'everme.env'), 'utf8')).toBe(EVERME_ENV);
    });
  }

  for (const failure of UPGRADE) {
    it(`puts an older install back byte for byte when the ${failure.step} step of an upgrade fails`, async () => {
      const home = makeHome();
      await olderInstall(home);
      await expectUndone(home, failure);
    });
  }

  it('installs once the obstacle is gone: the run after a rolled-back one is a normal install', async () => {
    const home = makeHome();
    const obstacle = obstacleDir(home, 'mcp.json.everme-backup');
    const failed = await runInstall(home, ['--api-key', KEY]);
    expect(failed.code).toBe(5);
    fs.rmdirSync(obstacle);
    const run = await runInstall(home, ['--api-key', KEY]);
    expect(run.code, run.stderr).toBe(0);
    const steps = (envelopeOf(run).data as { steps: Array<{ step: string; status: string }> }).steps;
    expect(steps.slice(0, 2)).toEqual([expect.objectContaining({ step: 'runtime', status: 'created' }), expect.objectContaining({ step: 'env', status: 'updated' })]);
    expect(fs.existsSync(path.join(home.data, 'everme', 'install.json'))).toBe(true);
  });

  it('uninstall is not undone but resumable: stopped part way, it says so, and a second run restores the data dir as it was before install', async () => {
    const home = makeHome();
    const before = hashTree(home.data);
    const installed = await runInstall(home, ['--api-key', KEY]);
    expect(installed.code, installed.stderr).toBe(0);
    const pluginHooks = path.join(home.data, 'plugins', 'everme-memory', 'hooks');
    readOnly(home, pluginHooks);
    try {
      const stopped = await runEverme(home, 'uninstall', ['--purge']);
      expect(stopped.code, stopped.stderr).toBe(5);
      const { error } = envelopeOf(stopped);
      expect(error).toMatchObject({ type: 'io', code: 'eacces' });
      expect(String(error?.message)).toContain(path.join(pluginHooks, 'hooks.json'));
      expect(String(error?.hint)).toContain('Run `everme uninstall` again once this is fixed');
      // The hooks went first: nothing runs the everme that is half removed.
      expect(fs.existsSync(path.join(home.data, 'hooks', 'everme-pre-tool-use.md'))).toBe(false);
      expect(fs.existsSync(path.join(home.data, 'everme', 'install.json'))).toBe(true);
    } finally {
      putBack(home);
    }
    const finished = await runEverme(home, 'uninstall', ['--purge']);
    expect(finished.code, finished.stderr).toBe(0);
    expect(hashTree(home.data)).toEqual(before);
    expect(fs.readFileSync(path.join(home.data, 'everme.env'), 'utf8')).toBe(EVERME_ENV);
  });

  it('uninstall --purge stopped at a store kept outside the data dir keeps the env file that names it, so a second run finds and removes it', async () => {
    const home = makeHome();
    fs.rmSync(path.join(home.data, 'everme.env'));
    const installed = await runInstall(home, []);
    expect(installed.code, installed.stderr).toBe(0);
    const stateDir = path.join(home.root, 'elsewhere');
    fs.mkdirSync(stateDir);
    fs.writeFileSync(path.join(stateDir, 'everme.db'), 'db');
    fs.appendFileSync(path.join(home.data, 'everme.env'), `EVERME_STATE_DIR=${stateDir}\n`);
    if (asRoot) chownTree(home.root);
    readOnly(home, stateDir);
    try {
      const stopped = await runEverme(home, 'uninstall', ['--purge']);
      expect(stopped.code, stopped.stderr).toBe(5);
      expect(envelopeOf(stopped).error).toMatchObject({ type: 'io', code: 'eacces' });
      expect(fs.readFileSync(path.join(home.data, 'everme.env'), 'utf8')).toContain(`EVERME_STATE_DIR=${stateDir}`);
    } finally {
      putBack(home);
    }
    const finished = await runEverme(home, 'uninstall', ['--purge']);
    expect(finished.code, finished.stderr).toBe(0);
    expect(fs.existsSync(path.join(stateDir, 'everme.db'))).toBe(false);
    // The line the user added is theirs: --purge takes out only what install wrote (the header).
    expect(fs.readFileSync(path.join(home.data, 'everme.env'), 'utf8')).toBe(`EVERME_STATE_DIR=${stateDir}\n`);
  });
});
