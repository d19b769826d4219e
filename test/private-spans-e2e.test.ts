import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliEnv, envelopeOf, runCli } from './support/cli-process.js';
import { useCliTree, type CliTree } from './support/cli-tree.js';
import { jsonlOf, ledgerEvent } from './support/delivery-trees.js';
import { indexRecord, writeSessionIndex } from './support/session-index-host.js';
import { makeSession } from './transcript-helpers.js';

/** Planted inside private spans everywhere; must never appear anywhere. Lower-cased checks: FTS keeps terms lower-case. */
const SECRET = 'Hunter2PlantedSecretXyzzy';
/** Written next to every span: must arrive, or the test proves nothing. */
const CANARY = 'visiblecanaryword';
const SESSION = 'mvs_0123456789abcdef0123456789abcdef';
const LEDGER = 'mvs_fedcba9876543210fedcba9876543210';
const T = Date.UTC(2026, 8, 20, 10);

let tree: CliTree;
useCliTree((t) => {
  tree = t;
});

function writeSessions(): void {
  const env = (id: string, message: unknown) => ({ message_id: id, turn_id: 'turn_1', message });
  const messages = [
    env('msg-1', { role: 'user', content: [{ type: 'text', text: `deploy ${CANARY} with <private>\n${SECRET}\n</private> today` }], timestamp: T }),
    env('msg-2', {
      role: 'assistant',
      content: [
        { type: 'text', text: `Using <PRIVATE>${SECRET}</Private> now, ${CANARY}` },
        { type: 'toolCall', id: 'call_1', name: 'bash', arguments: { command: `echo <private>${SECRET}</private> ${CANARY}`, env: { NOTE: `<private>${SECRET}</private>` } } },
      ],
      stopReason: 'toolUse',
      timestamp: T + 1,
    }),
    env('msg-3', { role: 'toolResult', toolCallId: 'call_1', toolName: 'bash', content: [{ type: 'text', text: `${CANARY}\n<private>${SECRET}</private>\ndone` }], isError: false, timestamp: T + 2 }),
    env('msg-4', { role: 'assistant', content: [{ type: 'text', text: `finished ${CANARY}` }], stopReason: 'stop', timestamp: T + 3 }),
    // Unclosed: everything to the end of this message is private.
    env('msg-5', { role: 'user', content: `second ${CANARY} <private>${SECRET}\nand the rest ${SECRET}`, timestamp: T + 4 }),
    env('msg-6', { role: 'assistant', content: [{ type: 'text', text: `ok ${CANARY}` }], stopReason: 'stop', timestamp: T + 5 }),
  ];
  makeSession(tree.dataDir, '2026/09/20', SESSION, { createdAtMs: T, time: '10-00-00-000', files: { 'messages.jsonl': jsonlOf(messages) } });
  const events = [
    ledgerEvent(LEDGER, 1, 'session.created', { record: { sessionId: LEDGER, workspaceDir: '/home/dev/private-project' } }),
    ledgerEvent(LEDGER, 2, 'message.pi_history_appended', {
      messages: [
        { role: 'user', content: [{ type: 'text', text: `ledger ${CANARY} <private>${SECRET}</private>` }], timestamp: T + 10 },
        { role: 'assistant', content: [{ type: 'text', text: `ledger answer ${CANARY}` }], stopReason: 'stop', timestamp: T + 11 },
      ],
    }),
  ];
  makeSession(tree.dataDir, '2026/09/20', LEDGER, { createdAtMs: T, time: '11-00-00-000', files: { 'ledger.jsonl': jsonlOf(events) } });
}

function localEnv(): NodeJS.ProcessEnv {
  return cliEnv(tree.root, { EVERME_STATE_DIR: tree.stateDir });
}

async function cli(args: string[], env = localEnv()) {
  const r = await runCli([...args, '--data-dir', tree.dataDir], env);
  expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
  return r;
}

/** Every byte of a store: the database and its write-ahead log. */
function storeBytes(stateDir: string): string {
  let bytes = '';
  for (const suffix of ['', '-wal']) {
    const file = path.join(stateDir, `everme.db${suffix}`);
    if (fs.existsSync(file)) bytes += fs.readFileSync(file).toString('latin1');
  }
  return bytes;
}

function expectHidden(text: string, where: string): void {
  expect(text.toLowerCase(), where).not.toContain(SECRET.toLowerCase());
  expect(text, where).toContain(CANARY);
}

describe('<private> spans never leave the reader', { timeout: 120_000 }, () => {
  it('the gateway receives [PRIVATE] in every placement, tool arguments still valid JSON', async () => {
    writeSessions();
    await cli(['import', '--since', '2026-09-01', '--json'], tree.env);
    const bodies = tree.gateway.requestsTo('/mem/agent-memory').map((r) => JSON.stringify(r.body));
    expect(bodies.length).toBeGreaterThan(0);
    for (const body of bodies) expectHidden(body, 'gateway body');
    const messages = tree.gateway.messagesFor(`minimaxcode-${SESSION}`);
    expect(messages.map((m) => m.content)).toEqual([
      `deploy ${CANARY} with [PRIVATE] today`,
      `Using [PRIVATE] now, ${CANARY}`,
      `${CANARY}\n[PRIVATE]\ndone`,
      `finished ${CANARY}`,
      `second ${CANARY} [PRIVATE]`,
      `ok ${CANARY}`,
    ]);
    const call = messages[1]!.role === 'assistant' ? messages[1]!.toolCalls![0]! : undefined;
    expect(JSON.parse(call!.arguments)).toEqual({ command: `echo [PRIVATE] ${CANARY}`, env: { NOTE: '[PRIVATE]' } });
    expect(tree.gateway.messagesFor(`minimaxcode-${LEDGER}`)[0]!.content).toBe(`ledger ${CANARY} [PRIVATE]`);
  });

  it('the SQLite file, search, show and export never contain it', async () => {
    writeSessions();
    await cli(['import', '--since', '2026-09-01']);
    let bytes = '';
    for (const suffix of ['', '-wal']) {
      const file = path.join(tree.stateDir, `everme.db${suffix}`);
      if (fs.existsSync(file)) bytes += fs.readFileSync(file).toString('latin1');
    }
    expectHidden(bytes, 'store file');

    const secretSearch = envelopeOf(await cli(['search', SECRET, '--json']));
    expect((secretSearch.data as { results: unknown[] }).results).toEqual([]);
    const canarySearch = await cli(['search', CANARY, '--json']);
    expect((envelopeOf(canarySearch).data as { results: unknown[] }).results.length).toBeGreaterThan(0);
    expectHidden(canarySearch.stdout, 'search');

    for (const args of [['show', SESSION], ['show', SESSION, '--json'], ['show', LEDGER]]) expectHidden((await cli(args)).stdout, args.join(' '));

    expectHidden((await cli(['export'])).stdout, 'jsonl export');
    const out = path.join(tree.root, 'md');
    await cli(['export', '--format', 'markdown', '--out', out]);
    const markdown = fs.readdirSync(out).map((name) => fs.readFileSync(path.join(out, name), 'utf8'));
    expect(markdown).toHaveLength(2);
    for (const text of markdown) expectHidden(text, 'markdown export');
  });

  it("a session's title (MiniMax Code makes it of the first prompt) keeps no span: not in the store, search, report, export, nor loaded from an export", async () => {
    writeSessions();
    const title = `fix the login flow ${CANARY} <private>${SECRET}</private> please`;
    writeSessionIndex(tree.dataDir, 'newest', [indexRecord(SESSION, { title, workspaceDir: '/home/dev/login' })]);
    await cli(['import', '--since', '2026-09-01']);

    const shown = `fix the login flow ${CANARY} [PRIVATE] please`;
    const jsonSearch = await cli(['search', CANARY, '--json']);
    expect(jsonSearch.stdout).toContain(`"title":"${shown}"`);
    expectHidden(jsonSearch.stdout, 'search --json');
    expectHidden((await cli(['search', CANARY])).stdout, 'search');
    expectHidden((await cli(['report', '--json'])).stdout + CANARY, 'report');
    const exported = (await cli(['export'])).stdout;
    expect(exported).toContain(`"title":"${shown}"`);
    expectHidden(exported, 'jsonl export');
    const out = path.join(tree.root, 'md');
    await cli(['export', '--format', 'markdown', '--out', out]);
    for (const name of fs.readdirSync(out)) expectHidden(fs.readFileSync(path.join(out, name), 'utf8') + CANARY, 'markdown export');
    expectHidden(storeBytes(tree.stateDir), 'store file');

    // A file written by hand (or by another tool) with a span in its title, loaded into another store.
    const first = JSON.parse(exported.split('\n')[0]!) as { conversation: Record<string, unknown> };
    first.conversation.title = title;
    const file = path.join(tree.root, 'hand.jsonl');
    fs.writeFileSync(file, `${JSON.stringify(first)}\n`);
    const other = cliEnv(tree.root, { EVERME_STATE_DIR: path.join(tree.root, 'other-state') });
    await cli(['import', '--from-export', file], other);
    const reexported = (await cli(['export'], other)).stdout;
    expect(reexported).toContain(`"title":"${shown}"`);
    expectHidden(reexported, 'export of the loaded file');
    expectHidden(storeBytes(path.join(tree.root, 'other-state')) + CANARY, 'the other store');
  });

  it("a title's terminal controls are gone before its spans are looked for: an escape inside a tag hides nothing, and search, report and status print no ESC", async () => {
    writeSessions();
    // Colour, a reset inside the opening tag, a window-title OSC, a C1 clear-screen and a carriage return.
    const title = `\u001b[31mfix\u001b[0m the login flow ${CANARY} <priv\u001b[0mate>${SECRET}</private> please\u001b]0;pwned\u0007\u009b2J\rdone`;
    writeSessionIndex(tree.dataDir, 'newest', [indexRecord(SESSION, { title, workspaceDir: '/home/dev/login' })]);
    await cli(['import', '--since', '2026-09-01']);

    const shown = `fix the login flow ${CANARY} [PRIVATE] please\ndone`;
    const jsonSearch = await cli(['search', CANARY, '--json']);
    expect(jsonSearch.stdout).toContain(`"title":${JSON.stringify(shown)}`);
    const printed = [jsonSearch.stdout, (await cli(['search', CANARY])).stdout, (await cli(['report'])).stdout, (await cli(['report', '--json'])).stdout];
    const status = await runCli(['status', '--data-dir', tree.dataDir], localEnv());
    printed.push(status.stdout, status.stderr);
    for (const [i, out] of printed.entries()) {
      expect(out, `output ${i}`).not.toMatch(/[\u001b\u0007\u009b\r]/);
      expect(out, `output ${i}`).not.toContain('\\u001b');
      expect(out.toLowerCase(), `output ${i}`).not.toContain(SECRET.toLowerCase());
    }
    expectHidden(storeBytes(tree.stateDir) + CANARY, 'store file');
  });
});
