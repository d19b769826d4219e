/**
 * Every entry point into memory (issue #29): one set of hostile inputs (test/support/hostile-memory.ts)
 * through import, sync, the hook (real-shaped host payloads, the detached worker) and export
 * re-import, into the embedded store and the loopback gateway. What reached the sink is checked at
 * its lowest level: the SQLite file's bytes (WAL included) and every row of every table, and the
 * raw bodies the gateway received. The hostile conversation itself must arrive (masked), so the
 * test cannot pass by delivering nothing.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { conversationIdFor } from '../src/core/conversation-id.js';
import { cliEnv, envelopeOf, runCli } from './support/cli-process.js';
import { useCliTree, type CliTree } from './support/cli-tree.js';
import { hookEnv, runHookCli, todayUtc, waitForWorkers } from './support/hook-harness.js';
import { hostPayload, type HostEvent } from './support/host-payloads.js';
import {
  declareExclusion,
  EXCLUDED_MARKERS,
  FORBIDDEN,
  hostileAgentMessages,
  hostilePiMessages,
  leaks,
  makeWorkspaces,
  storeBytes,
  VISIBLE_MARKER,
  type ExcludedWorkspaces,
} from './support/hostile-memory.js';
import { makeSession } from './transcript-helpers.js';

let tree: CliTree;
useCliTree((t) => {
  tree = t;
});

const T0 = Date.now() - 60_000;
const SINCE = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
const HOSTILE_ID = 'mvs_0000000000000000000000000000a001';
const LINKED_ID = 'mvs_0000000000000000000000000000a002';
const BELOW_ID = 'mvs_0000000000000000000000000000a003';

type Sink = 'local' | 'everme';

function envFor(sink: Sink): NodeJS.ProcessEnv {
  return sink === 'everme' ? tree.env : cliEnv(tree.root, { EVERME_STATE_DIR: tree.stateDir });
}

const envelope = (id: string, message: unknown): string => JSON.stringify({ message_id: id, turn_id: 'turn-1', message });

/** The hostile conversation as a current-era session (its workspace only in a hook's cwd). */
function writeHostileSession(): void {
  const lines = hostilePiMessages(T0).map((m, i) => envelope(`msg-h${i}`, m));
  makeSession(tree.dataDir, todayUtc(), HOSTILE_ID, { createdAtMs: T0, time: '10-00-00-001', files: { 'messages.jsonl': `${lines.join('\n')}\n` } });
}

/** A session of an excluded workspace: a ledger names its workspace; a current-era one only the hook's cwd does. */
function writeExcludedSession(sessionId: string, marker: string, workspace: string, era: 'ledger' | 'messages', time: string): void {
  const messages = [
    { role: 'user', content: [{ type: 'text', text: `question ${marker}` }], timestamp: T0 },
    { role: 'assistant', content: [{ type: 'text', text: `answer ${marker}` }], stopReason: 'stop', timestamp: T0 + 1 },
  ];
  const files: Record<string, string> =
    era === 'messages'
      ? { 'messages.jsonl': `${messages.map((m, i) => envelope(`msg-${marker}-${i}`, m)).join('\n')}\n` }
      : {
          'ledger.jsonl': `${[
            { kind: 'session.created', sessionId, schemaVersion: 1, eventId: 'e1', seq: 1, createdAtMs: T0, record: { sessionId, workspaceDir: workspace } },
            { kind: 'message.pi_history_appended', sessionId, schemaVersion: 1, eventId: 'e2', seq: 2, createdAtMs: T0 + 1, messages },
          ]
            .map((e) => JSON.stringify(e))
            .join('\n')}\n`,
        };
  makeSession(tree.dataDir, todayUtc(), sessionId, { createdAtMs: T0, time, files });
}

/** Every row of every table, as text: what the store logically holds (the bytes may split a long value across pages). */
function storeRows(stateDir: string): string {
  const file = path.join(stateDir, 'everme.db');
  if (!fs.existsSync(file)) return '';
  const db = new Database(file, { readonly: true });
  try {
    const tables = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'messages_fts%'").all();
    return tables.map(({ name }) => JSON.stringify(db.prepare(`SELECT * FROM "${name}"`).all())).join('\n');
  } finally {
    db.close();
  }
}

function gatewayBodies(): string {
  return tree.gateway.requestsTo('/mem/agent-memory').map((r) => JSON.stringify(r.body)).join('\n');
}

/** Nothing forbidden anywhere; the hostile conversation present (masked) in the sink that took it. */
function expectClean(sink: Sink): void {
  const bytes = storeBytes(tree.stateDir);
  const rows = storeRows(tree.stateDir);
  const bodies = gatewayBodies();
  expect(leaks(bytes, FORBIDDEN), 'the SQLite file (with its WAL)').toEqual([]);
  expect(leaks(rows, FORBIDDEN), 'the store\'s rows').toEqual([]);
  expect(leaks(bodies, FORBIDDEN), 'the gateway\'s request bodies').toEqual([]);
  const delivered = sink === 'local' ? rows : bodies;
  expect(delivered).toContain(VISIBLE_MARKER);
  expect(delivered).toContain('[PRIVATE]');
  expect(delivered).toContain('[REDACTED:');
  expect(delivered).toContain('[REDACTED:twilio-auth-token]');
  expect(delivered).toContain('[REDACTED:aws-secret-key]');
}

async function cli(args: string[], sink: Sink): Promise<void> {
  const run = await runCli([...args, '--data-dir', tree.dataDir, '--json'], envFor(sink));
  expect(run.code, run.stderr).toBe(0);
  envelopeOf(run);
}

/** The host firing its events for a session, one hook process each, then the detached workers finishing. */
async function fireHooks(sink: Sink, sessionId: string, cwd: string): Promise<void> {
  const vars: Record<string, string | undefined> = {
    HOME: tree.root,
    MINIMAX_DATA_DIR: tree.dataDir,
    EVERME_STATE_DIR: tree.stateDir,
    EVERME_MINIMAX_SYNC_INTERVAL_MS: '100',
    EVERME_HOOK_WATCHDOG_MS: '10000',
  };
  if (sink === 'everme') Object.assign(vars, { EVERME_API_KEY: tree.gateway.token, EVERME_API_BASE: tree.gateway.url });
  const events: HostEvent[] = ['SessionStart', 'PreToolUse', 'PostToolUse', 'Stop', 'SessionEnd'];
  for (const event of events) {
    const run = await runHookCli(hostPayload(event, sessionId, { cwd }), hookEnv(vars));
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
  }
  await waitForWorkers(tree.stateDir, 60_000);
}

/** A hand-written export: the hostile conversation, and two of excluded workspaces; ids not of our own making. */
function writeExport(ws: ExcludedWorkspaces): string {
  const line = (conversationId: string, key: string, message: unknown, meta?: Record<string, unknown>): string =>
    JSON.stringify({ conversationId, ...(meta ? { conversation: meta } : {}), key, message });
  const hostile = hostileAgentMessages(T0).map((m, i) =>
    line('imported-hostile', `k${i}`, m, i === 0 ? { sessionId: 'imported-hostile', source: 'messages', workspaceDir: ws.open } : undefined),
  );
  const excluded = [
    line('imported-linked', 'k0', { role: 'user', timestamp: T0, content: `question ${EXCLUDED_MARKERS.linked}` }, { sessionId: 's-linked', source: 'messages', workspaceDir: ws.linked }),
    line('imported-below', 'k0', { role: 'user', timestamp: T0, content: `question ${EXCLUDED_MARKERS.below}` }, { sessionId: 's-below', source: 'messages', workspaceDir: ws.below }),
  ];
  const file = path.join(tree.root, 'hostile-export.jsonl');
  fs.writeFileSync(file, `${[...hostile, ...excluded].join('\n')}\n`);
  return file;
}

interface EntryPoint {
  name: string;
  sink: Sink;
  run: (ws: ExcludedWorkspaces) => Promise<void>;
}

const ENTRY_POINTS: EntryPoint[] = [];
for (const sink of ['local', 'everme'] as const) {
  ENTRY_POINTS.push(
    {
      name: `import → ${sink}`,
      sink,
      run: async (ws) => {
        writeHostileSession();
        writeExcludedSession(LINKED_ID, EXCLUDED_MARKERS.linked, ws.linked, 'ledger', '10-00-00-002');
        writeExcludedSession(BELOW_ID, EXCLUDED_MARKERS.below, ws.below, 'ledger', '10-00-00-003');
        await cli(['import', '--since', SINCE], sink);
      },
    },
    {
      name: `sync → ${sink}`,
      sink,
      run: async (ws) => {
        writeHostileSession();
        writeExcludedSession(LINKED_ID, EXCLUDED_MARKERS.linked, ws.linked, 'ledger', '10-00-00-002');
        writeExcludedSession(BELOW_ID, EXCLUDED_MARKERS.below, ws.below, 'ledger', '10-00-00-003');
        await cli(['sync', '--since', SINCE], sink);
      },
    },
    {
      // The excluded sessions name their workspace only in the hook's cwd; a sync after the hooks
      // (the finding's reproduction) must know they are excluded.
      name: `hook, then sync → ${sink}`,
      sink,
      run: async (ws) => {
        writeHostileSession();
        writeExcludedSession(LINKED_ID, EXCLUDED_MARKERS.linked, ws.linked, 'messages', '10-00-00-002');
        writeExcludedSession(BELOW_ID, EXCLUDED_MARKERS.below, ws.below, 'messages', '10-00-00-003');
        await fireHooks(sink, HOSTILE_ID, ws.open);
        await fireHooks(sink, LINKED_ID, ws.linked);
        await fireHooks(sink, BELOW_ID, ws.below);
        await cli(['sync', '--since', SINCE], sink);
      },
    },
  );
}
ENTRY_POINTS.push({
  name: 'export re-import → local',
  sink: 'local',
  run: async (ws) => {
    await cli(['import', '--from-export', writeExport(ws)], 'local');
  },
});

describe('every entry point into memory passes the one gate', { timeout: 180_000 }, () => {
  it.each(ENTRY_POINTS.map((e) => [e.name, e] as const))('%s', async (_name, entry) => {
    const ws = makeWorkspaces(tree.root);
    declareExclusion(tree.dataDir, ws);
    await entry.run(ws);
    expectClean(entry.sink);
    if (entry.name.startsWith('export')) return;
    // The excluded sessions are known as excluded, and nothing of them was sent or stored.
    for (const id of [LINKED_ID, BELOW_ID]) {
      expect(tree.gateway.messagesFor(conversationIdFor(id))).toEqual([]);
    }
    const report = await runCli(['report', '--data-dir', tree.dataDir, '--json'], envFor(entry.sink));
    const excluded = (envelopeOf(report).data!.excluded as Array<{ sessionId: string }>).map((r) => r.sessionId).sort();
    expect(excluded).toEqual([LINKED_ID, BELOW_ID].sort());
  });
});
