import { spawn } from 'node:child_process';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv, ensureBuilt, runJs } from './recall-cli.js';
import { repoRoot } from './support/cli.js';
import { tempDir } from './transcript-helpers.js';

/** ESC (a CSI that clears the screen, an OSC that retitles the terminal) and C1 (CSI as U+009B). */
const CONTROLS = ['\x1b[2J', '\x1b]0;pwned\x07', '\u009b31m'];
const HOSTILE = `evil${CONTROLS.join('')}dir`;
/** An agent token in the same value: the log masks it as every printed line does. */
const TOKEN = 'evt_a1b2c3d4e5f6a7b8c9d0e1f2';

const clients: Client[] = [];
afterAll(async () => {
  for (const client of clients) await client.close();
});

function expectClean(stderr: string): void {
  for (const control of CONTROLS) expect(stderr).not.toContain(control);
  expect(stderr).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
  expect(stderr).not.toContain(TOKEN);
}

describe("everme mcp's stderr log", () => {
  it('names a data dir holding terminal controls and a token without either, over stdio with a real MCP client', async () => {
    ensureBuilt('mcp');
    const root = tempDir();
    const missing = path.join(root, `${HOSTILE}-${TOKEN}`);
    const transport = new StdioClientTransport({ command: process.execPath, args: [runJs, 'mcp', '--data-dir', missing, '--project', path.join(root, HOSTILE)], cwd: root, env: cleanEnv({}), stderr: 'pipe' });
    const stderr: string[] = [];
    transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
    const client = new Client({ name: 'everme-test', version: '0.0.0' });
    await client.connect(transport);
    clients.push(client);
    const result = await client.callTool({ name: 'mem_search', arguments: { query: 'anything' } });
    expect(result.isError).toBe(true);
    await client.close();
    const log = stderr.join('');
    // The line that names the path reached the log, stripped and masked.
    expect(log).toContain('every tool call answers this');
    expect(log).toContain('evildir');
    expect(log).toContain('evt_a1b2_REDACTED');
    expectClean(log);
  });

  it("writes a failing tool's message without terminal controls when the server is built with its default log", async () => {
    // createRecallServer as a library caller builds it (no log of its own), in a process of its
    // own whose stderr is real; the client talks to it in memory.
    const dist = (file: string): string => JSON.stringify(path.join(repoRoot, 'dist', 'src', file));
    const script = `
      import { Client } from '@modelcontextprotocol/sdk/client/index.js';
      import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
      import { createRecallServer } from ${dist('mcp/server.js')};
      import { UnavailableRecall } from ${dist('recall/unavailable-recall.js')};
      import { EvermeError } from ${dist('core/errors.js')};
      const reason = new EvermeError('io', ${JSON.stringify(`Cannot read ${HOSTILE} with ${TOKEN}`)});
      const server = createRecallServer(new UnavailableRecall('local', reason));
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await server.connect(serverSide);
      const client = new Client({ name: 'everme-test', version: '0.0.0' });
      await client.connect(clientSide);
      const result = await client.callTool({ name: 'mem_search', arguments: { query: 'anything' } });
      process.stdout.write(String(result.isError));
      await client.close();
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: repoRoot, env: cleanEnv({}) });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code, stderr).toBe(0);
    expect(stdout).toBe('true');
    expect(stderr).toContain('everme mcp: mem_search failed: io: Cannot read evildir with evt_a1b2_REDACTED');
    expectClean(stderr);
  });
});
