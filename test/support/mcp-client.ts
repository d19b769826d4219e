import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { cleanEnv, runJs } from '../recall-cli.js';

export interface McpServerStart {
  dataDir: string;
  stateDir: string;
  cwd: string;
  /** More of the hermetic environment (`PWD`, `HOME`, …). */
  env?: Record<string, string>;
  args?: string[];
}

export interface ConnectedMcp {
  client: Client;
  /** What the server wrote to stderr, as it arrives. */
  stderr: string[];
}

/** The built `everme mcp` as MiniMax Code starts it (stdio, a clean environment), with the SDK's own client connected. */
export async function connectMcp(start: McpServerStart): Promise<ConnectedMcp> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [runJs, 'mcp', '--data-dir', start.dataDir, ...(start.args ?? [])],
    cwd: start.cwd,
    env: cleanEnv({ EVERME_STATE_DIR: start.stateDir, ...start.env }),
    stderr: 'pipe',
  });
  const stderr: string[] = [];
  transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
  const client = new Client({ name: 'everme-test', version: '0.0.0' });
  await client.connect(transport);
  return { client, stderr };
}
