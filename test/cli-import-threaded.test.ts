/**
 * The built CLI commits a bulk import on a writer thread (sources run here commit inline): the
 * store it leaves must be the one an inline import leaves, and a write failing on that thread must
 * fail its session only.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateCorpus } from '../bench/corpus.js';
import { openDatabase } from '../src/store/database.js';
import { cliEnv, envelopeOf, runCli, startCli, waitFor } from './support/cli-process.js';
import { repoRoot } from './support/cli.js';
import { duplicateKeys, runEngine } from './support/delivery-harness.js';
import { holdSessionLock, someSessionOf } from './support/session-hold.js';
import { storeCount } from './support/store-count.js';
import { tempDir } from './transcript-helpers.js';

const SINCE = '2026-01-01';

interface StoreDump {
  messages: unknown[];
  conversations: unknown[];
  warnings: unknown[];
  fingerprints: unknown[];
  hits: unknown[];
}

/** Everything an import leaves in the store that does not depend on commit order (row ids, clocks). */
function dump(stateDir: string): StoreDump {
  const db = openDatabase(stateDir, { readonly: true });
  try {
    return {
      messages: db
        .prepare(
          `SELECT conversation_id, msg_key, role, timestamp, content, tool_calls_json, tool_call_id, turn_complete
           FROM messages ORDER BY conversation_id, id`,
        )
        .all(),
      conversations: db.prepare('SELECT * FROM conversations ORDER BY conversation_id').all(),
      warnings: db
        .prepare(
          `SELECT s.set_key, s.conversation_id, s.session_id, s.source, s.history_file, s.session_dir, s.created_at_ms,
                  s.workspace_dir, e.code, e.count, e.samples_json
           FROM warning_sets s JOIN warning_entries e ON e.set_id = s.id ORDER BY s.set_key, e.code`,
        )
        .all(),
      fingerprints: db.prepare('SELECT * FROM fingerprints ORDER BY sink, session_id').all(),
      hits: db
        .prepare(
          `SELECT m.conversation_id, m.msg_key FROM messages_fts f JOIN messages m ON m.id = f.rowid
           WHERE messages_fts MATCH 'migration' ORDER BY m.conversation_id, m.msg_key`,
        )
        .all(),
    };
  } finally {
    db.close();
  }
}

function keysOf(stateDir: string, conversationId: string): string[] {
  const db = openDatabase(stateDir, { readonly: true });
  try {
    return db
      .prepare<[string], string>('SELECT msg_key FROM messages WHERE conversation_id = ? ORDER BY id')
      .pluck()
      .all(conversationId);
  } finally {
    db.close();
  }
}

/** A generated tree plus the fixtures with malformed lines, a broken manifest and a compaction chain. */
function writeTree(root: string, sessions: number): string {
  const dataDir = path.join(root, 'data');
  fs.mkdirSync(dataDir);
  generateCorpus(dataDir, sessions, 6000);
  for (const fixture of ['fixtures/report', 'fixtures/transcript/compacted']) {
    fs.cpSync(path.join(repoRoot, fixture, 'v2'), path.join(dataDir, 'v2'), { recursive: true });
  }
  return dataDir;
}

const cliArgs = (dataDir: string) => ['import', '--since', SINCE, '--data-dir', dataDir, '--sink', 'local', '--json'];

describe('an import committed on the writer thread', () => {
  it('leaves the store an inline import leaves: same messages and keys, warnings, fingerprints and index', async () => {
    const { THREAD_AFTER_CONVERSATIONS, writerThreadUrl } = (await import(
      path.join(repoRoot, 'dist', 'src', 'store', 'local-writer.js')
    )) as typeof import('../src/store/local-writer.js');
    // The built CLI has its thread entry, and this run writes far more conversations than it
    // takes to start the thread.
    expect(writerThreadUrl()).toBeDefined();
    const sessions = 60;
    expect(sessions).toBeGreaterThan(4 * THREAD_AFTER_CONVERSATIONS);

    const root = tempDir();
    const dataDir = writeTree(root, sessions);
    const inline = await runEngine({ dataDir, stateDir: path.join(root, 'inline') }, 'import', 'local', { since: SINCE, concurrency: 4 });
    expect(inline.sessions.failed).toBe(0);

    const threadedState = path.join(root, 'threaded');
    const result = await runCli(cliArgs(dataDir), cliEnv(root, { EVERME_STATE_DIR: threadedState }));
    expect(result.code).toBe(0);
    expect(envelopeOf(result).data).toMatchObject({ messages: inline.messages, sessions: inline.sessions, warnings: inline.warnings });

    const expected = dump(path.join(root, 'inline'));
    expect(expected.warnings.length).toBeGreaterThan(0);
    expect(expected.hits.length).toBeGreaterThan(0);
    expect(dump(threadedState)).toEqual(expected);
  });

  it('fails only the session whose write failed on the thread, reports it, and a re-run stores it once', async () => {
    const root = tempDir();
    const dataDir = writeTree(root, 40);
    const expectedState = path.join(root, 'expected');
    await runEngine({ dataDir, stateDir: expectedState }, 'import', 'local', { since: SINCE, concurrency: 4 });
    const expected = dump(expectedState);

    // The newest session is among the last to commit, well after the thread took over.
    const db = openDatabase(expectedState, { readonly: true });
    const victim = db
      .prepare<[], { conversation_id: string; session_id: string }>(
        'SELECT conversation_id, session_id FROM conversations ORDER BY created_at_ms DESC LIMIT 1',
      )
      .get()!;
    db.close();
    const stateDir = path.join(root, 'state');
    const store = openDatabase(stateDir);
    store.exec(`CREATE TRIGGER fail_one BEFORE INSERT ON messages WHEN NEW.conversation_id = '${victim.conversation_id}'
                BEGIN SELECT RAISE(ABORT, 'forced failure'); END;`);
    store.close();

    const env = cliEnv(root, { EVERME_STATE_DIR: stateDir });
    const failed = await runCli(cliArgs(dataDir), env);
    expect(failed.code).toBe(1);
    const envelope = envelopeOf(failed);
    expect(envelope.error).toMatchObject({ type: 'conflict', detail: { failed: 1 } });
    const summary = (envelope.error!.detail as { summary: { failures: Array<Record<string, string>> } }).summary;
    expect(summary.failures).toEqual([{ sessionId: victim.session_id, type: 'internal', message: expect.stringContaining('forced failure') as unknown }]);
    expect(keysOf(stateDir, victim.conversation_id)).toEqual([]);
    const partial = dump(stateDir);
    expect(partial.messages).toEqual((expected.messages as Array<{ conversation_id: string }>).filter((m) => m.conversation_id !== victim.conversation_id));
    expect(partial.fingerprints).toHaveLength(expected.fingerprints.length - 1);

    const fixed = openDatabase(stateDir);
    fixed.exec('DROP TRIGGER fail_one');
    fixed.close();
    const rerun = await runCli(cliArgs(dataDir), env);
    expect(rerun.code).toBe(0);
    expect(duplicateKeys(stateDir)).toEqual([]);
    expect(dump(stateDir)).toEqual(expected);
  });

  it('stops at Ctrl-C with exit 130, keeps each session whole or absent, and a re-run completes it once', async () => {
    const root = tempDir();
    const dataDir = path.join(root, 'data');
    fs.mkdirSync(dataDir);
    // Several of the writer thread's groups (each waits to grow to a few MiB): with a corpus smaller
    // than one group, everything after the inline start committed at once, before Ctrl-C landed.
    generateCorpus(dataDir, 200, 60_000);
    const expectedState = path.join(root, 'expected');
    await runEngine({ dataDir, stateDir: expectedState }, 'import', 'local', { since: SINCE, concurrency: 4 });
    const expected = dump(expectedState);

    const stateDir = path.join(root, 'state');
    const env = cliEnv(root, { EVERME_STATE_DIR: stateDir });
    // One session's lock held until after Ctrl-C: the import cannot finish before the signal lands
    // (with the corpus alone, it sometimes did on a loaded machine).
    const release = holdSessionLock(stateDir, someSessionOf(expectedState));
    const run = startCli(cliArgs(dataDir), env);
    // Past the inline start: enough sessions committed that the thread is writing.
    await waitFor(() => countFingerprints(stateDir) > 20, 60_000, 'the first sessions on the thread');
    run.child.kill('SIGINT');
    const interrupted = await run.done;
    release();
    expect(interrupted.code).toBe(130);
    expect(envelopeOf(interrupted)).toMatchObject({ ok: false, error: { type: 'cancelled' } });

    // Every session is committed whole (messages with their fingerprint) or not at all.
    const partial = dump(stateDir);
    const done = new Set((partial.fingerprints as Array<{ session_id: string }>).map((f) => f.session_id));
    expect(done.size).toBeLessThan(expected.fingerprints.length);
    const doneConversations = new Set(
      (expected.conversations as Array<{ conversation_id: string; session_id: string }>)
        .filter((c) => done.has(c.session_id))
        .map((c) => c.conversation_id),
    );
    expect(partial.messages).toEqual((expected.messages as Array<{ conversation_id: string }>).filter((m) => doneConversations.has(m.conversation_id)));

    const rerun = await runCli(cliArgs(dataDir), env);
    expect(rerun.code).toBe(0);
    expect(dump(stateDir)).toEqual(expected);
    // Three imports of 200 sessions: a hang budget for a loaded 2-core machine, not a speed limit.
  }, 180_000);
});

function countFingerprints(stateDir: string): number {
  return storeCount(stateDir, 'SELECT count(*) FROM fingerprints');
}
