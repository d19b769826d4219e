import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GET_PAGE_CHARS } from '../src/recall/open-messages.js';
import { cleanEnv, ensureBuilt, repoRoot, runJs } from './recall-cli.js';
import { buildStore, conversationIdFor, type BuiltStore } from './recall-store-fixture.js';
import { tempDir } from './transcript-helpers.js';

/** `everme search` names ids and `everme get` opens them: the CLI spawned as a process (two or three runs a test). */
const SPAWNS = { timeout: 90_000 };

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

let root: string;
let store: BuiltStore;
const LONG = `${'lorem ipsum dolor '.repeat(1200)}final marker`;

function everme(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [runJs, ...args],
      { env: cleanEnv({ EVERME_STATE_DIR: store.stateDir, ...env }), timeout: 60_000, encoding: 'utf8' },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
    );
  });
}

function envelope<T>(run: Run): { ok: boolean; data: T; error?: { type: string; code?: string; message: string } } {
  const lines = run.stdout.split('\n').filter(Boolean);
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!) as { ok: boolean; data: T; error?: { type: string; code?: string; message: string } };
}

beforeAll(async () => {
  ensureBuilt('get');
  root = tempDir();
  const project = path.join(root, 'widget');
  fs.mkdirSync(project, { recursive: true });
  store = await buildStore(
    [
      {
        n: 1,
        workspace: project,
        createdAtMs: Date.UTC(2026, 8, 10, 8, 0, 0),
        texts: ['Why did the nightly export fail?', 'The export ran out of disk; I moved it to /srv/exports.', LONG, 'Long one noted.'],
      },
    ],
    root,
  );
}, 300_000);

afterAll(() => {
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

describe('everme get', () => {
  it('opens what everme search found, whole, by the id search printed', SPAWNS, async () => {
    const search = await everme(['search', '--data-dir', store.dataDir, 'export failed disk']);
    expect(search.code).toBe(0);
    const ids = [...search.stdout.matchAll(/^\d+\. (m\d+) · /gm)].map((m) => m[1]!);
    expect(ids.length).toBeGreaterThan(0);
    const run = await everme(['get', '--data-dir', store.dataDir, ...ids]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('The export ran out of disk; I moved it to /srv/exports.');
    expect(run.stdout).toContain(conversationIdFor(1));
    for (const id of ids) expect(run.stdout).toContain(`## ${id} · `);
  });

  it('--json prints one envelope with each message whole, its conversation, role, time and project', SPAWNS, async () => {
    const search = envelope<{ results: Array<{ id: string; role: string }> }>(await everme(['search', '--data-dir', store.dataDir, '--json', 'nightly export']));
    const asked = search.data.results.find((r) => r.role === 'user')!;
    const env = envelope<{ messages: Array<Record<string, unknown>> }>(await everme(['get', '--data-dir', store.dataDir, '--json', asked.id]));
    expect(env.ok).toBe(true);
    expect(env.data.messages).toEqual([
      {
        id: asked.id,
        conversationId: conversationIdFor(1),
        sessionId: conversationIdFor(1).replace('minimaxcode-', ''),
        role: 'user',
        time: new Date(Date.UTC(2026, 8, 10, 8, 0, 0)).toISOString(),
        project: path.join(root, 'widget'),
        content: 'Why did the nightly export fail?',
        offset: 0,
        totalChars: 32,
      },
    ]);
  });

  it('pages a long message with --offset', SPAWNS, async () => {
    const search = envelope<{ results: Array<{ id: string }> }>(await everme(['search', '--data-dir', store.dataDir, '--json', 'lorem ipsum']));
    const id = search.data.results[0]!.id;
    const first = envelope<{ messages: Array<{ content: string; nextOffset?: number }> }>(await everme(['get', '--data-dir', store.dataDir, '--json', id]));
    expect(first.data.messages[0]!.nextOffset).toBe(GET_PAGE_CHARS);
    const rest = envelope<{ messages: Array<{ content: string; nextOffset?: number }> }>(
      await everme(['get', '--data-dir', store.dataDir, '--json', '--offset', String(GET_PAGE_CHARS), id]),
    );
    expect(first.data.messages[0]!.content + rest.data.messages[0]!.content).toBe(LONG);
    expect(rest.data.messages[0]!.nextOffset).toBeUndefined();
  });

  it('names an unknown id (not_found, exit 1) and rejects a malformed one (invalid_args, exit 2)', SPAWNS, async () => {
    const unknown = await everme(['get', '--data-dir', store.dataDir, '--json', 'm424242']);
    expect(unknown.code).toBe(1);
    expect(envelope(unknown).error).toMatchObject({ type: 'not_found', code: 'message_not_found' });
    expect(envelope(unknown).error!.message).toContain('"m424242"');
    const malformed = await everme(['get', '--data-dir', store.dataDir, 'abc']);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain('Not a message id');
    expect(malformed.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('everme search on the demo data dir', () => {
  it('finds "Bump" for bumped: words match by their stem', SPAWNS, async () => {
    const state = tempDir();
    try {
      const env = { EVERME_STATE_DIR: state };
      const demo = path.join(repoRoot, 'fixtures', 'demo');
      expect((await everme(['import', '--since', '2026-07-01', '--sink', 'local', '--data-dir', demo], env)).code).toBe(0);
      const run = await everme(['search', '--sink', 'local', '--data-dir', demo, 'bumped'], env);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('**Bump** WIDGET_VERSION');
    } finally {
      fs.rmSync(state, { recursive: true, force: true });
    }
  });
});
