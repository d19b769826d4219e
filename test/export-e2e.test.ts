import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AgentMessage } from '../src/core/agent-message.js';
import { cliEntry, repoRoot } from './support/cli.js';
import { cliEnv, envelopeOf, runCli, spawnAsync, startCli, waitFor } from './support/cli-process.js';
import { useCliTree, type CliTree } from './support/cli-tree.js';
import { storeCount } from './support/store-count.js';

const MESSAGES_SESSION = 'mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40';
const LEDGER_SESSION = 'mvs_9d2e4c6a8b0f41d3a5c7e9f1b3d5f7a9';

interface Line {
  conversationId: string;
  conversation?: Record<string, unknown>;
  key: string;
  message: AgentMessage;
}

let tree: CliTree;
useCliTree((t) => {
  tree = t;
  fs.cpSync(path.join(repoRoot, 'fixtures', 'demo'), t.dataDir, { recursive: true });
});

/** The local sink, whatever key the tree configured. */
function localEnv(stateDir = tree.stateDir): NodeJS.ProcessEnv {
  return cliEnv(tree.root, { EVERME_STATE_DIR: stateDir });
}

async function cli(args: string[], env = localEnv()) {
  return runCli([...args, '--data-dir', tree.dataDir], env);
}

async function importDemo(env = localEnv()): Promise<void> {
  const r = await cli(['import', '--since', '2026-07-01', '--json'], env);
  expect(r.code, r.stderr).toBe(0);
}

/** An export of `conversations` conversations of `turns` messages each, written as `everme export` writes one. */
function writeLargeExport(file: string, conversations: number, turns: number): string[] {
  const out: string[] = [];
  for (let c = 0; c < conversations; c++) {
    const conversationId = `minimaxcode-mvs_${c.toString(16).padStart(32, '0')}`;
    for (let m = 0; m < turns; m++) {
      const timestamp = 1_784_613_773_910 + c * 100_000 + m * 1000;
      const content = `widget message ${c} ${m} ${'lorem ipsum widget '.repeat(10)}`;
      const message = m % 2 === 0 ? { role: 'user', timestamp, content } : { role: 'assistant', timestamp, turnComplete: true, content };
      const conversation = m === 0 ? { conversation: { sessionId: conversationId.slice('minimaxcode-'.length), source: 'ledger', workspaceDir: '/home/demo/projects/widget' } } : {};
      out.push(JSON.stringify({ conversationId, ...conversation, key: `${c}-${m}`, message }));
    }
  }
  fs.writeFileSync(file, out.join('\n') + '\n');
  return out;
}

function lines(text: string): Line[] {
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Line);
}

describe('everme export', { timeout: 120_000 }, () => {
  it('jsonl carries each message exactly as the gateway receives it, with its conversationId', async () => {
    await importDemo();
    // The same sessions sent to the (fake) gateway: its recorded messages are the reference.
    expect((await cli(['import', '--since', '2026-07-01', '--sink', 'everme', '--json'], tree.env)).code).toBe(0);

    const r = await cli(['export']);
    expect(r.code, r.stderr).toBe(0);
    const exported = lines(r.stdout);
    const byConversation = new Map<string, AgentMessage[]>();
    for (const line of exported) byConversation.set(line.conversationId, [...(byConversation.get(line.conversationId) ?? []), line.message]);
    expect([...byConversation.keys()].sort()).toEqual([...tree.gateway.conversations.keys()].sort());
    for (const [id, messages] of byConversation) {
      // Byte for byte: same fields, same order.
      expect(JSON.stringify(messages)).toBe(JSON.stringify(tree.gateway.messagesFor(id)));
    }
    // The first line of each conversation describes it, the others do not repeat it.
    const first = exported.find((l) => l.conversationId === `minimaxcode-${LEDGER_SESSION}`)!;
    expect(first.conversation).toMatchObject({ sessionId: LEDGER_SESSION, source: 'ledger', workspaceDir: '/home/demo/projects/widget' });
    expect(exported.filter((l) => l.conversation !== undefined)).toHaveLength(byConversation.size);
    expect(r.stderr).toContain(`exported ${byConversation.size} conversations, ${exported.length} messages`);
    // Not a terminal: no progress bar.
    expect(r.stderr).not.toContain('ETA');
  });

  it('round trip: export → a fresh store via import --from-export → export gives identical bytes, and a second import changes nothing', async () => {
    await importDemo();
    const out = path.join(tree.root, 'out-a');
    const first = await cli(['export', '--out', out, '--json']);
    expect(first.code, first.stderr).toBe(0);
    const file = path.join(out, 'everme-export.jsonl');
    const original = fs.readFileSync(file);
    expect(original.length).toBeGreaterThan(0);

    const fresh = localEnv(path.join(tree.root, 'state-b'));
    const loaded = envelopeOf(await cli(['import', '--from-export', file, '--json'], fresh));
    expect(loaded.data).toMatchObject({ alreadyImported: false, conversations: 3, messages: lines(original.toString()).length });

    const again = await cli(['export', '--out', path.join(tree.root, 'out-b')], fresh);
    expect(again.code, again.stderr).toBe(0);
    expect(fs.readFileSync(path.join(tree.root, 'out-b', 'everme-export.jsonl')).equals(original)).toBe(true);

    // Exactly once: the same file again is recognised; and a store that already holds the
    // messages (the original one) takes nothing twice even from a different file.
    const twice = envelopeOf(await cli(['import', '--from-export', file, '--json'], fresh));
    expect(twice.data).toMatchObject({ alreadyImported: true, messages: 0 });
    const copy = path.join(tree.root, 'copy.jsonl');
    fs.writeFileSync(copy, Buffer.concat([original, Buffer.from('\n')]));
    const overlap = envelopeOf(await cli(['import', '--from-export', copy, '--json']));
    expect(overlap.data).toMatchObject({ alreadyImported: false, messages: 0 });
    const third = await cli(['export'], fresh);
    expect(Buffer.from(third.stdout).equals(original)).toBe(true);
  });

  it.skipIf(spawnSync('script', ['--version']).status !== 0)('shows a progress bar on a terminal, on stderr', async () => {
    await importDemo();
    const out = path.join(tree.root, 'tty');
    const command = [process.execPath, cliEntry, 'export', '--out', out, '--data-dir', tree.dataDir].map((a) => `'${a}'`).join(' ');
    // stderr alone goes to the pty; stdout (the result) to a file.
    const r = spawnSync('script', ['-qec', `${command} > '${path.join(tree.root, 'stdout.txt')}'`, '/dev/null'], { env: localEnv(), encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/export \[[^\]]*\] \d+\/3 conversations \| \d+ messages/);
    expect(fs.readFileSync(path.join(tree.root, 'stdout.txt'), 'utf8')).not.toContain('conversations |');
  });

  it('is deterministic: the same store gives the same bytes, for jsonl and markdown', async () => {
    await importDemo();
    const a = await cli(['export']);
    const b = await cli(['export']);
    expect(a.stdout).toBe(b.stdout);
    expect(a.code).toBe(0);
    for (const out of ['m1', 'm2']) {
      const run = await cli(['export', '--format', 'markdown', '--out', path.join(tree.root, out)]);
      expect(run.code, run.stderr).toBe(0);
    }
    const names = fs.readdirSync(path.join(tree.root, 'm1')).sort();
    // One file a conversation of the demo store: the byte comparison below runs over all three.
    expect(names.filter((n) => n.endsWith('.md'))).toHaveLength(3);
    expect(names).toEqual(fs.readdirSync(path.join(tree.root, 'm2')).sort());
    for (const name of names) {
      expect(fs.readFileSync(path.join(tree.root, 'm1', name), 'utf8')).toBe(fs.readFileSync(path.join(tree.root, 'm2', name), 'utf8'));
    }
  });

  it('markdown of the fixture sessions matches the checked-in expected files', async () => {
    await importDemo();
    const out = path.join(tree.root, 'md');
    const r = await cli(['export', '--format', 'markdown', '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    for (const session of [MESSAGES_SESSION, LEDGER_SESSION]) {
      const name = `minimaxcode-${session}.md`;
      const expected = fs.readFileSync(path.join(repoRoot, 'fixtures', 'export', name), 'utf8');
      expect(fs.readFileSync(path.join(out, name), 'utf8')).toBe(expected);
    }
  });

  it('markdown gives conversations whose ids clean to the same name a file each, the same name in every export', async () => {
    const file = path.join(tree.root, 'hand-made.jsonl');
    const at = 1_789_000_000_000;
    // Hand-made ids, as an export file written by another tool may hold: both clean to `proj_a`.
    const ids = ['proj/a', 'proj:a'];
    fs.writeFileSync(
      file,
      ids
        .map((conversationId, i) =>
          JSON.stringify({
            conversationId,
            conversation: { sessionId: `mvs_hand${i}`, source: 'ledger', workspaceDir: '/home/u/proj', createdAtMs: at + i },
            key: 'k1',
            message: { role: 'user', timestamp: at + i, content: `question ${i === 0 ? 'slashword' : 'colonword'}` },
          }),
        )
        .join('\n') + '\n',
    );
    const env = localEnv(path.join(tree.root, 'state-hand'));
    expect(envelopeOf(await cli(['import', '--from-export', file, '--json'], env)).data).toMatchObject({ conversations: 2, messages: 2 });
    const out = path.join(tree.root, 'md-hand');
    const r = await cli(['export', '--format', 'markdown', '--out', out], env);
    expect(r.code, r.stderr).toBe(0);
    const names = fs.readdirSync(out).sort();
    expect(names).toHaveLength(2);
    const byId = new Map(names.map((name) => [fs.readFileSync(path.join(out, name), 'utf8').split('\n')[0], name]));
    expect([...byId.keys()].sort()).toEqual(['# proj/a', '# proj:a']);
    expect(fs.readFileSync(path.join(out, byId.get('# proj/a')!), 'utf8')).toContain('slashword');
    expect(fs.readFileSync(path.join(out, byId.get('# proj:a')!), 'utf8')).toContain('colonword');
    // Readable, and stable: one conversation exported alone gets the name it had beside the other.
    for (const name of names) expect(name).toMatch(/^proj_a~[0-9a-f]{10}\.md$/);
    const alone = path.join(tree.root, 'md-alone');
    expect((await cli(['export', '--format', 'markdown', '--conversation', 'proj:a', '--out', alone], env)).code).toBe(0);
    expect(fs.readdirSync(alone)).toEqual([byId.get('# proj:a')]);
  });

  it('forget --undo of a conversation that came only from an export file says how to bring it back, and import --from-export --again does', async () => {
    const file = path.join(tree.root, 'only-here.jsonl');
    const at = 1_789_000_000_000;
    const line = { conversationId: 'proj/b', conversation: { sessionId: 'mvs_only1', source: 'ledger', workspaceDir: '/home/u/proj' }, key: 'k1', message: { role: 'user', timestamp: at, content: 'onlyhereword' } };
    fs.writeFileSync(file, `${JSON.stringify(line)}\n`);
    const env = localEnv(path.join(tree.root, 'state-only'));
    expect(envelopeOf(await cli(['import', '--from-export', file, '--json'], env)).data).toMatchObject({ messages: 1 });
    expect(envelopeOf(await cli(['forget', '--conversation', 'proj/b', '--yes', '--json'], env)).data).toMatchObject({ removedMessages: 1 });

    const undo = await cli(['forget', '--undo', '--conversation', 'proj/b'], env);
    expect(undo.code, undo.stderr).toBe(0);
    // No session files of it here: a sync cannot bring it back, and the output does not say it will.
    expect(undo.stdout).not.toContain('the next `everme sync` reads');
    expect(undo.stdout).toContain(`proj/b is no longer forgotten, but no file of session mvs_only1 is under ${tree.dataDir}, so a sync cannot bring it back.`);
    expect(undo.stdout).toContain('`everme import --from-export FILE --again` loads that file again');

    // Loaded before, the file is skipped; --again loads it, and the conversation is back.
    const skipped = await cli(['import', '--from-export', file], env);
    expect(skipped.stdout).toContain('was imported before: nothing to do (`--again` reads it again).');
    expect(envelopeOf(await cli(['import', '--from-export', file, '--again', '--json'], env)).data).toMatchObject({ alreadyImported: false, conversations: 1, messages: 1 });
    expect(lines((await cli(['export'], env)).stdout).map((l) => l.message)).toEqual([line.message]);
    // Nothing twice: again, it adds nothing the store holds.
    expect(envelopeOf(await cli(['import', '--from-export', file, '--again', '--json'], env)).data).toMatchObject({ messages: 0 });
    const stray = await cli(['import', '--since', '2026-07-01', '--again'], env);
    expect(stray.code).toBe(2);
    expect(stray.stderr).toMatch(/hint: Run `everme import --from-export FILE --again`/);
  });

  it('filters by conversation, project and date', async () => {
    await importDemo();
    const ids = async (...args: string[]) => [...new Set(lines((await cli(['export', ...args])).stdout).map((l) => l.conversationId))].sort();
    expect(await ids('--conversation', MESSAGES_SESSION)).toEqual([`minimaxcode-${MESSAGES_SESSION}`]);
    // The demo's session index places its messages.jsonl session in /home/demo/projects/toolbox.
    expect(await ids('--project', '/home/demo/projects')).toEqual([
      `minimaxcode-${MESSAGES_SESSION}`,
      'minimaxcode-mvs_5a5a5a5a0000411182c3d4e5f6a7b8c9',
      `minimaxcode-${LEDGER_SESSION}`,
    ]);
    expect(await ids('--project', '/home/demo/projects/toolbox')).toEqual([`minimaxcode-${MESSAGES_SESSION}`]);
    expect(await ids('--project', '/home/demo/proj')).toEqual([]);
    expect(await ids('--since', '2026-09-01')).toEqual([`minimaxcode-${MESSAGES_SESSION}`]);
    // Selectors combine: a project's conversations since a day.
    expect(await ids('--project', '/home/demo/projects', '--since', '2026-09-01')).toEqual([`minimaxcode-${MESSAGES_SESSION}`]);
    expect(await ids('--project', '/home/demo/projects/widget', '--since', '2026-09-01')).toEqual([]);
  });

  it('refuses what it cannot do, with invalid_args and a hint', async () => {
    await importDemo();
    const markdownToStdout = await cli(['export', '--format', 'markdown']);
    expect(markdownToStdout.code).toBe(2);
    expect(markdownToStdout.stderr).toMatch(/hint: Pass --out DIR/);
    const jsonToStdout = envelopeOf(await cli(['export', '--json']));
    expect(jsonToStdout.error).toMatchObject({ type: 'invalid_args' });
    const badDate = await cli(['export', '--since', 'last week']);
    expect(badDate.code).toBe(2);
    // An empty --out would have written everme-export.jsonl into the current directory.
    const emptyOut = envelopeOf(await cli(['export', '--out', '', '--json']));
    expect(emptyOut.error).toMatchObject({ type: 'invalid_args', code: 'empty_value', message: '--out is empty' });
  });

  it('answers an --out it cannot create with an io error naming the path, at once', async () => {
    await importDemo();
    const underFile = path.join(tree.root, 'a-file');
    fs.writeFileSync(underFile, 'x');
    // /proc refuses a mkdir in a way node's recursive mkdir retried forever (a core spun until killed).
    // A symlink that points at itself: ELOOP, which was an internal error.
    const loop = path.join(tree.root, 'loop');
    fs.symlinkSync(loop, loop);
    const outs = [path.join(underFile, 'out'), loop, ...(process.platform === 'linux' ? ['/proc/1/everme-nope/out'] : [])];
    for (const out of outs) {
      const r = await spawnAsync(process.execPath, [cliEntry, 'export', '--out', out, '--data-dir', tree.dataDir, '--json'], { env: localEnv(), timeoutMs: 30_000 });
      expect(r.signal, out).toBeNull();
      expect(r.status, out).toBe(5);
      const body = JSON.parse(r.stdout) as { error: { type: string; message: string } };
      expect(body.error.type).toBe('io');
      expect(body.error.message).toContain(path.dirname(out));
    }
  });

  it('import --from-export skips a malformed line with a warning naming its line, and loads the rest', async () => {
    await importDemo();
    const file = path.join(tree.root, 'broken.jsonl');
    const good = (await cli(['export', '--conversation', LEDGER_SESSION])).stdout.split('\n').filter(Boolean);
    const garbage = Array.from({ length: 6 }, (_, i) => `not json ${i}`);
    fs.writeFileSync(file, [good[0], '{"conversationId": "x", "key": "k", "message": {"role": "robot"}}', 'not json', ...good.slice(1), ...garbage].join('\n') + '\n');
    const firstGarbage = good.length + 3;
    const fresh = localEnv(path.join(tree.root, 'state-c'));
    const r = envelopeOf(await cli(['import', '--from-export', file, '--json'], fresh));
    expect(r.data).toMatchObject({
      conversations: 1,
      messages: good.length,
      warnings: { invalid_record: 1, invalid_json: 7 },
      // The first five of each code, like report's samples.
      warningLines: { invalid_record: [2], invalid_json: [3, firstGarbage, firstGarbage + 1, firstGarbage + 2, firstGarbage + 3] },
    });
    const text = await cli(['import', '--from-export', file], localEnv(path.join(tree.root, 'state-d')));
    expect(text.stdout).toContain('warnings: invalid_json 7, invalid_record 1 (lines skipped)');
    expect(text.stdout).toContain(`  invalid_json: lines 3, ${firstGarbage}, ${firstGarbage + 1}, ${firstGarbage + 2}, ${firstGarbage + 3} …\n  invalid_record: line 2`);
    expect(text.stdout).not.toContain('not json');
  });

  it('import --from-export says a line over the message cap was kept, capped at 1 MiB, not skipped', async () => {
    await importDemo();
    const good = (await cli(['export', '--conversation', LEDGER_SESSION])).stdout.split('\n').filter(Boolean);
    const first = JSON.parse(good[0]!) as Line;
    const huge: Line = { ...first, key: `${first.key}-huge`, message: { role: 'user', content: `start ${'x'.repeat(2 * 1024 * 1024)} end`, timestamp: 1 } };
    const file = path.join(tree.root, 'oversized.jsonl');
    fs.writeFileSync(file, [JSON.stringify(huge), 'not json'].join('\n') + '\n');
    const r = await cli(['import', '--from-export', file], localEnv(path.join(tree.root, 'state-capped')));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('messages: 1 new');
    expect(r.stdout).toContain('warnings: invalid_json 1 (lines skipped); oversized_unit 1 (kept, capped at 1 MiB)');
    expect(r.stdout).toContain('  oversized_unit: line 1');
  });

  it('import --from-export keeps a forgotten conversation and an excluded workspace out', async () => {
    await importDemo();
    const file = path.join(tree.root, 'all.jsonl');
    fs.writeFileSync(file, (await cli(['export'])).stdout);
    const all = lines(fs.readFileSync(file, 'utf8'));
    const conversations = [...new Set(all.map((l) => l.conversationId))];
    const workspaceOf = new Map(all.filter((l) => l.conversation?.workspaceDir !== undefined).map((l) => [l.conversationId, String(l.conversation!.workspaceDir)]));
    const excludedWorkspace = [...workspaceOf.values()][0];
    const forgotten = conversations.find((id) => workspaceOf.get(id) !== excludedWorkspace);
    // The premise: a conversation outside the excluded workspace to forget, and one inside it.
    expect(forgotten).toBeDefined();
    expect(excludedWorkspace).toBeDefined();
    const exported = async (env: NodeJS.ProcessEnv): Promise<string[]> => [...new Set(lines((await cli(['export'], env)).stdout).map((l) => l.conversationId))].sort();

    // Forgotten after the export was written: loading that export again does not bring it back.
    const forget = envelopeOf(await cli(['forget', '--conversation', forgotten!, '--yes', '--json']));
    expect(forget.ok).toBe(true);
    const reloaded = envelopeOf(await cli(['import', '--from-export', file, '--json']));
    expect(reloaded.ok).toBe(true);
    expect(await exported(localEnv())).toEqual(conversations.filter((id) => id !== forgotten).sort());

    // A fresh store that excludes a workspace loads everything but that workspace's conversations.
    const excluding = cliEnv(tree.root, { EVERME_STATE_DIR: path.join(tree.root, 'state-excl'), EVERME_EXCLUDE: excludedWorkspace });
    const loaded = envelopeOf(await cli(['import', '--from-export', file, '--json'], excluding));
    expect(loaded.ok).toBe(true);
    const kept = conversations.filter((id) => workspaceOf.get(id) !== excludedWorkspace).sort();
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(conversations.length);
    expect(await exported(excluding)).toEqual(kept);
  });

  it('import --from-export reads the metadata of a line whose message it refuses, and never replaces metadata with a made-up one', async () => {
    const file = path.join(tree.root, 'newer.jsonl');
    const at = 1_789_000_000_000;
    const meta = (sessionId: string, workspaceDir: string) => ({ sessionId, source: 'ledger', workspaceDir, createdAtMs: at, title: `title of ${sessionId}` });
    fs.writeFileSync(
      file,
      [
        // A newer release's role on the line that names the conversation: the message is refused, its metadata is not.
        { conversationId: 'secret-conv', conversation: meta('mvs_secret', '/home/u/proj/secret'), key: 'k0', message: { role: 'system', timestamp: at, content: 'from a newer everme' } },
        { conversationId: 'secret-conv', key: 'k1', message: { role: 'user', timestamp: at + 1, content: 'the omegaword plan' } },
        { conversationId: 'proj/b', conversation: meta('mvs_b1', '/home/u/proj/open'), key: 'k1', message: { role: 'user', timestamp: at + 2, content: 'first betaword' } },
        { conversationId: 'proj/c', conversation: meta('mvs_c1', '/home/u/proj/open'), key: 'k1', message: { role: 'user', timestamp: at + 3, content: 'gammaword' } },
        // proj/b comes back without its metadata (the file names it on its first line only).
        { conversationId: 'proj/b', key: 'k2', message: { role: 'user', timestamp: at + 4, content: 'second betaword' } },
      ]
        .map((l) => JSON.stringify(l))
        .join('\n') + '\n',
    );
    const env = cliEnv(tree.root, { EVERME_STATE_DIR: path.join(tree.root, 'state-newer'), EVERME_EXCLUDE: '/home/u/proj/secret' });
    const loaded = envelopeOf(await cli(['import', '--from-export', file, '--json'], env));
    expect(loaded.data).toMatchObject({ conversations: 2, messages: 3, skipped: { excluded: 1 }, warnings: { invalid_record: 1 } });
    const back = lines((await cli(['export'], env)).stdout);
    expect(back.map((l) => l.conversationId)).toEqual(['proj/b', 'proj/b', 'proj/c']);
    expect(back[0]!.conversation).toMatchObject({ sessionId: 'mvs_b1', source: 'ledger', workspaceDir: '/home/u/proj/open', title: 'title of mvs_b1' });
  });

  it('import --from-export stops at Ctrl-C with exit 130, keeps what it committed, and a re-run loads every line exactly once', async () => {
    const file = path.join(tree.root, 'large.jsonl');
    const written = writeLargeExport(file, 2000, 20);
    const stateDir = path.join(tree.root, 'state-large');
    const env = localEnv(stateDir);
    const args = ['import', '--from-export', file, '--data-dir', tree.dataDir, '--json'];
    const run = startCli(args, env);
    await waitFor(() => storeCount(stateDir, 'SELECT count(*) FROM messages') > 0, 30_000, 'the first committed batch');
    run.child.kill('SIGINT');
    const interrupted = await run.done;

    expect(interrupted.code, interrupted.stderr).toBe(130);
    expect(envelopeOf(interrupted)).toMatchObject({ ok: false, error: { type: 'cancelled' } });
    const committed = storeCount(stateDir, 'SELECT count(*) FROM messages');
    expect(committed).toBeGreaterThan(0);
    expect(committed).toBeLessThan(written.length);
    // Not recorded as loaded: the same file is read again, not recognised as done.
    expect(storeCount(stateDir, 'SELECT count(*) FROM imported_exports')).toBe(0);

    const rerun = await runCli(args, env);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(envelopeOf(rerun).data).toMatchObject({ alreadyImported: false, messages: written.length - committed });
    const stored = lines((await cli(['export'], env)).stdout).map((l) => `${l.conversationId} ${l.key}`);
    expect(stored.sort()).toEqual(lines(written.join('\n')).map((l) => `${l.conversationId} ${l.key}`).sort());
  });
});
