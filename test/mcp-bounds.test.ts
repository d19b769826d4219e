/**
 * What one MCP answer may put in front of the model is bounded, whatever the store holds or the
 * agent typed: the real SDK client against the built CLI, over a store made by a real `import`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GET_PAGE_CHARS } from '../src/recall/open-messages.js';
import { cleanEnv, ensureBuilt, runJs } from './recall-cli.js';
import { cliEnv, runCli } from './support/cli-process.js';
import { jsonl, makeSession, tempDir } from './transcript-helpers.js';

const T = Date.UTC(2026, 8, 20, 10, 0, 0);
/** A Write of a ~2.6 MB file: stored whole in the tool call's arguments. */
const FILE_BODY = 'ostrich data '.repeat(200_000);

let root: string;
let dataDir: string;
let stateDir: string;
let client: Client;

interface Opened {
  content: string;
  nextOffset?: number;
  toolCalls?: Array<{ name: string; arguments: string; argumentsChars?: number }>;
}

async function call(name: string, args: Record<string, unknown>): Promise<{ text: string; isError: boolean; structured: Record<string, unknown> | undefined }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const first = result.content[0];
  return { text: first?.type === 'text' ? first.text : '', isError: result.isError === true, structured: result.structuredContent };
}

beforeAll(async () => {
  ensureBuilt('mcp');
  root = tempDir();
  dataDir = path.join(root, 'data');
  stateDir = path.join(root, 'state');
  makeSession(dataDir, '2026/09/20', `mvs_${'e'.repeat(32)}`, {
    createdAtMs: T,
    files: {
      'messages.jsonl': jsonl([
        { message_id: 'a1', turn_id: 't1', message: { role: 'user', content: [{ type: 'text', text: 'Write the ostrich file' }], timestamp: T } },
        {
          message_id: 'a2',
          turn_id: 't1',
          message: {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Writing the ostrich file now.' },
              { type: 'toolCall', id: 'call_1', name: 'write', arguments: { path: 'ostrich.txt', content: FILE_BODY } },
            ],
            stopReason: 'toolUse',
            timestamp: T + 1000,
          },
        },
        { message_id: 'a3', turn_id: 't1', message: { role: 'toolResult', toolCallId: 'call_1', toolName: 'write', content: [{ type: 'text', text: 'ok' }], isError: false, timestamp: T + 2000 } },
      ]),
    },
  });
  const imported = await runCli(['import', '--data-dir', dataDir, '--since', '2026-01-01', '--sink', 'local'], cliEnv(root, { EVERME_STATE_DIR: stateDir }));
  expect(imported.code, imported.stderr).toBe(0);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [runJs, 'mcp', '--data-dir', dataDir],
    cwd: root,
    env: cleanEnv({ EVERME_STATE_DIR: stateDir }),
    stderr: 'pipe',
  });
  client = new Client({ name: 'everme-test', version: '0.0.0' });
  await client.connect(transport);
}, 300_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

describe('MCP answers stay bounded', () => {
  it('mem_get pages a huge tool call\'s arguments like long content, and every page together is the whole call', async () => {
    const found = await call('mem_search', { query: 'writing the ostrich file' });
    const id = (found.structured as { hits: Array<{ id: string; role: string }> }).hits.find((h) => h.role === 'assistant')!.id;
    const whole = JSON.stringify({ path: 'ostrich.txt', content: FILE_BODY });

    let offset: number | undefined = 0;
    let args = '';
    let pages = 0;
    while (offset !== undefined) {
      const page = await call('mem_get', { ids: [id], offset });
      expect(page.isError).toBe(false);
      // A page and its framing, never the 2.6 MB call.
      expect(page.text.length).toBeLessThan(GET_PAGE_CHARS * 2 + 2_000);
      expect(JSON.stringify(page.structured).length).toBeLessThan(GET_PAGE_CHARS * 2 + 2_000);
      const [message] = (page.structured as { messages: Opened[] }).messages;
      const [toolCall] = message!.toolCalls!;
      expect(toolCall!.name).toBe('write');
      expect(toolCall!.argumentsChars).toBe(whole.length);
      args += toolCall!.arguments;
      offset = message!.nextOffset;
      pages++;
      if (pages === 1) expect(page.text).toContain('the rest: offset');
    }
    expect(pages).toBe(Math.ceil(whole.length / GET_PAGE_CHARS));
    expect(args).toBe(whole);
  });

  it('mem_search echoes a huge query bounded in structuredContent, as its text does, and still finds the answer', async () => {
    const query = `where is the ostrich file written? ${'please '.repeat(20_000)}`;
    const result = await call('mem_search', { query });
    expect(result.isError).toBe(false);
    const structured = result.structured as { query: string; hits: Array<{ conversationId: string }> };
    expect(structured.hits.length).toBeGreaterThan(0);
    expect(structured.query.startsWith('where is the ostrich file written?')).toBe(true);
    expect(Array.from(structured.query).length).toBeLessThanOrEqual(121);
    expect(JSON.stringify(result.structured).length).toBeLessThan(5_000);
    expect(result.text.length).toBeLessThan(5_000);
  });
});

describe('MCP tool errors are masked like the CLI\'s error words', () => {
  it('a credential pasted as a mem_get id reaches the model masked by the full rule table', async () => {
    const github = `ghp_${'A1b2C3d4E5'.repeat(3)}ZyXwVu`;
    const anthropic = `sk-ant-api03-${'Qw3rTy7UiOp9'.repeat(3)}`;
    for (const id of [github, anthropic]) {
      const result = await call('mem_get', { ids: [id] });
      expect(result.isError).toBe(true);
      expect(result.text).toContain('mem_get failed (invalid_args)');
      expect(result.text).not.toContain(id.slice(0, 24));
      expect(result.text).toMatch(/REDACTED/);
    }
  });
});
