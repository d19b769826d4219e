import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readHookEvents } from '../src/hook/hook-events.js';
import { IGNORE_FILE } from '../src/config/exclude.js';
import { cliEnv, envelopeOf, runCli } from './support/cli-process.js';
import { useCliTree, type CliTree } from './support/cli-tree.js';
import { CREATED_AT_MS, DAY, conversationFor, jsonlOf, ledgerEvent, sessionIdFor, turnMessages, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { hookEnv, hookStdin, runHookCli, waitForWorkers, writeSession, newSessionId } from './support/hook-harness.js';
import { makeSession } from './transcript-helpers.js';

let tree: CliTree;
useCliTree((t) => {
  tree = t;
});

/**
 * A ledger session in `workspace`. After its `session.created` come lines that are not JSON: reading
 * them would record `invalid_json`, so a report without that warning shows they were never read.
 */
function writeLedger(n: number, workspace: string, opts: { junk?: boolean } = {}): void {
  const sessionId = sessionIdFor(n);
  const events: unknown[] = [
    ledgerEvent(sessionId, 1, 'session.created', { record: { sessionId, workspaceDir: workspace } }),
    ledgerEvent(sessionId, 2, 'message.pi_history_appended', { messages: turnMessages(`x${n}`, 1) }),
  ];
  let text = jsonlOf(events);
  if (opts.junk) text += 'this line is not json\n{"also": broken\n';
  makeSession(tree.dataDir, DAY, sessionId, { createdAtMs: CREATED_AT_MS, time: `09-00-00-${String(n).padStart(3, '0')}`, files: { 'ledger.jsonl': text } });
}

function env(extra: Record<string, string> = {}, withGateway = false): NodeJS.ProcessEnv {
  return withGateway ? { ...tree.env, ...extra } : cliEnv(tree.root, { EVERME_STATE_DIR: tree.stateDir, ...extra });
}

async function cli(args: string[], e: NodeJS.ProcessEnv) {
  return runCli([...args, '--data-dir', tree.dataDir], e);
}

async function json(args: string[], e: NodeJS.ProcessEnv): Promise<Record<string, unknown>> {
  const r = await cli([...args, '--json'], e);
  expect(r.code, r.stderr).toBe(0);
  return envelopeOf(r).data!;
}

async function exportedConversations(e: NodeJS.ProcessEnv): Promise<string[]> {
  const r = await cli(['export'], e);
  return [...new Set(r.stdout.split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { conversationId: string }).conversationId))].sort();
}

describe('excluded workspaces: import', { timeout: 120_000 }, () => {
  it('an EVERME_EXCLUDE glob keeps a session out of the local store, unread past its workspace; the summary and report count it', async () => {
    writeLedger(1, '/home/dev/client-acme/api', { junk: true });
    writeLedger(2, '/home/dev/mine');
    writeMessagesSession(tree.dataDir, 3, turnsEnvelopes('m3', [1]));
    const e = env({ EVERME_EXCLUDE: '/home/dev/client-*' });

    const summary = await json(['import', '--since', '2026-09-01'], e);
    expect(summary).toMatchObject({ sessions: { scanned: 3, delivered: 2, excluded: 1 }, workspaceUnknown: 1 });
    expect(await exportedConversations(e)).toEqual([conversationFor(2), conversationFor(3)].sort());

    const report = await json(['report'], e);
    expect(report.excluded).toMatchObject([{ sessionId: sessionIdFor(1), workspaceDir: '/home/dev/client-acme/api', rule: 'EVERME_EXCLUDE /home/dev/client-*' }]);
    expect(report.workspaceUnknown).toMatchObject([{ sessionId: sessionIdFor(3) }]);
    // Its broken lines were never read: nothing of it in the warnings.
    expect(JSON.stringify(report.conversations)).not.toContain(sessionIdFor(1));

    const text = await cli(['import', '--since', '2026-09-01'], e);
    expect(text.stdout).toMatch(/sessions: 3 scanned, 0 delivered, 2 unchanged, 0 empty, 0 failed, 1 excluded/);
    const reportText = await cli(['report'], e);
    expect(reportText.stdout).toContain('excluded (1 session');
    expect(reportText.stdout).toMatch(/workspace unknown \(1 session\)/);
  });

  it('the same glob, given in <data>/everme.env, keeps it from the gateway', async () => {
    writeLedger(1, '/home/dev/client-acme', { junk: true });
    writeLedger(2, '/home/dev/mine');
    fs.writeFileSync(path.join(tree.dataDir, 'everme.env'), 'EVERME_EXCLUDE=/home/dev/client-*\n');
    const summary = await json(['import', '--since', '2026-09-01'], env({}, true));
    expect(summary).toMatchObject({ sink: 'everme', sessions: { delivered: 1, excluded: 1 } });
    expect([...tree.gateway.conversations.keys()]).toEqual([conversationFor(2)]);
  });
});

describe('excluded workspaces: import by .everme-ignore', { timeout: 120_000 }, () => {
  it('an .everme-ignore at the workspace root keeps the session out of an import, and the report names the file', async () => {
    const ignored = path.join(tree.root, 'private-notes');
    fs.mkdirSync(ignored);
    fs.writeFileSync(path.join(ignored, IGNORE_FILE), '');
    writeLedger(1, ignored, { junk: true });
    writeLedger(2, path.join(tree.root, 'open-project'));
    expect(await json(['import', '--since', '2026-09-01'], env())).toMatchObject({ sessions: { delivered: 1, excluded: 1 } });
    expect(await exportedConversations(env())).toEqual([conversationFor(2)]);
    const report = await json(['report'], env());
    expect(report.excluded).toMatchObject([{ sessionId: sessionIdFor(1), rule: path.join(ignored, IGNORE_FILE) }]);
  });
});

describe('excluded workspaces: sync', { timeout: 120_000 }, () => {
  it('an .everme-ignore at the workspace root keeps the session from both sinks, even as it grows', async () => {
    const ignored = path.join(tree.root, 'ignored-project');
    fs.mkdirSync(ignored);
    fs.writeFileSync(path.join(ignored, IGNORE_FILE), '');
    writeLedger(1, ignored);
    writeLedger(2, path.join(tree.root, 'kept-project'));

    const local = await json(['sync', '--since', '2026-09-01'], env());
    expect(local).toMatchObject({ sessions: { delivered: 1, excluded: 1 } });
    expect(await exportedConversations(env())).toEqual([conversationFor(2)]);

    const gateway = await json(['sync', '--since', '2026-09-01'], env({}, true));
    expect(gateway).toMatchObject({ sessions: { delivered: 1, excluded: 1 } });
    expect([...tree.gateway.conversations.keys()]).toEqual([conversationFor(2)]);

    // More history in the excluded session: still nothing delivered.
    const file = path.join(tree.dataDir, 'v2/sessions', DAY, fs.readdirSync(path.join(tree.dataDir, 'v2/sessions', DAY)).find((d) => d.startsWith('09-00-00-001'))!, 'ledger.jsonl');
    fs.appendFileSync(file, jsonlOf([ledgerEvent(sessionIdFor(1), 3, 'message.pi_history_appended', { messages: turnMessages('x1', 2) })]));
    expect(await json(['sync', '--since', '2026-09-01'], env({}, true))).toMatchObject({ messages: 0, sessions: { excluded: 1 } });
    expect(tree.gateway.messagesFor(conversationFor(1))).toEqual([]);
  });
});

describe('excluded workspaces: the hook', { timeout: 120_000 }, () => {
  function hookEnvFor(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    return hookEnv({
      HOME: tree.root,
      MINIMAX_DATA_DIR: tree.dataDir,
      EVERME_STATE_DIR: tree.stateDir,
      EVERME_MINIMAX_SYNC_INTERVAL_MS: '200',
      EVERME_API_KEY: tree.gateway.token,
      EVERME_API_BASE: tree.gateway.url,
      ...extra,
    });
  }

  it('ignores a session whose cwd is excluded by glob or by .everme-ignore at once: no worker, no state, nothing sent', async () => {
    const sessionId = newSessionId();
    writeSession(tree.dataDir, sessionId, [1]);
    const ignored = path.join(tree.root, 'notes');
    fs.mkdirSync(ignored);
    fs.writeFileSync(path.join(ignored, IGNORE_FILE), '');

    const byGlob = await runHookCli(hookStdin(sessionId, { cwd: '/home/dev/client-acme' }), hookEnvFor({ EVERME_EXCLUDE: '/home/dev/client-*' }));
    const byFile = await runHookCli(hookStdin(sessionId, { cwd: ignored }), hookEnvFor());
    for (const run of [byGlob, byFile]) {
      expect(run.code).toBe(0);
      expect(run.stdout).toBe('');
      expect(run.stderr).toBe('');
    }
    expect(readHookEvents(tree.stateDir).map((e) => [e.outcome, e.reason])).toEqual([
      ['ignored', 'excluded'],
      ['ignored', 'excluded'],
    ]);
    expect(fs.existsSync(path.join(tree.stateDir, 'everme.db'))).toBe(false);
    expect(tree.gateway.requests).toEqual([]);

    // The control: the same payload from a workspace that is not excluded is taken.
    const taken = await runHookCli(hookStdin(sessionId, { cwd: path.join(tree.root, 'work') }), hookEnvFor());
    expect(taken.code).toBe(0);
    await waitForWorkers(tree.stateDir);
    expect(readHookEvents(tree.stateDir).at(-1)?.outcome).toBe('claimed');
    expect(tree.gateway.messagesFor(`minimaxcode-${sessionId}`)).not.toEqual([]);
  });

  it('the cwd a hook recorded places a messages.jsonl session for a later sync, which then excludes it', async () => {
    const sessionId = newSessionId();
    const dir = writeSession(tree.dataDir, sessionId, [1]);
    expect((await runHookCli(hookStdin(sessionId, { cwd: '/home/dev/client-later' }), hookEnvFor())).code).toBe(0);
    await waitForWorkers(tree.stateDir);
    const delivered = tree.gateway.messagesFor(`minimaxcode-${sessionId}`).length;
    expect(delivered).toBeGreaterThan(0);

    fs.appendFileSync(path.join(dir, 'messages.jsonl'), `${JSON.stringify({ message_id: 'msg-late', turn_id: 't', message: { role: 'user', content: 'later', timestamp: Date.now() } })}\n`);
    const today = new Date().toISOString().slice(0, 10);
    const synced = await json(['sync', '--since', today], env({ EVERME_EXCLUDE: '/home/dev/client-*' }, true));
    expect(synced).toMatchObject({ messages: 0, sessions: { excluded: 1 } });
    expect(tree.gateway.messagesFor(`minimaxcode-${sessionId}`)).toHaveLength(delivered);
  });
});
