/**
 * MiniMax Code's session index through the real CLI: cold import, sync, the hook and its worker,
 * status, search, report and export, against index files built here in each schema variant.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { cliEnv, envelopeOf, runCli } from './support/cli-process.js';
import { CREATED_AT_MS, DAY, conversationFor, jsonlOf, ledgerEvent, sessionIdFor, turnMessages, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { hookEnv, hookStdin, runHookCli, todayUtc, waitForWorkers, writeSession, newSessionId } from './support/hook-harness.js';
import { startFakeGateway, type FakeGateway } from './support/fake-gateway.js';
import { exclusiveWriter, indexRecord, liveHost, sessionIndexFile, untouchable, VARIANTS, writeSessionIndex, type IndexRecord } from './support/session-index-host.js';
import { makeSession, tempDir } from './transcript-helpers.js';
import { readHookEvents } from '../src/hook/hook-events.js';
import { rawRequest, startViewerProcess } from './support/viewer-process.js';

let root: string;
let dataDir: string;
let stateDir: string;

beforeEach(() => {
  root = tempDir();
  dataDir = path.join(root, 'data');
  stateDir = path.join(root, 'state');
  fs.mkdirSync(dataDir);
});

afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return cliEnv(root, { EVERME_STATE_DIR: stateDir, ...extra });
}

async function cli(args: string[], e = env()) {
  return runCli([...args, '--data-dir', dataDir], e);
}

async function json(args: string[], e = env()): Promise<Record<string, unknown>> {
  const r = await cli([...args, '--json'], e);
  expect(r.code, r.stderr).toBe(0);
  return envelopeOf(r).data!;
}

function output(r: { stdout: string; stderr: string }): string {
  return r.stdout + r.stderr;
}

function storeRows<T>(sql: string): T[] {
  const db = new Database(path.join(stateDir, 'everme.db'), { readonly: true });
  try {
    return db.prepare(sql).all() as T[];
  } finally {
    db.close();
  }
}

const PROJECT_A = '/home/dev/widget';
const PROJECT_B = '/home/dev/client-secret';

/** Four messages.jsonl sessions (their files name no workspace), 1 and 2 in A, 3 in B, 4 in A. */
function writeTree(): void {
  for (const n of [1, 2, 3, 4]) writeMessagesSession(dataDir, n, turnsEnvelopes(`s${n}`, [1]));
}

function treeRecords(): IndexRecord[] {
  return [
    indexRecord(sessionIdFor(1), { workspaceDir: PROJECT_A, title: 'Fix the widget spinner' }),
    indexRecord(sessionIdFor(2), { workspaceDir: PROJECT_A, title: 'Widget release notes' }),
    indexRecord(sessionIdFor(3), { workspaceDir: PROJECT_B, title: 'Client secret rotation' }),
    indexRecord(sessionIdFor(4), { workspaceDir: PROJECT_A, title: 'Spinner follow-up', sessionType: 'branch', sessionKind: 'task', parentSessionId: sessionIdFor(1) }),
  ];
}

describe('cold import with the session index', { timeout: 180_000 }, () => {
  for (const variant of VARIANTS) {
    it(`${variant}: every session's workspace and title are known; EVERME_EXCLUDE on a workspace only the index names excludes it; SessionStart recalls the imported history`, async () => {
      writeTree();
      writeSessionIndex(dataDir, variant, treeRecords());
      const summary = await json(['import', '--since', '2026-09-01'], env({ EVERME_EXCLUDE: PROJECT_B }));
      expect(summary).toMatchObject({
        workspaceUnknown: 0,
        sessions: { scanned: 4, delivered: 3, excluded: 1 },
        sessionIndex: { status: 'ok', matched: 4, known: 4 },
      });
      const rows = storeRows<{ conversation_id: string; workspace_dir: string | null; title: string | null }>(
        'SELECT c.conversation_id, c.workspace_dir, m.title FROM conversations c LEFT JOIN session_meta m USING (session_id) ORDER BY c.conversation_id',
      );
      expect(rows).toEqual([
        { conversation_id: conversationFor(1), workspace_dir: PROJECT_A, title: 'Fix the widget spinner' },
        { conversation_id: conversationFor(2), workspace_dir: PROJECT_A, title: 'Widget release notes' },
        { conversation_id: conversationFor(4), workspace_dir: PROJECT_A, title: 'Spinner follow-up' },
      ]);

      // SessionStart in project A recalls what was imported, titles included.
      const start = await runHookCli(
        hookStdin(newSessionId(), { hook_event_name: 'SessionStart', source: 'startup', cwd: PROJECT_A }),
        hookEnv({ HOME: root, MINIMAX_DATA_DIR: dataDir, EVERME_STATE_DIR: stateDir, EVERME_MINIMAX_SYNC_INTERVAL_MS: '200' }),
      );
      expect(start.code).toBe(0);
      expect(start.stdout).toContain(`Recent conversations in ${PROJECT_A}`);
      for (const n of [1, 2, 4]) expect(start.stdout).toContain(conversationFor(n));
      expect(start.stdout).toContain('"Fix the widget spinner"');
      expect(start.stdout).toContain(`task of ${sessionIdFor(1)}`);
      expect(start.stdout).not.toContain(conversationFor(3));
    });
  }

  it('titles show in search hits (text and --json), in --project scoped search, and in the export (jsonl metadata, markdown heading)', async () => {
    writeTree();
    writeSessionIndex(dataDir, 'newest', treeRecords());
    expect(await json(['import', '--since', '2026-09-01'])).toMatchObject({ workspaceUnknown: 0 });

    const scoped = await json(['search', 'question', '--project', PROJECT_A]);
    const hits = scoped.results as Array<{ conversationId: string; title?: string }>;
    expect(new Set(hits.map((h) => h.conversationId))).toEqual(new Set([1, 2, 4].map(conversationFor)));
    expect(hits.find((h) => h.conversationId === conversationFor(2))?.title).toBe('Widget release notes');
    const text = await cli(['search', 'question', '--project', PROJECT_B]);
    expect(text.stdout).toContain('"Client secret rotation"');

    const exported = await cli(['export']);
    const first = exported.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { conversationId: string; conversation?: Record<string, unknown> })
      .filter((l) => l.conversation);
    expect(first.find((l) => l.conversationId === conversationFor(4))?.conversation).toMatchObject({
      workspaceDir: PROJECT_A,
      title: 'Spinner follow-up',
      kind: 'task',
      parentSessionId: sessionIdFor(1),
    });
    const out = path.join(root, 'md');
    expect((await cli(['export', '--format', 'markdown', '--out', out])).code).toBe(0);
    const md = fs.readFileSync(path.join(out, `${conversationFor(1)}.md`), 'utf8');
    expect(md.split('\n')[0]).toBe('# Fix the widget spinner');
    expect(md).toContain(`- conversation: ${conversationFor(1)}`);
  });
});

describe('a live host', { timeout: 180_000 }, () => {
  it('rows the host wrote only to its -wal are read; the index and its -wal keep their bytes and mtimes through import, sync, hook, status and search', async () => {
    writeTree();
    writeSessionIndex(dataDir, 'newest', []);
    const host = liveHost(dataDir, 'newest');
    try {
      host.put(treeRecords());
      const before = untouchable(dataDir);
      expect(before).toMatchObject({ 'runtime-state.sqlite-wal': { size: expect.any(Number) as number }, 'runtime-state.sqlite-shm': 'present' });

      expect(await json(['import', '--since', '2026-09-01'])).toMatchObject({ workspaceUnknown: 0, sessionIndex: { status: 'ok', matched: 4 } });
      expect(untouchable(dataDir)).toEqual(before);

      // A session the host starts now: its row too is only in the WAL.
      const live = newSessionId();
      writeSession(dataDir, live, [1]);
      host.put([indexRecord(live, { workspaceDir: PROJECT_A, title: 'Live one', createdAtMs: Date.now(), updatedAtMs: Date.now() })]);
      const during = untouchable(dataDir);
      const hookRun = await runHookCli(hookStdin(live, { cwd: PROJECT_A }), hookEnv({ HOME: root, MINIMAX_DATA_DIR: dataDir, EVERME_STATE_DIR: stateDir, EVERME_MINIMAX_SYNC_INTERVAL_MS: '200' }));
      expect(hookRun.code).toBe(0);
      await waitForWorkers(stateDir);
      expect(storeRows<{ title: string }>(`SELECT title FROM session_meta WHERE session_id = '${live}'`)).toEqual([{ title: 'Live one' }]);

      const today = new Date().toISOString().slice(0, 10);
      expect((await cli(['sync', '--since', today])).code).toBe(0);
      // status exits 1 here (no hooks installed): its report goes to stderr then.
      expect(output(await cli(['status']))).toMatch(/session index: .*runtime-state\.sqlite, schema record_json \+ columns, 5 sessions known \(5 of the 5 found\)/);
      expect((await cli(['search', 'question'])).code).toBe(0);
      expect((await cli(['report'])).code).toBe(0);
      expect(untouchable(dataDir)).toEqual(during);
    } finally {
      host.close();
    }
  });

  it('an index at rest gets no -wal or -shm, and keeps its bytes and mtime, through import, sync, hook, status, search and the viewer', async () => {
    writeTree();
    writeSessionIndex(dataDir, 'record_json', treeRecords());
    const before = untouchable(dataDir);
    expect(before).toMatchObject({ 'runtime-state.sqlite-wal': null, 'runtime-state.sqlite-shm': 'absent' });
    expect(await json(['import', '--since', '2026-09-01'])).toMatchObject({ workspaceUnknown: 0 });
    expect((await cli(['sync', '--since', '2026-09-01'])).code).toBe(0);
    const hookRun = await runHookCli(hookStdin(sessionIdFor(1), { cwd: PROJECT_A }), hookEnv({ HOME: root, MINIMAX_DATA_DIR: dataDir, EVERME_STATE_DIR: stateDir, EVERME_MINIMAX_SYNC_INTERVAL_MS: '200' }));
    expect(hookRun.code).toBe(0);
    await waitForWorkers(stateDir);
    expect(output(await cli(['status']))).toContain('schema record_json only, 4 sessions known');
    expect((await cli(['search', 'question'])).code).toBe(0);
    // The viewer serving its pages (projects, a project's titled list, health) reads the store only.
    const viewer = await startViewerProcess(dataDir, env());
    try {
      for (const page of ['/', `/project?dir=${encodeURIComponent(PROJECT_A)}`, '/health']) {
        const res = await rawRequest({ port: viewer.port, path: `${viewer.prefix}${page}` });
        expect(res.status, page).toBe(200);
      }
    } finally {
      await viewer.stop();
    }
    expect(untouchable(dataDir)).toEqual(before);
    expect(fs.readdirSync(path.dirname(sessionIndexFile(dataDir)))).toEqual(['runtime-state.sqlite']);
  });
});

describe('index trouble', { timeout: 180_000 }, () => {
  async function importWithTrouble(reason: string): Promise<void> {
    const r = await cli(['import', '--since', '2026-09-01']);
    expect(r.code, r.stderr).toBe(0);
    const warnings = r.stderr.split('\n').filter((l) => l.includes('session_index_unavailable'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`: ${reason} (`);
    expect(r.stdout).toMatch(/sessions: 4 scanned, 4 delivered/);
    expect(r.stdout).toContain(`session index: unavailable (${reason})`);
    expect(r.stdout).toMatch(/workspace unknown: 4 sessions/);
    const again = envelopeOf(await cli(['sync', '--since', '2026-09-01', '--json']));
    expect(again.data).toMatchObject({ sessionIndex: { status: 'unavailable', reason } });
    const report = await cli(['report']);
    expect(report.stdout).toContain(`the session index is unavailable (${reason})`);
  }

  it('absent: one warning, and the run completes', async () => {
    writeTree();
    await importWithTrouble('absent');
  });

  it('corrupt: one warning, and the run completes', async () => {
    writeTree();
    fs.mkdirSync(path.dirname(sessionIndexFile(dataDir)), { recursive: true });
    fs.writeFileSync(sessionIndexFile(dataDir), 'garbage '.repeat(100));
    await importWithTrouble('corrupt');
  });

  it('unknown schema: one warning, and the run completes', async () => {
    writeTree();
    fs.mkdirSync(path.dirname(sessionIndexFile(dataDir)), { recursive: true });
    const db = new Database(sessionIndexFile(dataDir));
    db.exec('CREATE TABLE local_runtime_sessions (id INTEGER PRIMARY KEY, payload BLOB)');
    db.close();
    await importWithTrouble('unknown_schema');
  });

  it('locked by an exclusive writer: one warning, the run completes, and nothing of the index is touched', async () => {
    writeTree();
    const file = writeSessionIndex(dataDir, 'newest', treeRecords());
    const writer = await exclusiveWriter(file, 'wal');
    try {
      const before = untouchable(dataDir);
      await importWithTrouble('locked');
      expect(untouchable(dataDir)).toEqual(before);
    } finally {
      await writer.stop();
    }
  });
});

describe('when the sources disagree', { timeout: 180_000 }, () => {
  /** A ledger session whose own record names `workspace`, said at `atMs`. */
  function writeLedgerSession(n: number, workspace: string, atMs: number): void {
    const sessionId = sessionIdFor(n);
    const events = [
      ledgerEvent(sessionId, 1, 'session.created', { record: { sessionId, workspaceDir: workspace, createdAtMs: atMs, updatedAtMs: atMs } }),
      ledgerEvent(sessionId, 2, 'message.pi_history_appended', { messages: turnMessages(`l${n}`, 1) }),
    ];
    makeSession(dataDir, DAY, sessionId, { createdAtMs: CREATED_AT_MS, time: `09-00-00-${String(n).padStart(3, '0')}`, files: { 'ledger.jsonl': jsonlOf(events) } });
  }

  it('the one updated later wins (the index here, the ledger there), and the report names both claims', async () => {
    const T = Date.UTC(2026, 8, 10, 8);
    writeLedgerSession(1, '/ledger/old-name', T);
    writeLedgerSession(2, '/ledger/kept', T + 3_600_000);
    writeSessionIndex(dataDir, '0.5.4', [
      indexRecord(sessionIdFor(1), { workspaceDir: '/index/renamed', updatedAtMs: T + 7_200_000 }),
      indexRecord(sessionIdFor(2), { workspaceDir: '/index/stale', updatedAtMs: T }),
    ]);
    expect(await json(['import', '--since', '2026-09-01'])).toMatchObject({ workspaceUnknown: 0, sessions: { delivered: 2 } });
    expect(storeRows('SELECT conversation_id, workspace_dir FROM conversations ORDER BY conversation_id')).toEqual([
      { conversation_id: conversationFor(1), workspace_dir: '/index/renamed' },
      { conversation_id: conversationFor(2), workspace_dir: '/ledger/kept' },
    ]);
    const report = await json(['report']);
    expect(report.disagreements).toEqual([
      {
        sessionId: sessionIdFor(1),
        workspaceDir: '/index/renamed',
        from: 'index',
        claims: [
          { from: 'ledger', dir: '/ledger/old-name', atMs: T },
          { from: 'index', dir: '/index/renamed', atMs: T + 7_200_000 },
        ],
      },
      {
        sessionId: sessionIdFor(2),
        workspaceDir: '/ledger/kept',
        from: 'ledger',
        claims: [
          { from: 'ledger', dir: '/ledger/kept', atMs: T + 3_600_000 },
          { from: 'index', dir: '/index/stale', atMs: T },
        ],
      },
    ]);
    const text = await cli(['report']);
    expect(text.stdout).toContain('workspace sources disagree (2 sessions; the one updated last is used)');
    expect(text.stdout).toContain(`${sessionIdFor(1)}  /index/renamed (from the session index)`);

    // The index moves the session back: decided again without its files being read.
    const db = new Database(sessionIndexFile(dataDir));
    db.prepare('UPDATE local_runtime_sessions SET workspace_dir = ?, updated_at_ms = ? WHERE session_id = ?').run('/ledger/old-name', T + 9_000_000, sessionIdFor(1));
    db.close();
    expect(await json(['sync', '--since', '2026-09-01'])).toMatchObject({ sessions: { unchanged: 2 } });
    expect(storeRows(`SELECT workspace_dir FROM conversations WHERE conversation_id = '${conversationFor(1)}'`)).toEqual([{ workspace_dir: '/ledger/old-name' }]);
    expect((await json(['report'])).disagreements).toMatchObject([{ sessionId: sessionIdFor(2) }]);
  });

  it('an exclusion named by any of the disagreeing sources keeps the session out', async () => {
    const T = Date.UTC(2026, 8, 10, 8);
    writeLedgerSession(1, '/home/dev/private', T);
    writeSessionIndex(dataDir, 'newest', [indexRecord(sessionIdFor(1), { workspaceDir: '/home/dev/public', updatedAtMs: T + 1000 })]);
    expect(await json(['import', '--since', '2026-09-01'], env({ EVERME_EXCLUDE: '/home/dev/private' }))).toMatchObject({ sessions: { excluded: 1, delivered: 0 } });
  });
});

describe('kinds of session', { timeout: 180_000 }, () => {
  it('conversations and tasks are read by default; peek, channel, cron and hidden ones are counted and left out, until EVERME_INCLUDE_KINDS names them', async () => {
    for (const n of [1, 2, 3, 4, 5, 6]) writeMessagesSession(dataDir, n, turnsEnvelopes(`k${n}`, [1]));
    writeSessionIndex(dataDir, 'newest', [
      indexRecord(sessionIdFor(1), { workspaceDir: PROJECT_A, sessionKind: 'conversation' }),
      indexRecord(sessionIdFor(2), { workspaceDir: PROJECT_A, sessionKind: 'task', sessionType: 'branch', parentSessionId: sessionIdFor(1) }),
      indexRecord(sessionIdFor(3), { workspaceDir: PROJECT_A, sessionKind: 'peek', sessionType: 'branch', visibility: 'hidden', parentSessionId: sessionIdFor(1) }),
      indexRecord(sessionIdFor(4), { workspaceDir: PROJECT_A, sessionKind: 'channel', sessionType: 'branch' }),
      indexRecord(sessionIdFor(5), { workspaceDir: PROJECT_A, sessionKind: 'cron' }),
      indexRecord(sessionIdFor(6), { workspaceDir: PROJECT_A, sessionKind: 'conversation', visibility: 'hidden' }),
    ]);
    expect(await json(['import', '--since', '2026-09-01'])).toMatchObject({
      sessions: { scanned: 6, delivered: 2, skipped: 4 },
      skippedKinds: { peek: 1, channel: 1, cron: 1, hidden: 1 },
    });
    const text = await cli(['import', '--since', '2026-09-01']);
    expect(text.stdout).toContain('4 skipped (peek 1, channel 1, cron 1, hidden 1; EVERME_INCLUDE_KINDS reads them)');
    expect((await json(['report'])).skippedKinds).toHaveLength(4);
    // The hidden peek session is kept out by its kind and by its visibility: the report names both, and its hint reads every one.
    const report = (await cli(['report'])).stdout;
    expect(report).toMatch(new RegExp(`${sessionIdFor(3)}  \\S+  peek,hidden  `));
    const hint = /EVERME_INCLUDE_KINDS=(\S+) reads them\./.exec(report)?.[1];
    expect(hint?.split(',').sort()).toEqual(['channel', 'cron', 'hidden', 'peek']);
    expect(storeRows('SELECT session_id, parent_session_id FROM session_meta WHERE parent_session_id IS NOT NULL ORDER BY session_id')).toEqual([
      { session_id: sessionIdFor(2), parent_session_id: sessionIdFor(1) },
      { session_id: sessionIdFor(3), parent_session_id: sessionIdFor(1) },
    ]);

    expect(await json(['import', '--since', '2026-09-01'], env({ EVERME_INCLUDE_KINDS: 'cron,hidden' }))).toMatchObject({ sessions: { delivered: 2, skipped: 2 }, skippedKinds: { channel: 1, peek: 1 } });
    expect(await json(['import', '--since', '2026-09-01'], env({ EVERME_INCLUDE_KINDS: 'all' }))).toMatchObject({ sessions: { delivered: 2, skipped: 0 } });
    // What the report's hint named reads every one of them.
    expect(await json(['import', '--since', '2026-09-01'], env({ EVERME_INCLUDE_KINDS: hint ?? '' }))).toMatchObject({ sessions: { skipped: 0 } });
    expect(storeRows('SELECT count(*) AS n FROM conversations')).toEqual([{ n: 6 }]);
  });

  it('refuses an EVERME_INCLUDE_KINDS word that names no kind, before anything is read', async () => {
    writeMessagesSession(dataDir, 1, turnsEnvelopes('typo', [0]));
    const refused = await cli(['import', '--since', '2026-09-01', '--json'], env({ EVERME_INCLUDE_KINDS: 'cron, peeks' }));
    expect(refused.code).toBe(2);
    expect(envelopeOf(refused).error).toMatchObject({ type: 'invalid_args', code: 'include_kind_unknown', message: expect.stringContaining('"peeks"') as unknown, hint: expect.stringContaining('peek, channel, cron, hidden, or all') as unknown });
    expect(storeRows('SELECT count(*) AS n FROM conversations')).toEqual([{ n: 0 }]);
    const sync = await cli(['sync'], env({ EVERME_INCLUDE_KINDS: 'Peek,ALL' }));
    expect(sync.code, sync.stderr).toBe(0);
  });
});

describe('terminal controls in a workspace path', { timeout: 180_000 }, () => {
  it('report, status and search print the workspace without its ESC and C1 controls; --json keeps the path, escaped; exclusion matches it as the host wrote it', async () => {
    const T = Date.UTC(2026, 8, 10, 8);
    const hostile = '/home/dev/\u001b[31mred\u009b2J';
    const sessionId = sessionIdFor(1);
    makeSession(dataDir, DAY, sessionId, {
      createdAtMs: CREATED_AT_MS,
      time: '09-00-00-001',
      files: {
        'ledger.jsonl': jsonlOf([
          ledgerEvent(sessionId, 1, 'session.created', { record: { sessionId, workspaceDir: '/ledger/old', createdAtMs: T, updatedAtMs: T } }),
          ledgerEvent(sessionId, 2, 'message.pi_history_appended', { messages: turnMessages('c1', 1) }),
        ]),
      },
    });
    writeMessagesSession(dataDir, 2, turnsEnvelopes('c2', [1]));
    writeSessionIndex(dataDir, 'newest', [
      indexRecord(sessionId, { workspaceDir: hostile, updatedAtMs: T + 3_600_000 }),
      indexRecord(sessionIdFor(2), { workspaceDir: `${hostile}/private` }),
    ]);
    const e = env({ EVERME_EXCLUDE: `${hostile}/private` });
    expect(await json(['import', '--since', '2026-09-01'], e)).toMatchObject({ workspaceUnknown: 0, sessions: { delivered: 1, excluded: 1 } });

    const runs = [await cli(['report'], e), await cli(['status'], e), await cli(['search', 'question'], e)];
    for (const r of runs) {
      expect(r.stdout + r.stderr).not.toContain('\u001b');
      expect(r.stdout + r.stderr).not.toContain('\u009b');
    }
    const [report] = runs;
    expect(report!.stdout).toContain(`${sessionId}  /home/dev/red (from the session index)`);
    expect(report!.stdout).toContain('/home/dev/red/private  by EVERME_EXCLUDE /home/dev/red/private');

    const raw = await cli(['report', '--json'], e);
    expect(raw.stdout).not.toContain('\u009b');
    const data = envelopeOf(raw).data as { disagreements: Array<{ workspaceDir: string }>; excluded: Array<{ workspaceDir: string }> };
    expect(data.disagreements.map((d) => d.workspaceDir)).toEqual([hostile]);
    expect(data.excluded.map((d) => d.workspaceDir)).toEqual([`${hostile}/private`]);
  });
});

describe('a credential in a workspace path', { timeout: 180_000 }, () => {
  /** Every text of the store, row by row: what a credential must not be found in. */
  function storeText(): string {
    const db = new Database(path.join(stateDir, 'everme.db'), { readonly: true });
    try {
      const tables = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'").all();
      return tables.map(({ name }) => JSON.stringify(db.prepare(`SELECT * FROM "${name}"`).all())).join('\n');
    } finally {
      db.close();
    }
  }

  function writeLedgerSession(n: number, workspace: string): void {
    const sessionId = sessionIdFor(n);
    const events = [
      ledgerEvent(sessionId, 1, 'session.created', { record: { sessionId, workspaceDir: workspace } }),
      ledgerEvent(sessionId, 2, 'message.pi_history_appended', { messages: turnMessages(`l${n}`, 1) }),
    ];
    makeSession(dataDir, DAY, sessionId, { createdAtMs: CREATED_AT_MS, time: `09-00-00-${String(n).padStart(3, '0')}`, files: { 'ledger.jsonl': jsonlOf(events) } });
  }

  it('is masked wherever the workspace is recorded (index, ledger, hook cwd), while exclusion matches the path as the host wrote it', async () => {
    const tokens = ['ghp_E9uvQ2kL7xR4mN8pT1wZ5yB3cD6fH0jA2sG4', 'ghp_U29aP8yikV4o4Q5l4U5x6L2w7L5q2Q2g5P4w', 'ghp_K3dW8nR2vL6yT9qM1xB4cF7hJ0sA5gE2pZ8', 'ghp_Y7tR2eW9qA4sD6fG8hJ1kL3zX5cV0bN2mQ4'];
    const [indexed, excludedByPattern, ignored, ledgered] = tokens;
    const kept = `/home/dev/${indexed}`;
    const pattern = `/home/dev/${excludedByPattern}`;
    // Found only by looking inside the real directory: the masked path names none.
    const ignoredDir = path.join(root, ignored!);
    fs.mkdirSync(ignoredDir);
    fs.writeFileSync(path.join(ignoredDir, '.everme-ignore'), '');
    const ledger = `/home/dev/${ledgered}/api`;
    writeMessagesSession(dataDir, 1, turnsEnvelopes('s1', [1]));
    writeMessagesSession(dataDir, 2, turnsEnvelopes('s2', [1]));
    writeLedgerSession(3, ignoredDir);
    writeLedgerSession(4, ledger);
    writeSessionIndex(dataDir, 'newest', [
      indexRecord(sessionIdFor(1), { workspaceDir: kept }),
      indexRecord(sessionIdFor(2), { workspaceDir: pattern }),
      // The index and the ledger name the same directory: one claim, not a disagreement.
      indexRecord(sessionIdFor(4), { workspaceDir: ledger }),
    ]);
    const e = env({ EVERME_EXCLUDE: pattern });
    const run = await cli(['import', '--since', '2026-09-01', '--json'], e);
    expect(envelopeOf(run).data).toMatchObject({ workspaceUnknown: 0, sessions: { delivered: 2, excluded: 2 } });
    expect(storeRows('SELECT conversation_id, workspace_dir FROM conversations ORDER BY conversation_id')).toEqual([
      { conversation_id: conversationFor(1), workspace_dir: '/home/dev/[REDACTED:github-token]' },
      { conversation_id: conversationFor(4), workspace_dir: '/home/dev/[REDACTED:github-token]/api' },
    ]);
    const report = await json(['report'], e);
    expect(report.excluded).toMatchObject([
      { sessionId: sessionIdFor(2), workspaceDir: '/home/dev/[REDACTED:github-token]', rule: 'EVERME_EXCLUDE /home/dev/[REDACTED:github-token]' },
      { sessionId: sessionIdFor(3), workspaceDir: path.join(root, '[REDACTED:github-token]'), rule: path.join(root, '[REDACTED:github-token]', '.everme-ignore') },
    ]);
    expect(report.disagreements).toEqual([]);
    // Asked for by the path as the user or the host spells it, the masked workspace is found (and,
    // masked alike, the other directory named after a token there).
    const scoped = await json(['search', 'question', '--project', kept], e);
    expect(new Set((scoped.results as Array<{ conversationId: string }>).map((h) => h.conversationId))).toEqual(new Set([1, 4].map(conversationFor)));
    // A run over the same index and files finds nothing new to record: the masked paths it holds
    // are compared with what it reads masked the same way.
    const recorded = storeRows('SELECT session_id, recorded_at_ms FROM session_meta ORDER BY session_id');
    expect(await json(['sync', '--since', '2026-09-01'], e)).toMatchObject({ messages: 0, sessions: { unchanged: 2, excluded: 2 } });
    expect(storeRows('SELECT session_id, recorded_at_ms FROM session_meta ORDER BY session_id')).toEqual(recorded);

    // The hook: a cwd excluded by the `.everme-ignore` in it is kept out, and both cwds are recorded masked.
    const hooked = path.join(root, 'work', tokens[0]!);
    const hookRuns = [
      [newSessionId(), ignoredDir],
      [newSessionId(), hooked],
    ] as const;
    for (const [sessionId, cwd] of hookRuns) {
      const r = await runHookCli(hookStdin(sessionId, { cwd }), hookEnv({ HOME: root, MINIMAX_DATA_DIR: dataDir, EVERME_STATE_DIR: stateDir }));
      expect(r.code).toBe(0);
    }
    expect(readHookEvents(stateDir).map((ev) => ev.reason)).toEqual(['excluded', 'unknown_session']);
    // The one kept out with the rule it matched (masked as well): a later run cannot match the masked path.
    expect(hookRuns.map(([sessionId]) => fs.readFileSync(path.join(stateDir, 'hook', `${sessionId}.cwd`), 'utf8'))).toEqual([
      `${path.join(root, '[REDACTED:github-token]')}\0${path.join(root, '[REDACTED:github-token]', '.everme-ignore')}`,
      path.join(root, 'work', '[REDACTED:github-token]'),
    ]);

    const shown = [run.stdout, run.stderr, JSON.stringify(report), storeText()].join('\n');
    for (const token of tokens) expect(shown.includes(token), token).toBe(false);
  });
});

describe('a token-named workspace the hook kept out', () => {
  let gw: FakeGateway;
  beforeAll(async () => {
    gw = await startFakeGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  // The hook sees the path as the host wrote it; a later run knows the session only by the masked
  // cwd the hook recorded, which no pattern names and under which no `.everme-ignore` lies.
  it('stays out of import and sync, locally and on the gateway, and the report says the hook excluded it', async () => {
    const byPattern = path.join(root, 'work', 'ghp_P4tT3rnExcLud3dD1r3ct0ryN4m3dT0k3n01');
    const byIgnore = path.join(root, 'work', 'ghp_Ign0r3F1l3Exc1ud3dD1r3ct0ryT0k3n0002');
    fs.mkdirSync(byIgnore, { recursive: true });
    fs.writeFileSync(path.join(byIgnore, '.everme-ignore'), '');
    const sessions = [newSessionId(), newSessionId()] as const;
    writeSession(dataDir, sessions[0], [1]);
    writeSession(dataDir, sessions[1], [2]);
    const e = env({ EVERME_EXCLUDE: path.join(root, 'work', 'ghp_P4*'), EVERME_API_KEY: gw.token, EVERME_API_BASE: gw.url });
    for (const [sessionId, cwd] of [
      [sessions[0], byPattern],
      [sessions[1], byIgnore],
    ] as const) {
      expect((await runHookCli(hookStdin(sessionId, { cwd }), hookEnv({ ...e, MINIMAX_DATA_DIR: dataDir }))).code).toBe(0);
    }
    expect(readHookEvents(stateDir).map((ev) => ev.reason)).toEqual(['excluded', 'excluded']);

    const run = await json(['import', '--since', todayUtc().replaceAll('/', '-')], e);
    expect(run).toMatchObject({ sessions: { delivered: 0, excluded: 2 } });
    expect(await json(['sync'], e)).toMatchObject({ messages: 0 });
    expect(storeRows('SELECT conversation_id FROM conversations')).toEqual([]);
    expect(gw.requestsTo('/mem/agent-memory')).toEqual([]);

    const report = await json(['report'], e);
    const masked = path.join(root, 'work', '[REDACTED:github-token]');
    const verdict = 'excluded by the hook, which matched the path before it was masked: ';
    expect(report.excluded).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ sessionId: sessions[0], workspaceDir: masked, rule: `${verdict}EVERME_EXCLUDE ${path.join(masked.slice(0, -'[REDACTED:github-token]'.length), 'ghp_P4*')}` }),
        expect.objectContaining({ sessionId: sessions[1], workspaceDir: masked, rule: `${verdict}${path.join(masked, '.everme-ignore')}` }),
      ]),
    );
    const shown = [JSON.stringify(report), ...fs.readdirSync(path.join(stateDir, 'hook')).map((f) => fs.readFileSync(path.join(stateDir, 'hook', f), 'utf8'))].join('\n');
    expect(shown).not.toMatch(/ghp_[A-Za-z0-9]{20}/);

    // A pattern the policy refuses gives no verdict: the one recorded earlier stands.
    const ignoredFile = path.join(stateDir, 'hook', `${sessions[1]}.cwd`);
    const before = fs.readFileSync(ignoredFile, 'utf8');
    expect(before).toContain('\0');
    expect((await runHookCli(hookStdin(sessions[1], { cwd: byIgnore }), hookEnv({ ...e, EVERME_EXCLUDE: 'relative/dir', MINIMAX_DATA_DIR: dataDir }))).code).toBe(0);
    expect(fs.readFileSync(ignoredFile, 'utf8')).toBe(before);

    // The pattern removed, the hook's next call for the session checks the real path again and
    // rewrites the record without a verdict: the session is the user's to import again.
    const cwdFile = path.join(stateDir, 'hook', `${sessions[0]}.cwd`);
    expect(fs.readFileSync(cwdFile, 'utf8')).toContain('\0');
    const { EVERME_EXCLUDE: _dropped, ...unexcluded } = e;
    expect((await runHookCli(hookStdin(sessions[0], { cwd: byPattern }), hookEnv({ ...unexcluded, MINIMAX_DATA_DIR: dataDir, EVERME_MINIMAX_SYNC_INTERVAL_MS: '300' }))).code).toBe(0);
    expect(fs.readFileSync(cwdFile, 'utf8')).toBe(masked);
    // Admitted now, the hook started a worker for the session: it ends before its directory goes.
    await waitForWorkers(stateDir);
  });
});
