/**
 * The findings of issue #29, each reproduced the way it was found (the real CLI as a process, real
 * files, the hook with the host's payload shapes) and now answered. The two tables of
 * gate-entry-points.test.ts and gate-exit-points.test.ts cover the same ground across every path;
 * these are the exact reproductions.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { conversationIdFor } from '../src/core/conversation-id.js';
import { readHookEvents } from '../src/hook/hook-events.js';
import { IGNORE_FILE } from '../src/config/exclude.js';
import { cliEnv, envelopeOf, runCli, type CliResult } from './support/cli-process.js';
import { useCliTree, type CliTree } from './support/cli-tree.js';
import { activeWorkerSlots, hookEnv, runHookCli, todayUtc, waitForWorkers } from './support/hook-harness.js';
import { hostPayload } from './support/host-payloads.js';
import { makeSession } from './transcript-helpers.js';

let tree: CliTree;
useCliTree((t) => {
  tree = t;
});

const SID = 'mvs_29292929292929292929292929292901';
const SINCE = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);

function writeChatSession(sessionId: string, words: string, time = '10-00-00-001'): void {
  const t = Date.now() - 60_000;
  const lines = [
    { message_id: 'm1', turn_id: 't1', message: { role: 'user', content: [{ type: 'text', text: `question ${words}` }], timestamp: t } },
    { message_id: 'm2', turn_id: 't1', message: { role: 'assistant', content: [{ type: 'text', text: `answer ${words}` }], stopReason: 'stop', timestamp: t + 1 } },
  ];
  makeSession(tree.dataDir, todayUtc(), sessionId, { createdAtMs: t, time, files: { 'messages.jsonl': `${lines.map((l) => JSON.stringify(l)).join('\n')}\n` } });
}

function localEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return cliEnv(tree.root, { EVERME_STATE_DIR: tree.stateDir, ...extra });
}

function hookVars(extra: Record<string, string> = {}, gateway = false): NodeJS.ProcessEnv {
  return hookEnv({
    HOME: tree.root,
    MINIMAX_DATA_DIR: tree.dataDir,
    EVERME_STATE_DIR: tree.stateDir,
    EVERME_MINIMAX_SYNC_INTERVAL_MS: '100',
    EVERME_HOOK_WATCHDOG_MS: '10000',
    ...(gateway ? { EVERME_API_KEY: tree.gateway.token, EVERME_API_BASE: tree.gateway.url } : {}),
    ...extra,
  });
}

async function json(args: string[], env: NodeJS.ProcessEnv): Promise<{ run: CliResult; envelope: ReturnType<typeof envelopeOf> }> {
  const run = await runCli([...args, '--json'], env);
  return { run, envelope: envelopeOf(run) };
}

describe('finding 1: an excluded workspace named only by the hook stays out of a later sync', { timeout: 120_000 }, () => {
  it.each(['local', 'everme'] as const)('SessionStart and Stop with cwd=<ws>/secret, then sync (%s)', async (sink) => {
    const ws = path.join(tree.root, 'ws');
    fs.mkdirSync(path.join(ws, 'secret'), { recursive: true });
    writeChatSession(SID, 'topsecret alpha');
    const exclude = { EVERME_EXCLUDE: path.join(ws, 'secret') };
    for (const event of ['SessionStart', 'Stop'] as const) {
      const run = await runHookCli(hostPayload(event, SID, { cwd: path.join(ws, 'secret') }), hookVars(exclude, sink === 'everme'));
      expect(run.code).toBe(0);
    }
    expect(readHookEvents(tree.stateDir).map((e) => e.reason)).toEqual(['excluded', 'excluded']);
    const env = sink === 'everme' ? { ...tree.env, ...exclude } : localEnv(exclude);
    const { envelope } = await json(['sync', '--since', SINCE, '--data-dir', tree.dataDir], env);
    expect(envelope.data).toMatchObject({ messages: 0, workspaceUnknown: 0, sessions: { delivered: 0, excluded: 1 } });
    expect(tree.gateway.messagesFor(conversationIdFor(SID))).toEqual([]);
    const found = await json(['search', 'alpha', '--data-dir', tree.dataDir, '--sink', 'local'], env);
    expect(found.envelope.data).toEqual({ results: [] });
    const report = await json(['report', '--data-dir', tree.dataDir], env);
    expect(report.envelope.data!.excluded).toMatchObject([{ sessionId: SID, workspaceDir: path.join(ws, 'secret') }]);
  });
});

describe('finding 4: exclusion by real path, by .everme-ignore above, and relative patterns', { timeout: 120_000 }, () => {
  it('a hook cwd through a symlink, or below a directory holding .everme-ignore, is excluded at once: no worker, nothing sent', async () => {
    const secret = path.join(tree.root, 'secret');
    const link = path.join(tree.root, 'link');
    const notes = path.join(tree.root, 'notes');
    fs.mkdirSync(secret);
    fs.mkdirSync(path.join(notes, 'a', 'b'), { recursive: true });
    fs.symlinkSync(secret, link);
    fs.writeFileSync(path.join(notes, IGNORE_FILE), '');
    writeChatSession(SID, 'linked');
    const viaLink = await runHookCli(hostPayload('PostToolUse', SID, { cwd: link }), hookVars({ EVERME_EXCLUDE: secret }, true));
    const below = await runHookCli(hostPayload('PostToolUse', SID, { cwd: path.join(notes, 'a', 'b') }), hookVars({}, true));
    for (const run of [viaLink, below]) expect([run.code, run.stdout, run.stderr]).toEqual([0, '', '']);
    expect(readHookEvents(tree.stateDir).map((e) => [e.outcome, e.reason])).toEqual([
      ['ignored', 'excluded'],
      ['ignored', 'excluded'],
    ]);
    expect(activeWorkerSlots(tree.stateDir)).toEqual([]);
    expect(tree.gateway.requests).toEqual([]);
  });

  it('a relative EVERME_EXCLUDE from the environment is refused with a clear error, by the CLI and by the hook (which then keeps everything out)', async () => {
    writeChatSession(SID, 'relative');
    const rel = { EVERME_EXCLUDE: 'work/secret' };
    const { run, envelope } = await json(['import', '--since', SINCE, '--data-dir', tree.dataDir], localEnv(rel));
    expect(run.code).toBe(2);
    expect(envelope.error).toMatchObject({ type: 'invalid_args', code: 'exclude_pattern_relative' });
    expect(String(envelope.error!.message)).toContain('work/secret');

    const hook = await runHookCli(hostPayload('PostToolUse', SID, { cwd: path.join(tree.root, 'work', 'secret') }), hookVars(rel, true));
    expect(hook.code).toBe(0);
    expect(hook.stderr).toMatch(/^everme hook: EVERME_EXCLUDE pattern "work\/secret" is a relative path/);
    expect(readHookEvents(tree.stateDir).at(-1)).toMatchObject({ outcome: 'failed' });
    await waitForWorkers(tree.stateDir);
    expect(tree.gateway.requests).toEqual([]);
  });

  it('a relative pattern in <data>/everme.env means the same whatever directory the command starts in', async () => {
    const t = Date.now() - 60_000;
    const sessionId = SID;
    const workspace = path.join(tree.dataDir, 'work', 'secret');
    const events = [
      { kind: 'session.created', sessionId, schemaVersion: 1, eventId: 'e1', seq: 1, createdAtMs: t, record: { sessionId, workspaceDir: workspace } },
      { kind: 'message.pi_history_appended', sessionId, schemaVersion: 1, eventId: 'e2', seq: 2, createdAtMs: t, messages: [{ role: 'user', content: 'kept out', timestamp: t }] },
    ];
    makeSession(tree.dataDir, todayUtc(), sessionId, { createdAtMs: t, files: { 'ledger.jsonl': `${events.map((e) => JSON.stringify(e)).join('\n')}\n` } });
    fs.writeFileSync(path.join(tree.dataDir, 'everme.env'), 'EVERME_EXCLUDE=work/secret\n');
    const { envelope } = await json(['import', '--since', SINCE, '--data-dir', tree.dataDir], localEnv());
    expect(envelope.data).toMatchObject({ sessions: { delivered: 0, excluded: 1 } });
  });
});

describe('finding 5: import --from-export keeps every line, says what it skipped, and masks', { timeout: 120_000 }, () => {
  const line = (key: string, content: string): string =>
    JSON.stringify({ conversationId: 'x', conversation: { sessionId: 'x', source: 'messages' }, key, message: { role: 'user', timestamp: 1_790_000_000_000, content } });

  it('a valid last line without a newline is imported; a line over the cap is reported as oversized_line; spans and credentials are masked', async () => {
    const file = path.join(tree.root, 'export.jsonl');
    const big = line('k2', 'x'.repeat(5000));
    fs.writeFileSync(file, `${line('k1', 'first <private>hidden-thing</private> AKIAIOSFODNN7EXAMPLE password=hunter2')}\n${big}\n${line('k3', 'the last line')}`);
    const { run, envelope } = await json(['import', '--from-export', file, '--data-dir', tree.dataDir], localEnv({ EVERME_MAX_LINE_BYTES: '4096' }));
    expect(run.code, run.stderr).toBe(0);
    expect(envelope.data).toMatchObject({ conversations: 1, messages: 2, warnings: { oversized_line: 1 } });
    const exported = await runCli(['export', '--conversation', 'x', '--data-dir', tree.dataDir], localEnv());
    const contents = exported.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { message: { content: string } }).message.content);
    expect(contents).toEqual(['first [PRIVATE] [REDACTED:aws-access-key] password=[REDACTED:password]', 'the last line']);
  });
});

describe('finding 7: CLI edges', { timeout: 180_000 }, () => {
  it('an unknown command prints one envelope under --json (invalid_args, exit 2), and error/hint otherwise', async () => {
    const run = await runCli(['frobnicate', '--json'], localEnv());
    expect(run.code).toBe(2);
    expect(envelopeOf(run)).toMatchObject({ ok: false, error: { type: 'invalid_args', code: 'unknown_command', message: 'Unknown command: frobnicate' } });
    const text = await runCli(['frobnicate'], localEnv());
    expect([text.code, text.stdout]).toEqual([2, '']);
    expect(text.stderr).toMatch(/^error: Unknown command: frobnicate\nhint: Commands: [a-z, ]*\bimport\b[a-z, ]*\bsync\b/);
  });

  const COMMANDS: string[][] = [
    ['import', '--since', '2026-09-01'],
    ['import', '--from-export', '/nonexistent.jsonl'],
    ['sync'],
    ['search', 'alpha'],
    ['status'],
    ['report'],
    ['export', '--out', '/tmp/everme-unused-out'],
    ['forget', '--conversation', 'x', '--yes'],
    ['show', SID],
    ['get', 'm1'],
    ['install'],
    ['uninstall'],
    // Not `mcp`: a host starts it, and a server that exits before its handshake shows there only as
    // failed to start. It serves and answers this same error to every tool call (mcp-e2e.test.ts).
  ];

  it.each(COMMANDS.map((c) => [c.join(' '), c]))('a missing data dir is the same io error: %s', async (_name, args) => {
    const missing = path.join(tree.root, 'missing');
    const { run, envelope } = await json([...args, '--data-dir', missing], localEnv());
    expect(run.code).toBe(5);
    expect(envelope.error).toEqual({
      type: 'io',
      code: 'data_dir_missing',
      message: `MiniMax Code data directory not found: ${missing}`,
      hint: 'Pass --data-dir, or set MINIMAX_DATA_DIR to the directory that holds v2/sessions.',
      detail: { path: missing },
    });
  });

  it('a conversation imported under the id x is forgotten and exported by --conversation x, as it was shown', async () => {
    const file = path.join(tree.root, 'export.jsonl');
    fs.writeFileSync(file, `${JSON.stringify({ conversationId: 'x', key: 'k1', message: { role: 'user', timestamp: 1_790_000_000_000, content: 'imported words' } })}\n`);
    expect((await json(['import', '--from-export', file, '--data-dir', tree.dataDir], localEnv())).run.code).toBe(0);
    const exported = await runCli(['export', '--conversation', 'x', '--data-dir', tree.dataDir], localEnv());
    expect(exported.stdout).toContain('imported words');
    const dry = await json(['forget', '--conversation', 'x', '--dry-run', '--data-dir', tree.dataDir], localEnv());
    expect(dry.envelope.data!.conversations).toMatchObject([{ conversationId: 'x', sessionId: 'x', storedMessages: 1 }]);
    const forgotten = await json(['forget', '--conversation', 'x', '--yes', '--data-dir', tree.dataDir], localEnv());
    expect(forgotten.envelope.data).toMatchObject({ removedMessages: 1, conversations: [{ conversationId: 'x' }] });
    const after = await json(['search', 'imported', '--data-dir', tree.dataDir, '--sink', 'local'], localEnv());
    expect(after.envelope.data).toEqual({ results: [] });
    const undo = await json(['forget', '--undo', '--conversation', 'x', '--data-dir', tree.dataDir], localEnv());
    expect(undo.envelope.data).toEqual({ undone: { conversationId: 'x', sessionId: 'x', sessionOnDisk: false } });
    // A bare session id still means its own conversation.
    writeChatSession(SID, 'session words');
    await json(['import', '--since', SINCE, '--data-dir', tree.dataDir, '--sink', 'local'], localEnv());
    const bySession = await json(['forget', '--conversation', SID, '--dry-run', '--data-dir', tree.dataDir], localEnv());
    expect(bySession.envelope.data!.conversations).toMatchObject([{ conversationId: conversationIdFor(SID) }]);
  });

  it('a corrupt database is io/database_unavailable in every command and tool, never SQLite\'s own words', async () => {
    for (let i = 0; i < 40; i++) writeChatSession(`mvs_2929292929292929292929292929${String(i).padStart(4, '0')}`, `words${i} ${'filler '.repeat(200)}`, `10-00-01-${String(i).padStart(3, '0')}`);
    expect((await json(['import', '--since', SINCE, '--sink', 'local', '--data-dir', tree.dataDir], localEnv())).run.code).toBe(0);
    const db = path.join(tree.stateDir, 'everme.db');
    const bytes = fs.readFileSync(db);
    // Keep the header and the schema page; scramble the rest.
    for (let i = 2 * 4096; i < bytes.length; i++) bytes[i] = (i * 7) & 0xff;
    fs.writeFileSync(db, bytes);
    for (const f of ['everme.db-wal', 'everme.db-shm']) fs.rmSync(path.join(tree.stateDir, f), { force: true });

    const runs: Array<[string, string[]]> = [
      ['search', ['search', 'words1', '--sink', 'local']],
      ['export', ['export', '--out', path.join(tree.root, 'out')]],
      ['status', ['status']],
      ['report', ['report']],
      ['sync', ['sync', '--sink', 'local']],
      ['import', ['import', '--since', SINCE, '--sink', 'local']],
      ['forget', ['forget', '--conversation', 'x', '--yes']],
      ['get', ['get', 'm1']],
    ];
    for (const [name, args] of runs) {
      const { run, envelope } = await json([...args, '--data-dir', tree.dataDir], localEnv());
      expect(run.code, name).toBe(5);
      expect(envelope.error, name).toMatchObject({ type: 'io', code: 'database_unavailable', message: 'The everme database is damaged or is not an everme database' });
      expect(JSON.stringify(envelope), name).not.toMatch(/malformed|disk image|SQLITE_(?!CORRUPT|NOTADB)|file is not a database/);
      expect(run.stderr, name).not.toMatch(/malformed|disk image/);
    }
    // The SessionStart hook's one stderr line says the same.
    const hook = await runHookCli(hostPayload('SessionStart', SID, { cwd: tree.root }), hookVars());
    expect(hook.code).toBe(0);
    expect(hook.stdout).toBe('');
    expect(hook.stderr).toBe('everme hook: recall failed: The everme database is damaged or is not an everme database\n');
  });
});
