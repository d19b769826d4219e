/**
 * What one MCP answer may put in front of the model is bounded, whatever the store holds or the
 * agent typed: the real SDK client against the built CLI, over a store made by a real `import`.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GET_PAGE_CHARS } from '../src/recall/open-messages.js';
import { GET_ANSWER_CHARS } from '../src/recall/get-budget.js';
import { ensureBuilt } from './recall-cli.js';
import { connectMcp } from './support/mcp-client.js';
import { cliEnv, runCli } from './support/cli-process.js';
import { jsonl, makeSession, tempDir } from './transcript-helpers.js';

const T = Date.UTC(2026, 8, 20, 10, 0, 0);
/** A Write of a ~2.6 MB file: stored whole in the tool call's arguments. */
const FILE_BODY = 'ostrich data '.repeat(200_000);

/** Six Writes in one message, 45,000 characters each: at one offset, far past one answer's budget. */
const EMU_BODIES = Array.from({ length: 6 }, (_, i) => `emu${i} data `.repeat(4_500));

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
        {
          message_id: 'a4',
          turn_id: 't1',
          message: {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Writing the emu files now.' },
              ...EMU_BODIES.map((body, i) => ({ type: 'toolCall', id: `call_e${i}`, name: 'write', arguments: { path: `emu${i}.txt`, content: body } })),
            ],
            stopReason: 'toolUse',
            timestamp: T + 3000,
          },
        },
      ]),
    },
  });
  const imported = await runCli(['import', '--data-dir', dataDir, '--since', '2026-01-01', '--sink', 'local'], cliEnv(root, { EVERME_STATE_DIR: stateDir }));
  expect(imported.code, imported.stderr).toBe(0);
  ({ client } = await connectMcp({ dataDir, stateDir, cwd: root }));
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

describe('one mem_get answer stays within its budget, and names the rest', () => {
  it('ten ids and a message of many huge tool calls: every answer bounded, nothing dropped, every call whole across pages', async () => {
    const found = await call('mem_search', { query: 'writing the emu files' });
    const emu = (found.structured as { hits: Array<{ id: string; role: string }> }).hits.find((h) => h.role === 'assistant')!.id;
    const around = await call('mem_timeline', { id: emu, before: 5, after: 0 });
    const all = (around.structured as { entries: Array<{ id: string }> }).entries.map((e) => e.id);
    expect(all).toHaveLength(4);
    // The emu message first: alone it is over the budget, so the others wait for another call.
    const ids = [emu, ...all.filter((id) => id !== emu)];
    const first = await call('mem_get', { ids });
    expect(first.isError).toBe(false);
    expect(first.text.length).toBeLessThan(GET_ANSWER_CHARS + 2_000);
    expect(JSON.stringify(first.structured).length).toBeLessThan(GET_ANSWER_CHARS + 2_000);
    const structured = first.structured as { messages: Array<Opened & { id: string }>; notShown?: string[] };
    expect(structured.messages.map((m) => m.id)).toEqual([emu]);
    expect(structured.notShown).toEqual(ids.slice(1));
    expect(first.text).toContain(`Not shown, to keep this answer within`);
    expect(first.text).toContain(ids.slice(1).join(', '));

    // Paging the emu message by its nextOffset gives each call whole, every answer bounded.
    const args = EMU_BODIES.map(() => '');
    let offset: number | undefined = 0;
    while (offset !== undefined) {
      const page = await call('mem_get', { ids: [emu], offset });
      expect(page.text.length).toBeLessThan(GET_ANSWER_CHARS + 2_000);
      expect(JSON.stringify(page.structured).length).toBeLessThan(GET_ANSWER_CHARS + 2_000);
      const [message] = (page.structured as { messages: Opened[] }).messages;
      message!.toolCalls!.forEach((c, i) => (args[i] += c.arguments));
      offset = message!.nextOffset;
    }
    expect(args).toEqual(EMU_BODIES.map((content, i) => JSON.stringify({ path: `emu${i}.txt`, content })));

    // The ids not shown, asked for again, come in one bounded answer.
    const rest = await call('mem_get', { ids: ids.slice(1) });
    expect((rest.structured as { messages: Array<{ id: string }> }).messages.map((m) => m.id).length + ((rest.structured as { notShown?: string[] }).notShown?.length ?? 0)).toBe(3);
    expect(JSON.stringify(rest.structured).length).toBeLessThan(GET_ANSWER_CHARS + 2_000);
  }, 120_000);
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
