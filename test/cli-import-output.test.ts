import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useCliTree } from './support/cli-tree.js';
import { cliEntry } from './support/cli.js';
import { openDatabase } from '../src/store/database.js';
import { LocalStore } from '../src/store/local-store.js';
import type { FakeGateway } from './support/fake-gateway.js';
import { cliEnv, envelopeOf, runCli } from './support/cli-process.js';
import { appendLines, conversationFor, expectedTurns, turnEnvelopes, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { gatewaySignatures, storeCounts } from './support/delivery-harness.js';

let gateway: FakeGateway;
let root: string;
let dataDir: string;
let stateDir: string;

useCliTree((tree) => {
  ({ gateway, root, dataDir, stateDir } = tree);
});

function localEnv(): NodeJS.ProcessEnv {
  return cliEnv(root, { EVERME_STATE_DIR: stateDir });
}
function gatewayEnv(): NodeJS.ProcessEnv {
  return cliEnv(root, { EVERME_STATE_DIR: stateDir, EVERME_API_KEY: gateway.token, EVERME_API_BASE: gateway.url });
}
const importArgs = (...more: string[]) => ['import', '--since', '2026-09-01', '--data-dir', dataDir, ...more];

function sha1(file: string): string {
  return createHash('sha1').update(fs.readFileSync(file)).digest('hex');
}

describe('everme import output', () => {
  it('prints exactly one JSON envelope on stdout with --json, and nothing else there', async () => {
    writeMessagesSession(dataDir, 1, turnsEnvelopes('j', [0, 1]));
    writeMessagesSession(dataDir, 2, turnsEnvelopes('k', [0]));
    const result = await runCli(importArgs('--sink', 'local', '--json'), localEnv());
    expect(result.code).toBe(0);
    const envelope = envelopeOf(result);
    expect(envelope).toMatchObject({
      ok: true,
      data: { mode: 'import', sink: 'local', sessions: { scanned: 2, delivered: 2, failed: 0 }, messages: 12, warnings: {} },
    });
    // No progress chatter in JSON mode, on either stream.
    expect(result.stderr).toBe('');
  });

  it.skipIf(spawnSync('script', ['--version']).status !== 0)('on a terminal, draws a progress bar (sessions, messages, bytes, ETA) on stderr, never on stdout', () => {
    writeMessagesSession(dataDir, 1, turnsEnvelopes('p', [0, 1]));
    writeMessagesSession(dataDir, 2, turnsEnvelopes('q', [0]));
    const stdoutFile = path.join(root, 'tty-stdout.txt');
    const command = [process.execPath, cliEntry, ...importArgs('--sink', 'local')].map((a) => `'${a}'`).join(' ');
    // stderr alone goes to the pseudo-terminal `script` makes; stdout (the summary) to a file.
    const r = spawnSync('script', ['-qec', `${command} > '${stdoutFile}'`, '/dev/null'], { env: localEnv(), encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stdout).toBe(0);
    expect(r.stdout).toMatch(/import \[[^\]]*\] \d\/2 sessions \| \d+ messages \| [\d.]+ (B|KiB) \| ETA/);
    // The bar, not the plain lines of a log.
    expect(r.stdout).not.toMatch(/^import: \d+\/\d+ sessions/m);
    const stdout = fs.readFileSync(stdoutFile, 'utf8');
    expect(stdout).not.toContain('sessions |');
    expect(stdout).toContain('sessions: 2 scanned, 2 delivered');
  });

  it('without a terminal, prints plain progress lines on stderr and a summary that ends with the warnings line', async () => {
    const dir = writeMessagesSession(dataDir, 1, turnsEnvelopes('t', [0, 1]));
    fs.appendFileSync(path.join(dir, 'messages.jsonl'), '{"broken\n');
    writeMessagesSession(dataDir, 2, turnsEnvelopes('u', [0]));
    const result = await runCli(importArgs('--sink', 'local'), localEnv());
    expect(result.code).toBe(0);

    expect(result.stderr).not.toMatch(/\x1b\[/);
    expect(result.stderr).toMatch(/^import: 2\/2 sessions, 12 messages, [\d.]+ (B|KiB)$/m);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('import → local since 2026-09-01');
    expect(lines).toContain('sessions: 2 scanned, 2 delivered, 0 unchanged, 0 empty, 0 failed');
    expect(lines).toContain('messages: 12 delivered in 2 requests');
    expect(lines.at(-1)).toBe('warnings: invalid_json 1 (see `everme report`)');

    const again = await runCli(importArgs('--sink', 'local'), localEnv());
    expect(again.stdout).toContain('sessions: 2 scanned, 0 delivered, 2 unchanged, 0 empty, 0 failed');
    expect(again.stdout.trimEnd().split('\n').at(-1)).toBe('warnings: none');
  });

  it("with two sinks, the top messages line names the sink it counts, each sink's line its own", async () => {
    writeMessagesSession(dataDir, 1, turnsEnvelopes('g', [0]));
    expect((await runCli(importArgs(), { ...gatewayEnv(), EVERME_LOCAL_STORE: '0' })).code).toBe(0);
    // The store, enabled again, catches up on the session the gateway already holds.
    const both = await runCli(importArgs(), gatewayEnv());
    expect(both.code).toBe(0);
    const lines = both.stdout.trimEnd().split('\n');
    expect(lines).toContain('sessions: 1 scanned, 1 delivered, 0 unchanged, 0 empty, 0 failed');
    expect(lines).toContain('messages (everme): 0 delivered in 0 requests');
    expect(lines).toContain('  everme: 1 unchanged; 0 messages delivered in 0 requests');
    expect(lines).toContain('  local: 1 delivered; 4 messages delivered in 1 requests');
  });

  it('defaults to the everme sink when <data>/everme.env holds a key, and to the embedded store otherwise', async () => {
    writeMessagesSession(dataDir, 1, turnsEnvelopes('d', [0]));
    const local = await runCli(importArgs('--json'), localEnv());
    expect(envelopeOf(local).data).toMatchObject({ sink: 'local', messages: 4 });
    expect(gateway.requests).toHaveLength(0);

    fs.writeFileSync(path.join(dataDir, 'everme.env'), `EVERME_API_KEY=${gateway.token}\nEVERME_API_BASE=${gateway.url}\n`);
    // The base too comes from the file alone.
    const remote = await runCli(importArgs('--json'), cliEnv(root, { EVERME_STATE_DIR: stateDir, EVERME_API_BASE: null }));
    expect(envelopeOf(remote).data).toMatchObject({ sink: 'everme', messages: 4 });
    expect(gatewaySignatures(gateway, conversationFor(1))).toEqual(expectedTurns('d', [0]));

    // --sink overrides the default.
    const forced = await runCli(importArgs('--json', '--sink', 'local'), localEnv());
    expect(envelopeOf(forced).data).toMatchObject({ sink: 'local', messages: 0, sessions: { unchanged: 1 } });
  });

  it('exits 1 with a conflict envelope when some sessions fail, after committing the others', async () => {
    for (const n of [1, 2, 3]) writeMessagesSession(dataDir, n, turnsEnvelopes(`p${n}`, [0, 1]));
    gateway.failNext({ kind: 'http', status: 500, path: '/mem/agent-memory' });
    const result = await runCli(importArgs('--sink', 'everme', '--json', '--concurrency', '1'), gatewayEnv());
    expect(result.code).toBe(1);
    const envelope = envelopeOf(result);
    expect(envelope.ok).toBe(false);
    expect(envelope.error).toMatchObject({ type: 'conflict', detail: { failed: 1, total: 3 } });
    expect(gateway.messagesFor(conversationFor(1))).toHaveLength(0);
    expect(gatewaySignatures(gateway, conversationFor(2))).toEqual(expectedTurns('p2', [0, 1]));
    expect(gatewaySignatures(gateway, conversationFor(3))).toEqual(expectedTurns('p3', [0, 1]));

    const rerun = await runCli(importArgs('--sink', 'everme', '--json'), gatewayEnv());
    expect(rerun.code).toBe(0);
    for (const n of [1, 2, 3]) expect(gatewaySignatures(gateway, conversationFor(n))).toEqual(expectedTurns(`p${n}`, [0, 1]));
  });

  it('keeps stdout empty when the gateway is down, and says why on stderr with a non-zero exit', async () => {
    writeMessagesSession(dataDir, 1, turnsEnvelopes('x', [0]));
    await gateway.setDown(true);
    try {
      const result = await runCli(importArgs('--sink', 'everme'), gatewayEnv());
      expect(result.code).toBe(4);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/^error: All 1 sessions failed: The EverMe gateway refused the connection$/m);
      expect(result.stderr).toMatch(/^hint: /m);
      expect(result.stderr).toContain('sessions: 1 scanned, 0 delivered, 0 unchanged, 0 empty, 1 failed');
    } finally {
      await gateway.setDown(false);
    }
  });
});

describe('everme import --dry-run', () => {
  it('touches neither the network nor the state when there is no state yet', async () => {
    writeMessagesSession(dataDir, 1, turnsEnvelopes('dry', [0, 1]));
    const result = await runCli(importArgs('--sink', 'everme', '--dry-run', '--json'), gatewayEnv());
    expect(result.code).toBe(0);
    expect(envelopeOf(result).data).toMatchObject({ dryRun: true, messages: 8, sessions: { delivered: 1 } });
    expect(gateway.requests).toHaveLength(0);
    expect(fs.existsSync(path.join(stateDir, 'everme.db'))).toBe(false);
  });

  it('says its sessions would be delivered, as its messages, never that they were', async () => {
    writeMessagesSession(dataDir, 1, turnsEnvelopes('dry', [0, 1]));
    const result = await runCli(importArgs('--sink', 'local', '--dry-run'), localEnv());
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^sessions: 1 scanned, 1 would deliver, 0 unchanged, 0 empty, 0 failed$/m);
    expect(result.stdout).toMatch(/^messages: 8 would deliver in \d+ requests$/m);
    expect(result.stdout).not.toMatch(/\bdelivered\b/);
  });

  it('leaves an existing database byte for byte unchanged', async () => {
    const dir = writeMessagesSession(dataDir, 1, turnsEnvelopes('dry', [0]));
    expect((await runCli(importArgs('--sink', 'local'), localEnv())).code).toBe(0);
    appendLines(path.join(dir, 'messages.jsonl'), turnEnvelopes('dry', 1));
    const db = path.join(stateDir, 'everme.db');
    const files = fs.readdirSync(stateDir).sort();
    const before = sha1(db);

    const result = await runCli(importArgs('--sink', 'local', '--dry-run', '--json'), localEnv());
    expect(envelopeOf(result).data).toMatchObject({ dryRun: true, messages: 4 });
    expect(sha1(db)).toBe(before);
    expect(fs.readdirSync(stateDir).sort()).toEqual(files);
    expect(storeCounts(stateDir).messages).toBe(4);
  });
});

describe('the embedded store after a CLI import', () => {
  it('finds a two-character Chinese substring', async () => {
    writeMessagesSession(dataDir, 1, turnsEnvelopes('zh', [0], { question: '我们需要清理缓存数据库的旧记录' }));
    writeMessagesSession(dataDir, 2, turnsEnvelopes('other', [0], { question: '部署到测试环境' }));
    expect((await runCli(importArgs('--sink', 'local'), localEnv())).code).toBe(0);
    const db = openDatabase(stateDir, { readonly: true });
    try {
      const hits = new LocalStore(db).search('缓存');
      expect(hits.map((h) => h.conversationId)).toEqual([conversationFor(1)]);
      expect(hits[0]!.snippet).toContain('缓存');
    } finally {
      db.close();
    }
  });
});
