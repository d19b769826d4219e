import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayClient } from '../src/sinks/gateway/gateway-client.js';
import { DATA_PREFACE } from '../src/recall/recall-markdown.js';
import { MAX_CONTEXT_CHARS } from '../src/recall/context-index.js';
import { cleanEnv, ensureBuilt, runJs } from './recall-cli.js';
import { buildStore, conversationIdFor, corpus, manyConversations, type BuiltStore } from './recall-store-fixture.js';
import { startFakeGateway, type FakeGateway } from './support/fake-gateway.js';
import { tempDir } from './transcript-helpers.js';

const MANY = 40;

let root: string;
let projects: string;
let store: BuiltStore;
const open: Array<{ client: Client; stderr: string[] }> = [];

interface Connected {
  client: Client;
  stderr: string[];
  protocolErrors: Error[];
}

async function connect(args: string[], opts: { cwd: string; env?: Record<string, string> }): Promise<Connected> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [runJs, 'mcp', '--data-dir', store.dataDir, ...args],
    cwd: opts.cwd,
    env: cleanEnv({ EVERME_STATE_DIR: store.stateDir, ...opts.env }),
    stderr: 'pipe',
  });
  const stderr: string[] = [];
  transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
  // Anything on stdout that is not a protocol frame surfaces here.
  const protocolErrors: Error[] = [];
  transport.onerror = (err) => protocolErrors.push(err);
  const client = new Client({ name: 'everme-test', version: '0.0.0' });
  await client.connect(transport);
  const connected = { client, stderr, protocolErrors };
  open.push(connected);
  return connected;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<{ text: string; isError: boolean }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const first = result.content[0];
  return { text: first?.type === 'text' ? first.text : '', isError: result.isError === true };
}

beforeAll(async () => {
  ensureBuilt('mcp');
  root = tempDir();
  projects = path.join(root, 'projects');
  for (const dir of ['widget/packages/core', 'gadget', 'other', 'widget-legacy', 'many']) fs.mkdirSync(path.join(projects, dir), { recursive: true });
  store = await buildStore([...corpus(projects), ...manyConversations(path.join(projects, 'many'), MANY)], root);
}, 300_000);

afterAll(async () => {
  for (const { client } of open) await client.close().catch(() => undefined);
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

describe('everme mcp over stdio, local store', () => {
  let widget: Connected;

  beforeAll(async () => {
    widget = await connect([], { cwd: path.join(projects, 'widget') });
  });

  it('offers exactly mem_search, mem_get, mem_timeline and mem_context, all read-only', async () => {
    const { tools } = await widget.client.listTools();
    // mem_get and mem_timeline joined with issue #26 (recall in steps).
    expect(tools.map((t) => t.name).sort()).toEqual(['mem_context', 'mem_get', 'mem_search', 'mem_timeline']);
    for (const tool of tools) expect(tool.annotations?.readOnlyHint).toBe(true);
    const search = tools.find((t) => t.name === 'mem_search')!;
    expect(search.inputSchema.required).toEqual(['query']);
    expect(Object.keys(search.inputSchema.properties ?? {}).sort()).toEqual(['query', 'topK']);
  });

  it.each([
    ['English words', 'retry backoff', 1, 'payload uploader'],
    ['a two-character Chinese substring', '迁移', 2, '**迁移**'],
    ['English glued to Chinese', 'payload优先', 2, '**payload优先**'],
    ['a Japanese substring', 'マイグレ', 3, '**マイグレ**'],
    ['a Korean word', '백업', 4, '**백업**'],
  ])('mem_search finds %s', async (_label, query, n, expected) => {
    const { text, isError } = await call(widget.client, 'mem_search', { query });
    expect(isError).toBe(false);
    expect(text.startsWith(DATA_PREFACE)).toBe(true);
    expect(text).toContain(conversationIdFor(n));
    expect(text).toContain(expected);
  });

  it('mem_search matches glued CJK text exactly, not every message holding one of its words', async () => {
    const { text } = await call(widget.client, 'mem_search', { query: 'payload优先' });
    expect(text).not.toContain(conversationIdFor(1));
  });

  it.each([
    ['a lone quote', '"', undefined],
    ['a star', '*', undefined],
    ['a column filter', 'a:b', 5],
    ['an open parenthesis', '(x', 5],
    ['NEAR', 'NEAR(a b)', 5],
    ['OR', 'x OR y', 5],
    ['a minus', '-x', 5],
    ['2000 characters', 'zebracache '.repeat(182).slice(0, 2000), 5],
  ])('mem_search treats %s as text', async (_label, query, n) => {
    const { text, isError } = await call(widget.client, 'mem_search', { query });
    expect(isError).toBe(false);
    expect(text.startsWith(DATA_PREFACE)).toBe(true);
    if (n === undefined) expect(text).toContain('No memories match');
    else expect(text).toContain(conversationIdFor(n));
  });

  it('honours topK and caps it at 50', async () => {
    const one = await call(widget.client, 'mem_search', { query: 'lorem' });
    expect(one.text).toContain(': 5 results');
    const k1 = await call(widget.client, 'mem_search', { query: 'lorem', topK: 1 });
    expect(k1.text).toContain(': 1 result\n');
    // Every one of the 2 × 40 messages of the "many" project holds the word: more than the cap.
    const big = await call(widget.client, 'mem_search', { query: 'lorem', topK: 500 });
    expect(big.isError).toBe(false);
    expect(big.text).toContain(': 50 results');
  });

  it.each([
    ['an empty query', 'mem_search', { query: '' }],
    ['a blank query', 'mem_search', { query: '   ' }],
    ['a missing query', 'mem_search', {}],
    ['a numeric query', 'mem_search', { query: 42 }],
    ['topK 0', 'mem_search', { query: 'retry', topK: 0 }],
    ['a fractional topK', 'mem_search', { query: 'retry', topK: 2.5 }],
    ['a string topK', 'mem_search', { query: 'retry', topK: '5' }],
    ['a numeric context query', 'mem_context', { query: 7 }],
    ['a blank context query', 'mem_context', { query: ' ' }],
  ])('answers %s with a tool error and keeps serving', async (_label, tool, args) => {
    const bad = await call(widget.client, tool, args);
    expect(bad.isError).toBe(true);
    expect(bad.text.length).toBeGreaterThan(0);
    const next = await call(widget.client, 'mem_search', { query: 'retry backoff' });
    expect(next.isError).toBe(false);
    expect(next.text).toContain(conversationIdFor(1));
  });

  it('mem_context indexes the conversations of the server cwd and the directories under it', async () => {
    const { text, isError } = await call(widget.client, 'mem_context', {});
    expect(isError).toBe(false);
    expect(text.startsWith(DATA_PREFACE)).toBe(true);
    expect(text).toContain(`## Recent conversations in ${path.join(projects, 'widget')}`);
    for (const n of [1, 2, 5]) expect(text).toContain(conversationIdFor(n));
    // Other projects, and a sibling directory that only shares the name's prefix, stay out.
    for (const n of [3, 4, 6]) expect(text).not.toContain(conversationIdFor(n));
    expect(text).toContain('How do I tune the retry backoff');
    // Most recent first.
    expect(text.indexOf(conversationIdFor(5))).toBeLessThan(text.indexOf(conversationIdFor(1)));
  });

  it('mem_context with a query adds the best matches to the index', async () => {
    const { text } = await call(widget.client, 'mem_context', { query: '迁移脚本' });
    expect(text).toContain('## Top matches for "迁移脚本"');
    const matches = text.slice(text.indexOf('## Top matches'), text.indexOf('## Recent conversations'));
    expect(matches).toContain(conversationIdFor(2));
    expect(matches).toContain('**迁移脚本**');
  });

  it('mem_context says when the project has no conversations and lists recent ones from all projects', async () => {
    const elsewhere = await connect(['--project', path.join(root, 'nowhere')], { cwd: root });
    const { text, isError } = await call(elsewhere.client, 'mem_context', {});
    expect(isError).toBe(false);
    expect(text).toContain(`No conversations recorded for ${path.join(root, 'nowhere')}`);
    // The newest conversations of all, which are those of the "many" project.
    expect(text).toContain(conversationIdFor(100 + MANY - 1));
  });

  it('mem_context reads --project ~/dir as the home directory\'s dir, as search, export and forget do', async () => {
    // The shell leaves ~ alone after `--project=`; resolved as a path it was ./~/nowhere.
    const tilde = await connect(['--project=~/nowhere'], { cwd: root, env: { HOME: root } });
    const { text } = await call(tilde.client, 'mem_context', {});
    expect(text).toContain(`No conversations recorded for ${path.join(root, 'nowhere')}`);
  });

  it('mem_context trims a long index to 10,000 characters by whole conversations', async () => {
    const many = await connect(['--project', path.join(projects, 'many')], { cwd: root });
    const { text } = await call(many.client, 'mem_context', {});
    expect(text.length).toBeLessThanOrEqual(MAX_CONTEXT_CHARS);
    const entries = text.split('\n- **').slice(1);
    const footer = /_(\d+) more conversations not shown/.exec(text);
    expect(footer).not.toBeNull();
    expect(entries.length).toBeGreaterThan(3);
    expect(entries.length + Number(footer![1])).toBe(MANY);
    // Newest first, each entry whole: its header, its first request and its last answer.
    entries.forEach((entry, i) => {
      const k = MANY - 1 - i;
      expect(entry).toContain(conversationIdFor(100 + k));
      expect(entry).toContain(`  - user: Request number ${k}:`);
      expect(entry).toContain(`  - assistant: Answer number ${k}:`);
    });
  });

  it('keeps stdout to protocol frames (the client saw nothing else) and logs to stderr', async () => {
    // Its own calls, so the check means the same run alone or after the others.
    expect((await call(widget.client, 'mem_search', { query: 'migration' })).isError).toBe(false);
    expect((await call(widget.client, 'mem_context', {})).isError).toBe(false);
    expect(widget.protocolErrors).toEqual([]);
    expect(widget.stderr.join('')).toContain('everme mcp: serving');
  });
});

describe('everme mcp with a data dir that does not exist', () => {
  it('completes the handshake and answers every tool with the missing path and the hint, not a server that failed to start', async () => {
    const missing = path.join(root, 'no-such-data-dir');
    const transport = new StdioClientTransport({ command: process.execPath, args: [runJs, 'mcp', '--data-dir', missing], cwd: root, env: cleanEnv({}), stderr: 'pipe' });
    const stderr: string[] = [];
    transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
    const client = new Client({ name: 'everme-test', version: '0.0.0' });
    await client.connect(transport);
    open.push({ client, stderr });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['mem_search', 'mem_get', 'mem_timeline', 'mem_context']);
    for (const [name, args] of [
      ['mem_search', { query: 'migration' }],
      ['mem_get', { ids: ['m1'] }],
      ['mem_timeline', { id: 'm1' }],
      ['mem_context', {}],
    ] as const) {
      const result = await call(client, name, args);
      expect(result.isError, name).toBe(true);
      expect(result.text, name).toContain(`MiniMax Code data directory not found: ${missing}`);
      expect(result.text, name).toContain('MINIMAX_DATA_DIR');
    }
    expect(stderr.join('').match(/every tool call answers this/g)).toHaveLength(1);
  });
});

describe('everme mcp as a raw stdio process', () => {
  it('writes only JSON-RPC lines to stdout and exits when stdin closes', async () => {
    const child = spawn(process.execPath, [runJs, 'mcp', '--data-dir', store.dataDir], {
      cwd: root,
      env: cleanEnv({ EVERME_STATE_DIR: store.stateDir }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    const frames = [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'mem_search', arguments: { query: 'NEAR(a b)' } } },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'mem_search', arguments: { query: '' } } },
    ];
    for (const frame of frames) child.stdin.write(`${JSON.stringify(frame)}\n`);
    // Wait for the answers before closing stdin, so the exit is caused by the close.
    await expect.poll(() => stdout.split('\n').filter(Boolean).length, { timeout: 20_000 }).toBe(3);
    child.stdin.end();
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(0);
    const lines = stdout.split('\n').filter(Boolean);
    const messages = lines
      .map((line) => JSON.parse(line) as { jsonrpc: string; id: number; result: CallToolResult })
      .sort((a, b) => a.id - b.id);
    expect(messages.every((m) => m.jsonrpc === '2.0')).toBe(true);
    expect(messages.map((m) => m.id)).toEqual([1, 2, 3]);
    expect(messages[1]!.result.isError).not.toBe(true);
    expect(messages[2]!.result.isError).toBe(true);
  });
});

describe('everme mcp with the EverMe gateway configured', () => {
  let gateway: FakeGateway;
  let connected: Connected;

  beforeAll(async () => {
    gateway = await startFakeGateway();
    const seed = new GatewayClient({ apiBase: gateway.url, apiKey: gateway.token, userAgent: 'everme-test' });
    await seed.postAgentMemory({
      conversationId: 'minimaxcode-mvs_0000000000000000000000000000abcd',
      flush: true,
      messages: [{ role: 'user', timestamp: Date.UTC(2026, 8, 20, 9, 30), content: 'the gateway remembers the pelican rollout plan' }],
    });
    connected = await connect([], { cwd: root, env: { EVERME_API_KEY: gateway.token, EVERME_API_BASE: gateway.url } });
  });

  afterAll(async () => {
    await gateway?.close();
  });

  it('mem_search asks /mem/search and renders its items', async () => {
    const { text, isError } = await call(connected.client, 'mem_search', { query: 'pelican', topK: 3 });
    expect(isError).toBe(false);
    expect(text.startsWith(DATA_PREFACE)).toBe(true);
    expect(text).toContain('minimaxcode-mvs_0000000000000000000000000000abcd');
    expect(text).toContain('**pelican**');
    expect(text).toContain('2026-09-20 09:30 UTC');
    expect(gateway.requestsTo('/mem/search').at(-1)?.body).toEqual({ query: 'pelican', topK: 3 });
  });

  it('mem_context asks /mem/context (and /mem/search for a query)', async () => {
    const searchesBefore = gateway.requestsTo('/mem/search').length;
    const { text, isError } = await call(connected.client, 'mem_context', { query: 'rollout' });
    expect(isError).toBe(false);
    expect(text).toContain('1 messages in 1 conversations.');
    expect(text).toContain('**rollout**');
    expect(gateway.requestsTo('/mem/context')).toHaveLength(1);
    expect(gateway.requestsTo('/mem/search')).toHaveLength(searchesBefore + 1);
  });

  it('masks credentials in the query before mem_search and mem_context send it to /mem/search', async () => {
    const stripe = 'sk_live_35AlM4nDw8LbR9jD4rQ5sJ5eN6sU8lO2fT6sP3eT';
    const github = 'ghp_J7mE1mR2uP5fC7iQ8qL1zZ5wS0yJ5rW4pI4k';
    const before = gateway.requestsTo('/mem/search').length;
    expect((await call(connected.client, 'mem_search', { query: `deploy failed with STRIPE_SECRET_KEY=${stripe}` })).isError).toBe(false);
    expect((await call(connected.client, 'mem_context', { query: `pelican ${github}` })).isError).toBe(false);
    const sent = gateway.requestsTo('/mem/search').slice(before).map((r) => r.body);
    expect(sent).toEqual([
      { query: 'deploy failed with STRIPE_SECRET_KEY=[REDACTED:stripe-key]', topK: 5 },
      { query: 'pelican [REDACTED:github-token]', topK: 5 },
    ]);
  });

  it('masks credentials in what the gateway answers: search items, the profile and the context text', async () => {
    // Another client (or an older one) uploaded text it never masked.
    const github = 'ghp_16C7e42F292c6912E7710c838347Ae178B4a';
    const openai = 'sk-proj-4fT9qLmZ2xR8vK1nB7cW3yH6dJ0sA5gE';
    const seed = new GatewayClient({ apiBase: gateway.url, apiKey: gateway.token, userAgent: 'everme-test' });
    await seed.postAgentMemory({
      conversationId: 'minimaxcode-mvs_0000000000000000000000000000beef',
      flush: true,
      messages: [{ role: 'user', timestamp: Date.UTC(2026, 8, 21, 9, 30), content: `the albatross deploy token is ${github}` }],
    });
    gateway.setContext({ profile: { explicit_info: [`uses the key ${openai}`], implicit_traits: [{ note: `pushes with ${github}` }] }, context: `albatross notes: password=${openai}` });
    try {
      for (const [tool, args] of [['mem_search', { query: 'albatross' }], ['mem_context', { query: 'albatross' }]] as const) {
        const result = (await connected.client.callTool({ name: tool, arguments: args })) as CallToolResult;
        const everything = JSON.stringify(result);
        expect(result.isError, tool).not.toBe(true);
        expect(everything, tool).toContain('albatross');
        expect(everything, tool).toContain('[REDACTED:');
        for (const secret of [github, openai]) expect(everything.includes(secret), `${tool} shows ${secret}`).toBe(false);
      }
    } finally {
      gateway.reset();
    }
  });

  it('answers from the embedded store alone when the gateway fails, says so, and keeps serving', async () => {
    gateway.failNext({ kind: 'http', status: 401, path: '/mem/search' });
    const result = (await connected.client.callTool({ name: 'mem_search', arguments: { query: 'retry backoff' } })) as CallToolResult;
    expect(result.isError).not.toBe(true);
    const text = result.content[0]?.type === 'text' ? result.content[0].text : '';
    expect(text).toContain("The EverMe gateway could not be asked (auth): these are the local store's matches only.");
    expect(text).toContain(conversationIdFor(1));
    expect(result.structuredContent).toMatchObject({ gatewayFailure: { type: 'auth' } });
    expect(JSON.stringify(result)).not.toContain(gateway.token);
    const next = await call(connected.client, 'mem_search', { query: 'pelican' });
    expect(next.isError).toBe(false);
    expect(next.text).not.toContain('could not be asked');
  });

  it('turns a gateway failure into a tool error when the embedded store holds nothing to answer from', async () => {
    const empty = await connect([], { cwd: root, env: { EVERME_API_KEY: gateway.token, EVERME_API_BASE: gateway.url, EVERME_STATE_DIR: tempDir() } });
    try {
      gateway.failNext({ kind: 'http', status: 401, path: '/mem/search' });
      const failed = await call(empty.client, 'mem_search', { query: 'pelican' });
      expect(failed.isError).toBe(true);
      expect(failed.text).toContain('(auth)');
      expect(failed.text).not.toContain(gateway.token);
    } finally {
      await empty.client.close();
    }
  });
});
