/**
 * Time to first useful search: while a long cold import is still running, `everme search` answers
 * from the sessions committed so far (each session commits with its index entries), and never waits
 * for the import to end.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateCorpus } from '../bench/corpus.js';
import { openDatabase } from '../src/store/database.js';
import { cliEnv, envelopeOf, runCli, startCli } from './support/cli-process.js';
import { holdSessionLock, newestSessionIn } from './support/session-hold.js';
import { tempDir } from './transcript-helpers.js';

/** Sessions with a committed fingerprint (their messages and index entries committed with it). */
function committedConversations(stateDir: string): Set<string> | undefined {
  try {
    const db = openDatabase(stateDir, { readonly: true });
    try {
      return new Set(db.prepare<[], string>('SELECT conversation_id FROM conversations WHERE message_count > 0').pluck().all());
    } finally {
      db.close();
    }
  } catch {
    // Not created (or not migrated) yet.
    return undefined;
  }
}

interface SearchResult {
  conversationId: string;
}

describe('search while an import is running', () => {
  it('answers from the sessions committed so far, before the import has finished', async () => {
    const root = tempDir();
    const dataDir = path.join(root, 'data');
    fs.mkdirSync(dataDir);
    const sessions = 800;
    generateCorpus(dataDir, sessions, 24_000);
    const stateDir = path.join(root, 'state');
    const env = cliEnv(root, { EVERME_STATE_DIR: stateDir });
    // The corpus alone was once imported whole before the first search answered (load 28 on two
    // cores): the newest session's lock is held until the search has answered, so the import
    // cannot finish first however fast or slow the machine is.
    const release = holdSessionLock(stateDir, newestSessionIn(dataDir));
    const importRun = startCli(['import', '--since', '2026-01-01', '--data-dir', dataDir, '--sink', 'local', '--json'], env);
    let importDone = false;
    void importRun.done.then(() => {
      importDone = true;
    });

    // Wait for the first commits, then search while the import goes on.
    let answered: { results: SearchResult[]; committedBefore: number } | undefined;
    while (!importDone && answered === undefined) {
      const before = committedConversations(stateDir);
      if (before !== undefined && before.size > 0) {
        const search = await runCli(['search', '--data-dir', dataDir, '--sink', 'local', '--json', '--limit', '50', '--', 'payload'], env);
        expect(search.code).toBe(0);
        const stillRunning = !importDone && importRun.child.exitCode === null;
        const results = (envelopeOf(search).data as { results: SearchResult[] }).results;
        if (stillRunning && results.length > 0) {
          answered = { results, committedBefore: before.size };
          // Every hit is from a session that was committed (the search saw no half-written one),
          // and the import had not committed them all yet.
          const committedAfter = committedConversations(stateDir)!;
          for (const hit of results) expect(committedAfter.has(hit.conversationId)).toBe(true);
          expect(committedAfter.size).toBeLessThan(sessions);
        }
      } else {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    release();
    const finished = await importRun.done;
    expect(finished.code, finished.stderr).toBe(0);
    expect(answered, 'a search answered with hits while the import was still running').toBeDefined();
    expect(answered!.committedBefore).toBeLessThan(sessions);

    // Once the import is over, the same search finds more: the whole tree is in.
    expect(committedConversations(stateDir)!.size).toBe(sessions);
  }, 240_000);
});
