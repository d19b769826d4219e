import { spawn, spawnSync } from 'node:child_process';
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliEntry } from './support/cli.js';
import { cliEnv, envelopeOf, runCli, startCli, waitFor } from './support/cli-process.js';
import { useCliTree, type CliTree } from './support/cli-tree.js';
import { appendLines, conversationFor, sessionIdFor, turnsEnvelopes, writeLedgerSession, writeMessagesSession } from './support/delivery-trees.js';
import { indexRecord, writeSessionIndex } from './support/session-index-host.js';

let tree: CliTree;
useCliTree((t) => {
  tree = t;
});

/** Words planted in one session's questions only, so a file's bytes and search can be checked for them. */
const WORD = { 1: 'pelicanforgetme', 2: 'walruskeepme', 3: 'ledgerotterword', 4: 'laterbisonword' } as const;

function localEnv(): NodeJS.ProcessEnv {
  return cliEnv(tree.root, { EVERME_STATE_DIR: tree.stateDir });
}

async function cli(args: string[], env = localEnv()) {
  return runCli([...args, '--data-dir', tree.dataDir], env);
}

/**
 * Sessions 1 and 2 (messages.jsonl, 2026-09-10), 3 (a ledger in /home/dev/ledger-project,
 * 2026-09-10) and 4 (messages.jsonl whose only turn is on 2026-09-11).
 */
function writeTree(): { file1: string } {
  const dir1 = writeMessagesSession(tree.dataDir, 1, turnsEnvelopes('s1', [1, 2], { question: WORD[1] }));
  writeMessagesSession(tree.dataDir, 2, turnsEnvelopes('s2', [1], { question: WORD[2] }));
  const ledger = writeLedgerSession(tree.dataDir, 3, 's3', [1]);
  // The ledger helper has no question option: put the word into its text the way a user would.
  fs.writeFileSync(ledger.file, fs.readFileSync(ledger.file, 'utf8').replace('question s3 1', `question s3 1 ${WORD[3]}`));
  // Turn 1500 is 25 hours after the tree's creation time: the next day.
  writeMessagesSession(tree.dataDir, 4, turnsEnvelopes('s4', [1500], { question: WORD[4] }));
  return { file1: path.join(dir1, 'messages.jsonl') };
}

/** Everything SQLite keeps on disk for the store, lower-cased (the index keeps terms lower-case). */
function storeBytes(): string {
  let text = '';
  for (const suffix of ['', '-wal', '-shm', '-journal']) {
    const file = path.join(tree.stateDir, `everme.db${suffix}`);
    if (fs.existsSync(file)) text += fs.readFileSync(file).toString('latin1').toLowerCase();
  }
  return text;
}

async function searchHits(word: string): Promise<unknown[]> {
  const r = envelopeOf(await cli(['search', word, '--json']));
  return (r.data as { results: unknown[] }).results;
}

/** Whether the conversation has a tombstone yet (read as another process would, while others write). */
function tombstoned(conversationId: string): boolean {
  const file = path.join(tree.stateDir, 'everme.db');
  if (!fs.existsSync(file)) return false;
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare('SELECT 1 FROM tombstones WHERE conversation_id = ?').get(conversationId) !== undefined;
  } finally {
    db.close();
  }
}

async function importAll(env = localEnv()): Promise<Record<string, unknown>> {
  const r = await cli(['import', '--since', '2026-09-01', '--json'], env);
  expect(r.code, r.stderr).toBe(0);
  return envelopeOf(r).data!;
}

describe('everme forget, embedded store', { timeout: 120_000 }, () => {
  it('--session removes the conversation down to the file bytes, search finds nothing, and re-import, sync and appends deliver nothing', async () => {
    const { file1 } = writeTree();
    await importAll();
    expect(storeBytes()).toContain(WORD[1]);
    // Both of session 1's questions carry the word.
    expect(await searchHits(WORD[1])).toHaveLength(2);

    const r = envelopeOf(await cli(['forget', '--session', sessionIdFor(1), '--yes', '--json']));
    expect(r.data).toMatchObject({ dryRun: false, removedMessages: 8, sentToGateway: 0, checkpointed: true });
    expect((r.data!.conversations as Array<{ conversationId: string }>).map((c) => c.conversationId)).toEqual([conversationFor(1)]);

    expect(storeBytes()).not.toContain(WORD[1]);
    expect(storeBytes()).toContain(WORD[2]);
    expect(await searchHits(WORD[1])).toEqual([]);
    expect(await searchHits(WORD[2])).toHaveLength(1);

    // Nothing comes back: not by a re-import, not by a sync, not when the session grows.
    expect(await importAll()).toMatchObject({ messages: 0, sessions: { forgotten: 1 } });
    appendLines(file1, turnsEnvelopes('s1', [3], { question: WORD[1] }));
    const synced = envelopeOf(await cli(['sync', '--since', '2026-09-01', '--json'])).data!;
    expect(synced).toMatchObject({ messages: 0, sessions: { forgotten: 1 } });
    expect(storeBytes()).not.toContain(WORD[1]);
    expect(await searchHits(WORD[1])).toEqual([]);

    // The report counts it; --undo lifts the tombstone and the next sync reads the session whole.
    expect(envelopeOf(await cli(['report', '--json'])).data).toMatchObject({ forgotten: 1 });
    const undo = await cli(['forget', '--undo', '--conversation', conversationFor(1)]);
    expect(undo.code, undo.stderr).toBe(0);
    expect(undo.stdout).toContain('the next `everme sync` reads session');
    expect(envelopeOf(await cli(['sync', '--since', '2026-09-01', '--json'])).data).toMatchObject({ messages: 12, sessions: { delivered: 1 } });
    expect(await searchHits(WORD[1])).toHaveLength(3);
    const undoAgain = await cli(['forget', '--undo', '--conversation', conversationFor(1)]);
    expect(undoAgain.code).toBe(1);
  });

  it("takes the session's title and scope records too: the file no longer holds the title, and the report no longer lists the session", async () => {
    writeTree();
    // The host titles session 1 with its first prompt and names no workspace for it.
    const title = 'albatrosstitleword rotate the staging keys';
    writeSessionIndex(tree.dataDir, 'newest', [indexRecord(sessionIdFor(1), { title })]);
    await importAll();
    expect(storeBytes()).toContain('albatrosstitleword');
    const before = envelopeOf(await cli(['report', '--json'])).data as { workspaceUnknown: Array<{ sessionId: string; title?: string }> };
    expect(before.workspaceUnknown).toContainEqual(expect.objectContaining({ sessionId: sessionIdFor(1), title }));

    expect((await cli(['forget', '--session', sessionIdFor(1), '--yes'])).code).toBe(0);
    expect(storeBytes()).not.toContain('albatrosstitleword');
    const after = envelopeOf(await cli(['report', '--json'])).data as { workspaceUnknown: Array<{ sessionId: string }> };
    expect(after.workspaceUnknown.map((r) => r.sessionId)).not.toContain(sessionIdFor(1));
    expect(after.workspaceUnknown.map((r) => r.sessionId)).toContain(sessionIdFor(2));

    // The index still names the session: a sync keeps it out and does not record its title again.
    expect(envelopeOf(await cli(['sync', '--since', '2026-09-01', '--json'])).data).toMatchObject({ sessions: { forgotten: 1 } });
    expect(storeBytes()).not.toContain('albatrosstitleword');
  });

  it('never gives a forgotten message id to another message: get of that id says not_found after new sessions are stored', async () => {
    writeMessagesSession(tree.dataDir, 1, turnsEnvelopes('s1', [1], { question: WORD[1] }));
    await importAll();
    // Session 2 is stored last, so it holds the highest ids.
    writeMessagesSession(tree.dataDir, 2, turnsEnvelopes('s2', [1], { question: WORD[2] }));
    await importAll();
    const reader = new Database(path.join(tree.stateDir, 'everme.db'), { readonly: true });
    const top = reader.prepare<[string], { id: number }>('SELECT max(id) AS id FROM messages WHERE conversation_id = ?').get(conversationFor(2))!.id;
    reader.close();
    expect((await cli(['get', `m${top}`])).stdout).toContain(conversationFor(2));

    expect((await cli(['forget', '--session', sessionIdFor(2), '--yes'])).code).toBe(0);
    writeMessagesSession(tree.dataDir, 4, turnsEnvelopes('s4', [1500], { question: WORD[4] }));
    expect(await importAll()).toMatchObject({ sessions: { delivered: 1 } });
    const gone = await cli(['get', `m${top}`]);
    expect(gone.code, gone.stdout).toBe(1);
    expect(gone.stderr).toContain(`No stored message "m${top}"`);
    // The new session's messages have ids of their own, above every id shown before.
    const hit = (await searchHits(WORD[4])) as Array<{ id: string }>;
    expect(hit.length).toBeGreaterThan(0);
    expect(Number(hit[0]!.id.slice(1))).toBeGreaterThan(top);
  });

  it('says plainly that an id the store does not hold was not forgotten, only tombstoned', async () => {
    writeTree();
    await importAll();
    const typo = await cli(['forget', '--session', 'mvs_typo', '--yes']);
    expect(typo.code, typo.stderr).toBe(0);
    expect(typo.stdout).toContain('tombstoned an id the store does not hold (nothing stored, nothing sent)');
    expect(typo.stdout).not.toContain('forgot 1 conversation');
    const json = envelopeOf(await cli(['forget', '--conversation', 'hello', '--yes', '--json']));
    expect(json.data).toMatchObject({ removedMessages: 0, conversations: [{ conversationId: 'minimaxcode-hello', unknown: true }] });
    // A stored conversation is listed as before.
    const real = await cli(['forget', '--session', sessionIdFor(2), '--yes']);
    expect(real.stdout).toContain('forgot 1 conversation: 4 messages removed');
  });

  it('with no store yet, forgets nothing and creates nothing: it says there is no store, and no store file appears', async () => {
    writeTree();
    const dbFile = path.join(tree.stateDir, 'everme.db');
    expect(fs.existsSync(tree.stateDir)).toBe(false);
    const before = envelopeOf(await cli(['forget', '--before', '2026-09-11', '--yes', '--json']));
    expect(fs.existsSync(dbFile), 'a store file appeared').toBe(false);
    expect(before.data).toEqual({ dryRun: false, conversations: [], removedMessages: 0, sentToGateway: 0, missingStore: dbFile });
    const project = await cli(['forget', '--project', '/home/dev', '--yes']);
    expect(project.code, project.stderr).toBe(0);
    expect(project.stdout).toContain(`Nothing to forget: there is no everme store at ${dbFile} yet`);
    const dry = envelopeOf(await cli(['forget', '--session', sessionIdFor(1), '--dry-run', '--json']));
    expect(dry.data).toMatchObject({ dryRun: true, conversations: [{ conversationId: conversationFor(1), unknown: true }], missingStore: dbFile });
    const undo = await cli(['forget', '--undo', '--session', sessionIdFor(1)]);
    expect(undo.code).toBe(1);
    expect(undo.stderr).toContain(`hint: There is no everme store at ${dbFile} yet`);
    // The state directory is as it was: not there at all.
    expect(fs.existsSync(tree.stateDir)).toBe(false);
    // Naming a session still tombstones it before its first import, which needs the store.
    expect((await cli(['forget', '--session', sessionIdFor(1), '--yes'])).code).toBe(0);
    expect(tombstoned(conversationFor(1))).toBe(true);
  });

  it('--before that matches nothing says so, with dryRun as asked', async () => {
    writeTree();
    await importAll();
    const none = envelopeOf(await cli(['forget', '--before', '2026-01-01', '--yes', '--json']));
    expect(none.data).toEqual({ dryRun: false, conversations: [], removedMessages: 0, sentToGateway: 0 });
    const dry = envelopeOf(await cli(['forget', '--before', '2026-01-01', '--dry-run', '--json']));
    expect(dry.data).toMatchObject({ dryRun: true, conversations: [] });
    const text = await cli(['forget', '--before', '2026-01-01', '--yes']);
    expect(text.stdout).toBe('Nothing matched: no conversation was forgotten.\n');
  });

  it('refuses an id that holds a credential (a key pasted in the wrong place): exit 2, nothing tombstoned, the key nowhere in the output or the store', async () => {
    writeTree();
    await importAll();
    const token = 'ghp_16C7e42F292c6912E7710c838347Ae178B4a';
    for (const args of [['--conversation', token], ['--conversation', `minimaxcode-${token}`], ['--session', `mvs_${token}`], ['--conversation', token, '--dry-run']]) {
      const r = await cli(['forget', ...args, '--yes', '--json']);
      expect(r.code, r.stderr).toBe(2);
      expect(envelopeOf(r).error).toMatchObject({ type: 'invalid_args', code: 'conversation_id_credential' });
      expect(r.stdout + r.stderr).not.toContain(token);
    }
    const text = await cli(['forget', '--conversation', token, '--yes']);
    expect(text.stderr).toContain('holds a credential');
    expect(text.stderr).not.toContain(token);
    expect(tombstoned(`minimaxcode-${token}`) || tombstoned(token)).toBe(false);
    expect(storeBytes()).not.toContain(token.toLowerCase());
  });

  it('refuses an id that holds a credential with no store yet too: exit 2, the key not printed, and no store made for its tombstone', async () => {
    writeTree();
    const token = 'ghp_16C7e42F292c6912E7710c838347Ae178B4a';
    for (const args of [['--conversation', token, '--dry-run'], ['--conversation', token, '--yes'], ['--session', `mvs_${token}`, '--dry-run']]) {
      const r = await cli(['forget', ...args, '--json']);
      expect(r.code, r.stderr).toBe(2);
      expect(envelopeOf(r).error).toMatchObject({ type: 'invalid_args', code: 'conversation_id_credential' });
      expect(r.stdout + r.stderr).not.toContain(token);
    }
    expect(fs.existsSync(tree.stateDir), 'a state dir was made for the refused id').toBe(false);
  });

  it('leaves no copy of the text in a page SQLite rebuilt after it was written (the table grew a level)', async () => {
    // One run per session, so the rows land in order. The messages table's first page, its root,
    // fills from its end: session 3's rows, then session 1's; session 2's then make the root move
    // its rows down a level and keep only pointers, written at its end over session 3's rows.
    writeMessagesSession(tree.dataDir, 3, turnsEnvelopes('s3', [1], { toolBytes: 2_000 }));
    await importAll();
    writeMessagesSession(tree.dataDir, 1, turnsEnvelopes('s1', [1], { question: WORD[1] }));
    expect(envelopeOf(await cli(['sync', '--since', '2026-09-01', '--json'])).data).toMatchObject({ sessions: { delivered: 1 } });
    writeMessagesSession(tree.dataDir, 2, turnsEnvelopes('s2', Array.from({ length: 40 }, (_, i) => i), { toolBytes: 3_000, question: WORD[2] }));
    expect(envelopeOf(await cli(['sync', '--since', '2026-09-01', '--json'])).data).toMatchObject({ sessions: { delivered: 1 } });
    expect(storeBytes()).toContain(WORD[1]);

    const r = envelopeOf(await cli(['forget', '--session', sessionIdFor(1), '--yes', '--json']));
    expect(r.data).toMatchObject({ removedMessages: 4, checkpointed: true });
    expect(storeBytes()).not.toContain(WORD[1]);
    expect(storeBytes()).toContain(WORD[2]);
  });

  it('leaves no copy of the text on a page some earlier write freed', async () => {
    writeMessagesSession(tree.dataDir, 1, turnsEnvelopes('s1', [1], { question: WORD[1] }));
    writeMessagesSession(tree.dataDir, 2, turnsEnvelopes('s2', [1], { question: WORD[2] }));
    await importAll();
    // What a rebalanced b-tree or an index merge leaves: pages back on the free list, still holding
    // what was on them (a writer zeroes only the space it frees inside a page).
    const db = new Database(path.join(tree.stateDir, 'everme.db'));
    db.pragma('secure_delete = OFF');
    db.exec('CREATE TABLE stale (body TEXT)');
    db.prepare('INSERT INTO stale VALUES (?)').run(`${WORD[1]} `.repeat(4000));
    db.exec('DROP TABLE stale');
    expect(Number(db.pragma('freelist_count', { simple: true }))).toBeGreaterThan(0);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    expect(storeBytes()).toContain(WORD[1]);

    const r = envelopeOf(await cli(['forget', '--session', sessionIdFor(1), '--yes', '--json']));
    expect(r.data).toMatchObject({ checkpointed: true });
    expect(storeBytes()).not.toContain(WORD[1]);
    expect(await searchHits(WORD[2])).toHaveLength(1);
  });

  it('forgets while another process reads the store, and says the last bytes leave the log once that reader closes', async () => {
    writeTree();
    await importAll();
    // Another process's reader (an open MCP server, say): a read transaction holding its snapshot.
    const reader = new Database(path.join(tree.stateDir, 'everme.db'), { readonly: true });
    try {
      reader.prepare('BEGIN').run();
      expect(reader.prepare('SELECT count(*) AS n FROM messages').get()).toMatchObject({ n: expect.any(Number) as number });

      const r = envelopeOf(await cli(['forget', '--session', sessionIdFor(1), '--yes', '--json']));
      expect(r.data).toMatchObject({ dryRun: false, removedMessages: 8, checkpointed: false });
      const text = await cli(['forget', '--session', sessionIdFor(2), '--yes']);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toContain('note: another process is reading the store; the last deleted bytes leave the file once it closes.');
      // Gone for everyone else already.
      expect(await searchHits(WORD[1])).toEqual([]);
      expect(await searchHits(WORD[2])).toEqual([]);
    } finally {
      reader.close();
    }
    // The reader gone, the next forget checkpoints fully and no forgotten word is left in the file.
    const after = envelopeOf(await cli(['forget', '--session', sessionIdFor(4), '--yes', '--json']));
    expect(after.data).toMatchObject({ checkpointed: true });
    expect(storeBytes()).not.toContain(WORD[1]);
    expect(storeBytes()).not.toContain(WORD[2]);
    expect(storeBytes()).toContain(WORD[3]);
  });

  it('--conversation, --project and --before each pick exactly their conversations', async () => {
    writeTree();
    await importAll();
    const forget = async (...args: string[]) => {
      const r = envelopeOf(await cli(['forget', ...args, '--yes', '--json']));
      expect(r.ok, JSON.stringify(r.error)).toBe(true);
      return (r.data!.conversations as Array<{ conversationId: string }>).map((c) => c.conversationId);
    };
    expect(await forget('--conversation', conversationFor(2))).toEqual([conversationFor(2)]);
    expect(await forget('--project', '/home/dev/ledger-project')).toEqual([conversationFor(3)]);
    // Session 1's last message is on 2026-09-10, session 4's on 2026-09-11.
    expect(await forget('--before', '2026-09-11')).toEqual([conversationFor(1)]);
    const bytes = storeBytes();
    for (const n of [1, 2, 3] as const) {
      expect(bytes).not.toContain(WORD[n]);
      expect(await searchHits(WORD[n])).toEqual([]);
    }
    expect(bytes).toContain(WORD[4]);
    expect(await importAll()).toMatchObject({ messages: 0, sessions: { forgotten: 3, unchanged: 1 } });
  });

  it('--dry-run lists and changes nothing; without a terminal, or with --json, it needs --yes', async () => {
    writeTree();
    await importAll();
    const dry = await cli(['forget', '--project', '/home/dev', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('would forget 1 conversation');
    expect(dry.stdout).toContain(conversationFor(3));
    expect(await searchHits(WORD[3])).toHaveLength(1);

    const noTty = await cli(['forget', '--project', '/home/dev']);
    expect(noTty.code).toBe(2);
    expect(noTty.stderr).toMatch(/hint: Add --yes/);
    const json = envelopeOf(await cli(['forget', '--project', '/home/dev', '--json']));
    expect(json.error).toMatchObject({ type: 'invalid_args' });
    expect(await searchHits(WORD[3])).toHaveLength(1);

    const blank = [
      ['forget', '--conversation', '', '--yes'],
      ['forget', '--session', '', '--yes'],
      // Not a session id at all: a path, blanks inside.
      ['forget', '--session', '../mvs_x', '--yes'],
      ['forget', '--session', 'mvs typo', '--yes'],
    ];
    for (const bad of [['forget'], ['forget', '--session', 'a', '--project', 'b'], ['forget', '--undo', '--project', 'x'], ['forget', '--before', 'soon'], ...blank]) {
      const r = await cli(bad);
      expect(r.code, bad.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^error: .*\nhint: /);
    }
    // Nothing was tombstoned: a blank id is refused before the store is opened.
    const reader = new Database(path.join(tree.stateDir, 'everme.db'), { readonly: true });
    expect(reader.prepare('SELECT count(*) AS n FROM tombstones').get()).toEqual({ n: 0 });
    reader.close();
  });
});

/** util-linux `script` gives the CLI a real terminal (a pty), as a user at a shell has. */
const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;

describe('everme forget on a terminal', { timeout: 120_000 }, () => {
  const forgetCommand = (): string => [process.execPath, cliEntry, 'forget', '--session', sessionIdFor(2), '--data-dir', tree.dataDir].map((a) => `'${a}'`).join(' ');

  function onTerminal(answer: string): { status: number | null; output: string } {
    const r = spawnSync('script', ['-qec', forgetCommand(), '/dev/null'], { input: `${answer}\n`, env: localEnv(), encoding: 'utf8', timeout: 60_000 });
    return { status: r.status, output: r.stdout };
  }

  /** A key pressed once the question is on the screen, as a user at the prompt presses it. */
  async function keyAtPrompt(key: string): Promise<{ status: number | null; output: string }> {
    const child = spawn('script', ['-qec', forgetCommand(), '/dev/null'], { env: localEnv(), stdio: ['pipe', 'pipe', 'ignore'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const done = new Promise<number | null>((resolve) => child.on('close', resolve));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    await waitFor(() => output.includes('[y/N]'), 60_000, 'the question');
    child.stdin.write(key);
    const status = await done;
    clearTimeout(timer);
    child.stdin.end();
    return { status, output };
  }

  it.skipIf(!hasScript)('asks before forgetting; anything but yes keeps everything', async () => {
    writeTree();
    await importAll();
    const declined = onTerminal('n');
    expect(declined.output).toContain('about to forget 1 conversation');
    expect(declined.output).toContain('Forget these 1 conversation(s)? [y/N]');
    expect(declined.status).toBe(130);
    expect(await searchHits(WORD[2])).toHaveLength(1);

    // Ctrl-C and Ctrl-D at the prompt are a no, not a failure.
    for (const key of ['\x03', '\x04']) {
      const aborted = await keyAtPrompt(key);
      expect(aborted.status, JSON.stringify(key)).toBe(130);
      expect(aborted.output).toContain('\nerror: Nothing was forgotten');
      expect(aborted.output).not.toContain('Aborted');
    }
    expect(await searchHits(WORD[2])).toHaveLength(1);

    const accepted = onTerminal('y');
    expect(accepted.status).toBe(0);
    expect(accepted.output).toContain('forgot 1 conversation');
    expect(await searchHits(WORD[2])).toEqual([]);
  });
});

describe('everme forget, gateway', { timeout: 120_000 }, () => {
  it('says plainly that the gateway keeps what it received, and tombstones so nothing more is sent', async () => {
    // The gateway alone (EVERME_LOCAL_STORE=0): nothing is stored locally.
    const gatewayOnly = { ...tree.env, EVERME_LOCAL_STORE: '0' };
    const { file1 } = writeTree();
    expect((await cli(['import', '--since', '2026-09-01', '--json'], gatewayOnly)).code).toBe(0);
    const before = tree.gateway.requestsTo('/mem/agent-memory').length;
    // Only the gateway holds them, yet a project still finds its conversations.
    const byProject = envelopeOf(await cli(['forget', '--project', '/home/dev/ledger-project', '--dry-run', '--json'], gatewayOnly));
    expect(byProject.data!.conversations).toMatchObject([{ conversationId: conversationFor(3), sentToGateway: true, storedMessages: 0 }]);
    expect(tree.gateway.messagesFor(conversationFor(1))).not.toEqual([]);

    const text = await cli(['forget', '--session', sessionIdFor(1), '--yes'], gatewayOnly);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('[sent to the EverMe gateway]');
    expect(text.stdout).toContain("EverMe's public API has no delete");
    expect(text.stdout).toContain('was NOT deleted');
    expect(text.stdout).not.toMatch(/deleted from (the )?(EverMe|gateway)/i);

    // Nothing more reaches the gateway: not a re-import, not a sync, not an append.
    expect(envelopeOf(await cli(['import', '--since', '2026-09-01', '--json'], gatewayOnly)).data).toMatchObject({ messages: 0, sessions: { forgotten: 1 } });
    appendLines(file1, turnsEnvelopes('s1', [3], { question: WORD[1] }));
    expect(envelopeOf(await cli(['sync', '--since', '2026-09-01', '--json'], gatewayOnly)).data).toMatchObject({ messages: 0, requests: 0 });
    expect(tree.gateway.requestsTo('/mem/agent-memory')).toHaveLength(before);

    const json = envelopeOf(await cli(['forget', '--session', sessionIdFor(2), '--yes', '--json'], gatewayOnly));
    expect(json.data).toMatchObject({ sentToGateway: 1, gatewayNote: expect.stringContaining('NOT deleted') as unknown });

    // --undo: the next sync sends only what the gateway does not hold yet (the appended turn).
    expect((await cli(['forget', '--undo', '--conversation', conversationFor(1)], gatewayOnly)).code).toBe(0);
    const synced = envelopeOf(await cli(['sync', '--since', '2026-09-01', '--json'], gatewayOnly)).data!;
    expect(synced).toMatchObject({ messages: 4, sessions: { delivered: 1, forgotten: 1 } });
    expect(tree.gateway.messagesFor(conversationFor(1)).filter((m) => m.content?.includes(WORD[1]))).toHaveLength(3);
  });

  it('counts as sent what a running sync sent to the gateway while the forget waited for that session', async () => {
    writeMessagesSession(tree.dataDir, 1, turnsEnvelopes('s1', [1, 2], { question: WORD[1] }));
    let letGo = (): void => undefined;
    tree.gateway.failNext({ kind: 'hold', until: new Promise<void>((resolve) => (letGo = resolve)), path: '/mem/agent-memory' });
    const sync = startCli(['sync', '--since', '2026-09-01', '--json', '--data-dir', tree.dataDir], tree.env);
    // The sync holds session 1's lock and its upload is at the gateway, not yet acknowledged.
    await waitFor(() => tree.gateway.requestsTo('/mem/agent-memory').length === 1, 30_000, 'the sync to send');
    const forget = startCli(['forget', '--session', sessionIdFor(1), '--yes', '--data-dir', tree.dataDir], tree.env);
    // Planned and tombstoned, with no gateway mark yet: now it waits for the sync's lock.
    await waitFor(() => tombstoned(conversationFor(1)), 30_000, 'the forget to tombstone');
    letGo();
    expect((await sync.done).code).toBe(0);
    const text = await forget.done;
    expect(text.code, text.stderr).toBe(0);
    expect(tree.gateway.messagesFor(conversationFor(1))).not.toEqual([]);
    expect(text.stdout).toContain('[sent to the EverMe gateway]');
    expect(text.stdout).toContain('was NOT deleted');
    expect(text.stdout).not.toContain('none of these was sent');
  });

  it('with the embedded store kept too, removes the conversation from it and still says the gateway keeps it', async () => {
    writeTree();
    expect((await cli(['import', '--since', '2026-09-01', '--json'], tree.env)).code).toBe(0);
    const planned = envelopeOf(await cli(['forget', '--session', sessionIdFor(1), '--dry-run', '--json'], tree.env));
    expect(planned.data!.conversations).toMatchObject([{ conversationId: conversationFor(1), sentToGateway: true, storedMessages: 8 }]);
    const json = envelopeOf(await cli(['forget', '--session', sessionIdFor(1), '--yes', '--json'], tree.env));
    expect(json.data).toMatchObject({ sentToGateway: 1, removedMessages: 8, gatewayNote: expect.stringContaining('NOT deleted') as unknown });
    expect(envelopeOf(await cli(['search', WORD[1], '--sink', 'local', '--json'], tree.env)).data).toEqual({ results: [] });
    const again = envelopeOf(await cli(['import', '--since', '2026-09-01', '--json'], tree.env)).data!;
    expect(again).toMatchObject({ messages: 0, sessions: { forgotten: 1 }, sinks: [{ sink: 'everme', messages: 0 }, { sink: 'local', messages: 0 }] });
  });
});
