import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from './recall-cli.js';
import { connectMcp } from './support/mcp-client.js';
import { buildStore, corpus, type BuiltStore } from './recall-store-fixture.js';
import { tempDir } from './transcript-helpers.js';

// A workspace reached through a symlink: MiniMax Code records it as it was reached (the link's
// path), while the kernel hands a process started there the resolved one.
let root: string;
let linked: string;
let store: BuiltStore;
const clients: Client[] = [];

async function contextFrom(cwd: string, pwd: string): Promise<string> {
  const { client } = await connectMcp({ dataDir: store.dataDir, stateDir: store.stateDir, cwd, env: { PWD: pwd } });
  clients.push(client);
  const result = (await client.callTool({ name: 'mem_context', arguments: {} })) as CallToolResult;
  const first = result.content[0];
  return first?.type === 'text' ? first.text : '';
}

beforeAll(async () => {
  ensureBuilt('mcp');
  root = tempDir();
  const real = path.join(root, 'real');
  for (const dir of ['widget', 'gadget', 'other']) fs.mkdirSync(path.join(real, dir), { recursive: true });
  linked = path.join(root, 'linked');
  fs.symlinkSync(real, linked, 'dir');
  store = await buildStore(corpus(linked), root);
}, 300_000);

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

describe('everme mcp in a workspace reached through a symlink', () => {
  it('mem_context names the project as the shell spells it ($PWD), so the conversations recorded under the link are found', async () => {
    const widget = path.join(linked, 'widget');
    const text = await contextFrom(widget, widget);
    expect(text).toContain(`## Recent conversations in ${widget}`);
    expect(text).not.toContain('No conversations recorded');
  });

  it('mem_context ignores a $PWD that names another directory and keeps the directory it runs in', async () => {
    const text = await contextFrom(path.join(linked, 'widget'), path.join(linked, 'gadget'));
    expect(text).toContain(`No conversations recorded for ${path.join(fs.realpathSync(root), 'real', 'widget')}`);
  });
});
