import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { cliEnv, envelopeOf, runCli } from './support/cli-process.js';
import { cliEntry, repoRoot } from './support/cli.js';
import { tempDir } from './support/temp.js';

/**
 * A command's help as a user reads it: its summary (the first paragraph of DESCRIPTION, also the
 * line `everme --help` lists) and the description after it, each with oclif's line wrapping undone.
 */
async function helpOf(command: string, env: NodeJS.ProcessEnv): Promise<{ summary: string; description: string }> {
  const result = await runCli([command, '--help'], env);
  expect(result.code, result.stderr).toBe(0);
  const section = /\nDESCRIPTION\n([\s\S]*?)\n(?:EXAMPLES|FLAG DESCRIPTIONS)\n/.exec(result.stdout)?.[1];
  if (section === undefined) throw new Error(`no DESCRIPTION section in:\n${result.stdout}`);
  const [summary = '', ...rest] = section.split(/\n\s*\n/).map((paragraph) => paragraph.replace(/\s+/g, ' ').trim());
  return { summary, description: rest.join(' ') };
}

interface Step {
  step: string;
  path: string;
}

function stepsOf(result: Awaited<ReturnType<typeof runCli>>): Step[] {
  const envelope = envelopeOf(result);
  expect(envelope.ok, result.stdout).toBe(true);
  return (envelope.data as { steps: Step[] }).steps;
}

/** A step's path as the help writes it: under `<data>`, the file itself or the directory holding it. */
function namedIn(text: string, dataDir: string, file: string): boolean {
  const relative = path.relative(dataDir, file);
  return [relative, path.dirname(relative)].some((name) => name !== '.' && text.includes(`<data>/${name}`));
}

describe('command help names what the command does', () => {
  it('everme mcp --help names every tool the server lists, in its summary and its description', async () => {
    const home = tempDir();
    const dataDir = path.join(home, '.minimax');
    fs.mkdirSync(dataDir);
    const env = cliEnv(home);
    const transport = new StdioClientTransport({ command: process.execPath, args: [cliEntry, 'mcp', '--data-dir', dataDir], cwd: home, env: env as Record<string, string>, stderr: 'pipe' });
    const client = new Client({ name: 'everme-test', version: '0.0.0' });
    await client.connect(transport);
    let tools: string[];
    try {
      tools = (await client.listTools()).tools.map((tool) => tool.name);
    } finally {
      await client.close();
    }
    expect(tools.length).toBeGreaterThan(0);
    const help = await helpOf('mcp', env);
    for (const tool of tools) {
      expect(help.summary, tool).toContain(tool);
      expect(help.description, tool).toContain(tool);
    }
  });

  it('everme install --help and everme uninstall --help name every place install writes', async () => {
    const home = tempDir();
    const dataDir = path.join(home, '.minimax');
    fs.mkdirSync(dataDir);
    const env = cliEnv(home);
    const installed = stepsOf(await runCli(['install', '--data-dir', dataDir, '--json'], env));
    const removable = stepsOf(await runCli(['uninstall', '--data-dir', dataDir, '--dry-run', '--json'], env));
    // Both routes of the hook, the env file, the MCP config and the runtime: the help is checked against each.
    expect(new Set(installed.map((step) => step.step))).toEqual(new Set(['runtime', 'env', 'hook', 'plugin', 'mcp']));
    const install = await helpOf('install', env);
    for (const step of installed) expect(namedIn(install.description, dataDir, step.path), `${step.step} ${step.path} in: ${install.description}`).toBe(true);
    const uninstall = await helpOf('uninstall', env);
    const removed = removable.filter((step) => installed.some((done) => done.path === step.path));
    expect(new Set(removed.map((step) => step.step))).toEqual(new Set(['runtime', 'env', 'hook', 'plugin', 'mcp']));
    for (const step of removed) expect(namedIn(uninstall.description, dataDir, step.path), `${step.step} ${step.path} in: ${uninstall.description}`).toBe(true);
  });

  it("every command's --data-dir help names the whole default order the README lists, the XDG dir included", async () => {
    const env = cliEnv(tempDir('everme-home-'));
    const commands = fs.readdirSync(path.join(repoRoot, 'commands')).filter((f) => f.endsWith('.ts') && f !== 'hook.ts').map((f) => f.replace(/\.ts$/, ''));
    expect(commands).toContain('status');
    for (const command of commands) {
      const help = (await runCli([command, '--help'], env)).stdout.replace(/\s+/g, ' ');
      expect(help, command).toContain('--data-dir=<value> MiniMax Code data directory (default: $MINIMAX_DATA_DIR, then $MAVIS_DATA_DIR, then ~/.minimax, then $XDG_DATA_HOME/minimax on a new Linux install)');
    }
  });

  it('everme search --help says gateway results come next to the local store’s, as the README does', async () => {
    const help = await helpOf('search', cliEnv(tempDir('everme-home-')));
    expect(help.description).toContain("when an API key is configured or --sink everme is given, the EverMe gateway too, its results next to the store's");
    expect(help.description).not.toMatch(/, or the EverMe gateway/);
  });
});
