import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliEntry, ensureBuilt } from './support/cli.js';
import { hermeticEnv } from './support/hermetic-env.js';
import { tempDir } from './support/temp.js';

/**
 * One failure path for every command: in text mode a failing command leaves stdout empty and says
 * what failed on stderr (`error:` / `hint:`), its report included; with --json stdout holds exactly
 * one envelope. install, uninstall and status used to print their report on stdout and exit 1.
 */

const KEY = 'evt_0123456789abcdef0123456789abcdef';

function dataDir(opts: { brokenMcp?: boolean } = {}): string {
  const dir = tempDir('everme-fail-');
  fs.mkdirSync(path.join(dir, 'v2', 'sessions'), { recursive: true });
  if (opts.brokenMcp) fs.writeFileSync(path.join(dir, 'mcp.json'), '{ "mcpServers": { ');
  return dir;
}

function cli(dir: string, args: string[]) {
  return spawnSync(process.execPath, [cliEntry, ...args, '--data-dir', dir], {
    env: hermeticEnv(dir),
    encoding: 'utf8',
    timeout: 120_000,
  });
}

function expectTextFailure(run: ReturnType<typeof cli>, error: RegExp): void {
  expect(run.status).toBe(1);
  expect(run.stdout).toBe('');
  expect(run.stderr).toMatch(error);
  expect(run.stderr).toMatch(/^hint: \S/m);
}

function expectOneErrorEnvelope(run: ReturnType<typeof cli>, code: string): void {
  expect(run.status).toBe(1);
  const lines = run.stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(JSON.parse(lines[0]!)).toMatchObject({ ok: false, error: { type: 'conflict', code } });
}

describe('a failing command in text mode leaves stdout empty', () => {
  beforeAll(() => ensureBuilt());

  it('install with an mcp.json that is not JSON: the report and the error on stderr, nothing on stdout', () => {
    const dir = dataDir({ brokenMcp: true });
    const run = cli(dir, ['install']);
    expectTextFailure(run, /^error: installed, except the MCP server: /m);
    expect(run.stderr).toContain(`everme install: ${dir}`);
    // Said once, as the error: the warning with the same words is not printed beside it.
    expect(run.stderr).not.toMatch(/^warning: /m);
    expectOneErrorEnvelope(cli(dir, ['install', '--json']), 'mcp_config_invalid');
  }, 120_000);

  it('uninstall with an mcp.json that is not JSON: the report and the error on stderr, nothing on stdout', () => {
    // Uninstall fails over an mcp.json only where install wrote its entry, and the file broke since.
    const installedThenBroken = (): string => {
      const at = dataDir();
      expect(cli(at, ['install']).status).toBe(0);
      fs.writeFileSync(path.join(at, 'mcp.json'), '{ "mcpServers": { ');
      return at;
    };
    const dir = installedThenBroken();
    const run = cli(dir, ['uninstall']);
    expectTextFailure(run, /^error: uninstalled, except the MCP server entry: /m);
    expect(run.stderr).toContain(`everme uninstall: ${dir}`);
    expectOneErrorEnvelope(cli(installedThenBroken(), ['uninstall', '--json']), 'mcp_config_invalid');
  });

  it('status with problems: the report and every problem on stderr, nothing on stdout', () => {
    const dir = dataDir();
    const run = cli(dir, ['status']);
    expectTextFailure(run, /^error: 2 problem\(s\): no everme hooks are installed$/m);
    expect(run.stderr).toMatch(/^problem: nothing has been imported yet$/m);
    expect(run.stderr).toContain(dir);
    expectOneErrorEnvelope(cli(dir, ['status', '--json']), 'status_problems');
  });
});

describe('install --dry-run says what it would do', () => {
  beforeAll(() => ensureBuilt());

  it('never says something is in place or configured when nothing was written', () => {
    const dir = dataDir();
    const run = cli(dir, ['install', '--dry-run', '--api-key', KEY]);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('would create');
    expect(run.stdout).toContain('The API key would be written to everme.env');
    expect(`${run.stdout}${run.stderr}`).not.toMatch(/in place|configured in everme\.env/);
    expect(fs.existsSync(path.join(dir, 'everme.env'))).toBe(false);
  });

  it('a dry run over an mcp.json that is not JSON fails with "would install", not "in place"', () => {
    const dir = dataDir({ brokenMcp: true });
    const run = cli(dir, ['install', '--dry-run']);
    expectTextFailure(run, /^error: would install, except the MCP server: /m);
    expect(run.stderr).not.toMatch(/in place/);
    expect(fs.existsSync(path.join(dir, 'everme'))).toBe(false);
  });
});
