/**
 * A message's time is whatever its session file said: the import accepts any safe integer, some of
 * which no Date can hold. Such a message is still found, its time unknown, over the real SDK client
 * and the built CLI, from a store made by a real `import`.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from './recall-cli.js';
import { connectMcp } from './support/mcp-client.js';
import { cliEnv, runCli } from './support/cli-process.js';
import { jsonl, makeSession, tempDir } from './transcript-helpers.js';

/** A safe integer past the ±8.64e15 ms a Date holds. */
const FAR = 8_700_000_000_000_000;

let root: string;
let client: Client;
let stderr: string[] = [];

beforeAll(async () => {
  ensureBuilt('mcp');
  root = tempDir();
  const dataDir = path.join(root, 'data');
  const stateDir = path.join(root, 'state');
  makeSession(dataDir, '2026/09/20', `mvs_${'f'.repeat(32)}`, {
    createdAtMs: Date.UTC(2026, 8, 20),
    files: {
      'messages.jsonl': jsonl([
        { message_id: 'a1', turn_id: 't1', message: { role: 'user', content: [{ type: 'text', text: 'Where did the narwhal exporter go?' }], timestamp: FAR } },
        { message_id: 'a2', turn_id: 't1', message: { role: 'assistant', content: [{ type: 'text', text: 'The narwhal exporter moved to tools/.' }], stopReason: 'stop', timestamp: FAR + 1 } },
      ]),
    },
  });
  const imported = await runCli(['import', '--data-dir', dataDir, '--since', '2026-01-01', '--sink', 'local'], cliEnv(root, { EVERME_STATE_DIR: stateDir }));
  expect(imported.code, imported.stderr).toBe(0);
  ({ client, stderr } = await connectMcp({ dataDir, stateDir, cwd: root }));
}, 300_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

describe('a message whose time no Date can hold', () => {
  it('mem_search finds it, its time null in structuredContent and unknown in the text, not a failed search', async () => {
    const result = (await client.callTool({ name: 'mem_search', arguments: { query: 'where did the narwhal exporter go?' } })) as CallToolResult;
    const first = result.content[0];
    const text = first?.type === 'text' ? first.text : '';
    expect(result.isError, text).not.toBe(true);
    const hits = (result.structuredContent as { hits: Array<{ time: string | null; snippet: string }> }).hits;
    expect(hits.length).toBe(2);
    for (const hit of hits) expect(hit.time).toBeNull();
    expect(text).toContain('unknown time');
    expect(text).toContain('**narwhal**');
    expect(stderr.join('')).not.toContain('failed');
  });
});
