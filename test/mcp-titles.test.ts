/**
 * Session titles in what the MCP tools return: the host derives a title from what was said (often
 * the whole first prompt), and structured content carries it bounded as the text does, so a compact
 * hit stays compact.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, ensureBuilt, runJs } from './recall-cli.js';
import { buildStore, sessionIdFor, type BuiltStore } from './recall-store-fixture.js';
import { connectMcp } from './support/mcp-client.js';
import { indexRecord, writeSessionIndex } from './support/session-index-host.js';
import { tempDir } from './transcript-helpers.js';

const LONG_TITLE = `Please refactor the invoice exporter ${'and keep every column exactly as it was before '.repeat(100)}`;

let root: string;
let store: BuiltStore;
let client: Client;

async function call(name: string, args: Record<string, unknown>): Promise<{ text: string; structured: Record<string, unknown> }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const first = result.content[0];
  expect(result.isError ?? false).toBe(false);
  return { text: first?.type === 'text' ? first.text : '', structured: result.structuredContent! };
}

beforeAll(async () => {
  ensureBuilt('mcp');
  root = tempDir();
  store = await buildStore([{ n: 1, createdAtMs: Date.UTC(2026, 8, 10, 8), texts: ['How do we export invoices?', 'The invoice exporter writes CSV.'] }], root);
  // The host's session index names the title; the next sync notes it.
  writeSessionIndex(store.dataDir, 'newest', [indexRecord(sessionIdFor(1), { title: LONG_TITLE })]);
  const sync = spawnSync(process.execPath, [runJs, 'sync', '--data-dir', store.dataDir], { cwd: root, env: cleanEnv({ EVERME_STATE_DIR: store.stateDir }), encoding: 'utf8' });
  expect(sync.status, sync.stderr).toBe(0);
  ({ client } = await connectMcp({ dataDir: store.dataDir, stateDir: store.stateDir, cwd: root }));
}, 300_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

describe('a long session title over MCP', () => {
  it('is bounded in mem_search, mem_get and mem_timeline structured content, as in their text', async () => {
    const search = await call('mem_search', { query: 'invoice exporter' });
    const hits = (search.structured as { hits: Array<{ id: string; title?: string }> }).hits;
    expect(hits.length).toBe(2);
    for (const hit of hits) {
      expect(hit.title!.startsWith('Please refactor the invoice exporter and keep')).toBe(true);
      expect(Array.from(hit.title!).length).toBeLessThanOrEqual(121);
      // A compact hit: its text is at most 600 characters, and its structured form not far off.
      expect(JSON.stringify(hit).length).toBeLessThan(800);
    }
    const opened = await call('mem_get', { ids: [hits[0]!.id] });
    const [message] = (opened.structured as { messages: Array<{ title?: string }> }).messages;
    expect(Array.from(message!.title!).length).toBeLessThanOrEqual(121);
    const timeline = await call('mem_timeline', { id: hits[0]!.id });
    expect(Array.from((timeline.structured as { title?: string }).title!).length).toBeLessThanOrEqual(121);
    for (const answer of [search, opened, timeline]) expect(JSON.stringify(answer.structured)).not.toContain(LONG_TITLE.slice(0, 400));
  });
});
