import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayClient } from '../src/sinks/gateway/gateway-client.js';
import { cleanEnv, ensureBuilt, runJs } from './recall-cli.js';
import { buildStore, conversationIdFor, corpus, sessionIdFor, type BuiltStore } from './recall-store-fixture.js';
import { startFakeGateway, type FakeGateway } from './support/fake-gateway.js';
import { tempDir } from './transcript-helpers.js';

let root: string;
let projects: string;
let store: BuiltStore;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The query goes after `--`, as a user would pass one that starts with `-`. */
function search(query: string, flags: string[] = [], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [runJs, 'search', ...flags, '--data-dir', store.dataDir, '--', query],
      { env: cleanEnv({ EVERME_STATE_DIR: store.stateDir, ...env }), timeout: 60_000, encoding: 'utf8' },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
    );
  });
}

function envelope(run: Run): { ok: boolean; data?: { results: Array<Record<string, unknown>> }; meta?: Record<string, unknown>; error?: { type: string } } {
  const lines = run.stdout.split('\n').filter(Boolean);
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!) as ReturnType<typeof envelope>;
}

beforeAll(async () => {
  ensureBuilt('search');
  root = tempDir();
  projects = path.join(root, 'projects');
  store = await buildStore(corpus(projects), root);
}, 300_000);

afterAll(() => {
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

describe('everme search, embedded store', () => {
  it('--json prints one envelope whose results carry exactly the documented fields', async () => {
    const run = await search('迁移', ['--json']);
    expect(run.code).toBe(0);
    const env = envelope(run);
    expect(env.ok).toBe(true);
    expect(env.data!.results).toHaveLength(1);
    const [hit] = env.data!.results;
    // `id` and `source` joined the documented fields with issue #26.
    expect(Object.keys(hit!).sort()).toEqual(['conversationId', 'id', 'role', 'score', 'sessionId', 'snippet', 'source', 'timestamp']);
    expect(hit!.id).toMatch(/^m\d+$/);
    expect(hit).toMatchObject({
      source: 'local',
      conversationId: conversationIdFor(2),
      sessionId: sessionIdFor(2),
      role: 'assistant',
      timestamp: Date.UTC(2026, 8, 10, 9, 0, 1),
      snippet: '好的，我已经把数据库**迁移**脚本改成了批量提交。',
    });
    expect(hit!.score).toBeGreaterThan(0);
  });

  it('ranks and renders hits as text on stdout', async () => {
    const run = await search('payload');
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^1\. m\d+ · (user|assistant) · 2026-09-10 0\d:00 UTC · minimaxcode-mvs_0+[12] · .* · score \d+\.\d\d$/);
    expect(run.stdout).toContain('**payload**');
    expect(run.stdout).toContain(conversationIdFor(1));
    expect(run.stdout).toContain(conversationIdFor(2));
  });

  it('finds English glued to Chinese, Japanese and Korean substrings', async () => {
    const runs = await Promise.all(['payload优先', 'マイグレ', '백업'].map((q) => search(q, ['--json'])));
    const ids = runs.map((run) => envelope(run).data!.results.map((r) => r.conversationId));
    expect(ids).toEqual([[conversationIdFor(2)], [conversationIdFor(3), conversationIdFor(3)], [conversationIdFor(4), conversationIdFor(4)]]);
  });

  it('treats FTS syntax and odd input as text, never as an error', async () => {
    const queries = ['"', '*', 'a:b', '(x', 'NEAR(a b)', 'x OR y', '-x', 'zebracache '.repeat(182).slice(0, 2000)];
    const runs = await Promise.all(queries.map((q) => search(q, ['--json'])));
    runs.forEach((run, i) => {
      expect(run.code, queries[i]).toBe(0);
      expect(envelope(run).ok).toBe(true);
    });
    const found = runs.map((run) => envelope(run).data!.results.map((r) => r.conversationId));
    expect(found[0]).toEqual([]);
    expect(found[1]).toEqual([]);
    for (const ids of found.slice(2)) expect(ids).toContain(conversationIdFor(5));
  });

  it('--project keeps the project and what lies under it, not a sibling sharing its prefix', async () => {
    const env = envelope(await search('flamingo OR zebracache OR payload', ['--project', path.join(projects, 'widget'), '--json']));
    const ids = new Set(env.data!.results.map((r) => r.conversationId));
    expect(ids).toEqual(new Set([conversationIdFor(1), conversationIdFor(2), conversationIdFor(5)]));
  });

  it('--project and --data-dir take ~ for the home directory, as export and forget do (bash leaves a ~ after = alone)', async () => {
    const home = { HOME: root };
    const env = envelope(await search('flamingo OR zebracache OR payload', ['--project=~/projects/widget', '--json'], home));
    expect(new Set(env.data!.results.map((r) => r.conversationId))).toEqual(new Set([conversationIdFor(1), conversationIdFor(2), conversationIdFor(5)]));

    const viaTilde = await new Promise<Run>((resolve) => {
      const args = [runJs, 'search', `--data-dir=~/${path.relative(root, store.dataDir)}`, '--json', '--', 'payload'];
      execFile(process.execPath, args, { env: cleanEnv({ EVERME_STATE_DIR: store.stateDir, ...home }), timeout: 60_000, encoding: 'utf8' }, (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
      );
    });
    expect(viaTilde.code, viaTilde.stderr).toBe(0);
    expect(envelope(viaTilde).data!.results.length).toBeGreaterThan(0);
  });

  it('--limit bounds the results', async () => {
    const env = envelope(await search('payload', ['--limit', '1', '--json']));
    expect(env.data!.results).toHaveLength(1);
  });

  it('rejects a --limit outside 1–50 or not a whole number with invalid_args and exit 2', async () => {
    const limits = ['0', '51', 'abc', '2.5', '-1'];
    const runs = await Promise.all(limits.map((limit) => search('payload', [`--limit=${limit}`, '--json'])));
    runs.forEach((run, i) => {
      expect(run.code, limits[i]).toBe(2);
      expect(envelope(run)).toMatchObject({ ok: false, error: { type: 'invalid_args' } });
    });
    const text = await search('payload', ['--limit', '51']);
    expect(text.code).toBe(2);
    expect(text.stdout).toBe('');
    expect(text.stderr).toMatch(/^error: --limit must be a whole number from 1 to 50/m);
  });

  it('rejects an empty query with invalid_args', async () => {
    const run = await search('  ', ['--json']);
    expect(run.code).toBe(2);
    expect(envelope(run)).toMatchObject({ ok: false, error: { type: 'invalid_args' } });
  });

  it('says on stderr when nothing matches, keeping stdout empty', async () => {
    const run = await search('nonexistentword');
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('no memories match "nonexistentword"');
  });

  it('without a database answers no results, suggests an import, and creates nothing', async () => {
    const stateDir = path.join(root, 'no-state');
    const text = await search('payload', [], { EVERME_STATE_DIR: stateDir });
    expect(text.code).toBe(0);
    expect(text.stdout).toBe('');
    expect(text.stderr).toContain('no memories yet; run `everme import --since');
    const json = await search('payload', ['--json'], { EVERME_STATE_DIR: stateDir });
    expect(json.code).toBe(0);
    expect(envelope(json)).toMatchObject({ ok: true, data: { results: [] } });
    expect(fs.existsSync(stateDir)).toBe(false);
  });
});

describe('everme search with the EverMe gateway configured', () => {
  let gateway: FakeGateway;
  let keyEnv: Record<string, string>;

  beforeAll(async () => {
    gateway = await startFakeGateway();
    keyEnv = { EVERME_API_KEY: gateway.token, EVERME_API_BASE: gateway.url };
    const seed = new GatewayClient({ apiBase: gateway.url, apiKey: gateway.token, userAgent: 'everme-test' });
    await seed.postAgentMemory({
      conversationId: 'minimaxcode-mvs_0000000000000000000000000000abcd',
      flush: false,
      messages: [
        { role: 'user', timestamp: Date.UTC(2026, 8, 20, 9, 30), content: 'plan the pelican rollout' },
        { role: 'assistant', timestamp: Date.UTC(2026, 8, 20, 9, 31), content: 'The pelican rollout starts on Monday.', turnComplete: true },
      ],
    });
  });

  afterAll(async () => {
    await gateway?.close();
  });

  it('asks /mem/search and maps its items into the same result shape', async () => {
    const run = await search('pelican', ['--json', '--limit', '7'], keyEnv);
    expect(run.code).toBe(0);
    const env = envelope(run);
    expect(env.meta).toMatchObject({ sink: 'everme' });
    expect(env.data!.results).toEqual([
      {
        id: null,
        source: 'gateway',
        conversationId: 'minimaxcode-mvs_0000000000000000000000000000abcd',
        sessionId: 'mvs_0000000000000000000000000000abcd',
        role: 'user',
        timestamp: Date.UTC(2026, 8, 20, 9, 30),
        snippet: 'plan the **pelican** rollout',
        score: 1,
      },
      {
        id: null,
        source: 'gateway',
        conversationId: 'minimaxcode-mvs_0000000000000000000000000000abcd',
        sessionId: 'mvs_0000000000000000000000000000abcd',
        role: 'assistant',
        timestamp: Date.UTC(2026, 8, 20, 9, 31),
        snippet: 'The **pelican** rollout starts on Monday.',
        score: 1,
      },
    ]);
    expect(gateway.requestsTo('/mem/search').at(-1)?.body).toEqual({ query: 'pelican', topK: 7 });
    expect(run.stdout).not.toContain(gateway.token);
  });

  it('masks a credential in the query before it is sent, as stored text is masked', async () => {
    const run = await search('why does DB_PASSWORD=Zl4bN1gKq9Le5IwR fail with ghp_J7mE1mR2uP5fC7iQ8qL1zZ5wS0yJ5rW4pI4k', ['--json'], keyEnv);
    expect(run.code).toBe(0);
    expect(gateway.requestsTo('/mem/search').at(-1)?.body).toEqual({
      query: 'why does DB_PASSWORD=[REDACTED:password] fail with [REDACTED:github-token]',
      topK: 10,
    });
  });

  it('--sink local searches the embedded store even with a key configured', async () => {
    const before = gateway.requestsTo('/mem/search').length;
    const env = envelope(await search('payload优先', ['--sink', 'local', '--json'], keyEnv));
    expect(env.data!.results.map((r) => r.conversationId)).toEqual([conversationIdFor(2)]);
    expect(gateway.requestsTo('/mem/search')).toHaveLength(before);
  });

  it('--sink everme without a key is not_logged_in (exit 3)', async () => {
    const run = await search('pelican', ['--sink', 'everme', '--json']);
    expect(run.code).toBe(3);
    expect(envelope(run)).toMatchObject({ ok: false, error: { type: 'not_logged_in' } });
  });

  it('with the gateway failing, answers from the embedded store alone and says so; with no store, the failure', async () => {
    gateway.failNext({ kind: 'http', status: 401, path: '/mem/search' });
    const run = await search('retry backoff', ['--json'], keyEnv);
    expect(run.code).toBe(0);
    const env = envelope(run);
    expect(env.meta).toMatchObject({ sink: 'everme', gatewayFailure: { type: 'auth' } });
    expect(env.data!.results.length).toBeGreaterThan(0);
    expect(env.data!.results.every((r) => r.source === 'local')).toBe(true);

    gateway.failNext({ kind: 'http', status: 401, path: '/mem/search' });
    const text = await search('retry backoff', [], keyEnv);
    expect(text.code).toBe(0);
    expect(text.stderr).toMatch(/^warning: The EverMe gateway could not be asked \(auth\): these are the local store's matches only\./m);
    expect(text.stdout).toContain('retry');

    // Nothing stored to fall back on: the gateway's failure, with its exit code.
    gateway.failNext({ kind: 'http', status: 401, path: '/mem/search' });
    const empty = await search('pelican', ['--json'], { ...keyEnv, EVERME_STATE_DIR: tempDir() });
    expect(empty.code).toBe(3);
    expect(envelope(empty)).toMatchObject({ ok: false, error: { type: 'auth' } });
  });
  it('with the gateway rate limiting, answers from the embedded store at once, without waiting out Retry-After', async () => {
    const before = gateway.requestsTo('/mem/search').length;
    gateway.failNext({ kind: 'rate_limit', retryAfter: '30', path: '/mem/search' });
    const started = Date.now();
    const run = await search('retry backoff', ['--json'], keyEnv);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(run.code).toBe(0);
    const env = envelope(run);
    expect(env.meta).toMatchObject({ sink: 'everme', gatewayFailure: { type: 'rate_limit' } });
    expect(env.data!.results.length).toBeGreaterThan(0);
    expect(env.data!.results.every((r) => r.source === 'local')).toBe(true);
    expect(gateway.requestsTo('/mem/search')).toHaveLength(before + 1);
  });
});
