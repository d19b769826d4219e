import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { discoverSessions } from '../src/transcript/discover.js';
import { locateSession } from '../src/transcript/session-locate.js';
import { buildReport } from '../src/report/warning-report.js';
import { CREATED_AT_MS, conversationFor, expectedTurns, sessionIdFor, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { duplicateKeys, runEngine, settingsFor, storedSignatures, type HarnessEnv } from './support/delivery-harness.js';
import { collect, tempDir } from './transcript-helpers.js';

let env: HarnessEnv;
beforeEach(() => {
  const root = tempDir();
  env = { dataDir: path.join(root, 'data'), stateDir: path.join(root, 'state') };
  fs.mkdirSync(env.dataDir);
});

function setManifest(dir: string, patch: Record<string, unknown>, mtimeMs?: number): void {
  const file = path.join(dir, 'manifest.json');
  const manifest = { ...(JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>), ...patch };
  for (const [key, value] of Object.entries(patch)) if (value === undefined) delete manifest[key];
  fs.writeFileSync(file, JSON.stringify(manifest));
  if (mtimeMs !== undefined) fs.utimesSync(file, mtimeMs / 1000, mtimeMs / 1000);
}

/** The session's live directory, and a restored copy of an older state of it (fewer turns) beside it. */
function sessionWithRestoredCopy(): { live: string; copy: string } {
  const copy = writeMessagesSession(env.dataDir, 1, turnsEnvelopes('dup', [0]), '07-00-00-000');
  const live = writeMessagesSession(env.dataDir, 1, turnsEnvelopes('dup', [0, 1, 2]), '08-00-00-000');
  setManifest(copy, { updatedAtMs: CREATED_AT_MS + 1_000 });
  setManifest(live, { updatedAtMs: CREATED_AT_MS + 9_000 });
  return { live, copy };
}

describe('two directories carrying the same session id', () => {
  it('resolve to the copy with the newest manifest: the larger updatedAtMs', async () => {
    const { live, copy } = sessionWithRestoredCopy();
    const ignored: string[] = [];
    const refs = await collect(discoverSessions(env.dataDir, { onInvalidManifest: () => {}, onDuplicateSession: (dir) => ignored.push(dir) }));
    expect(refs.map((r) => r.dir)).toEqual([live]);
    expect(ignored).toEqual([copy]);
    expect((await locateSession(env.dataDir, sessionIdFor(1)))?.dir).toBe(live);
  });

  it('with equal (or absent) updatedAtMs, the later manifest mtime wins, then the later path', async () => {
    const { live, copy } = sessionWithRestoredCopy();
    setManifest(live, { updatedAtMs: undefined }, CREATED_AT_MS);
    setManifest(copy, { updatedAtMs: undefined }, CREATED_AT_MS + 60_000);
    const byMtime = await collect(discoverSessions(env.dataDir, { onInvalidManifest: () => {} }));
    expect(byMtime.map((r) => r.dir)).toEqual([copy]);
    setManifest(copy, {}, CREATED_AT_MS);
    const byPath = await collect(discoverSessions(env.dataDir, { onInvalidManifest: () => {} }));
    expect(byPath.map((r) => r.dir)).toEqual([[live, copy].sort().at(-1)]);
  });

  it('deliver once from the newest copy, stop alternating fingerprints, and report notes the duplicate', async () => {
    const { copy } = sessionWithRestoredCopy();
    const first = await runEngine(env, 'import', 'local', { sinceMs: Date.UTC(2026, 8, 1) });
    expect(first.sessions).toMatchObject({ scanned: 1, delivered: 1 });
    expect(first.warnings).toMatchObject({ duplicate_session_dir: 1 });
    for (let i = 0; i < 2; i++) {
      const again = await runEngine(env, 'sync', 'local', { sinceMs: Date.UTC(2026, 8, 1) });
      expect(again.sessions).toMatchObject({ scanned: 1, unchanged: 1, delivered: 0 });
      expect(again.removed).toBe(0);
    }
    expect(storedSignatures(env.stateDir, conversationFor(1))).toEqual(expectedTurns('dup', [0, 1, 2]));
    expect(duplicateKeys(env.stateDir)).toEqual([]);

    const report = buildReport(settingsFor(env), { code: 'duplicate_session_dir' });
    expect(report.conversations.map((c) => c.sessionDir)).toEqual([copy]);
    expect(report.totals).toEqual({ duplicate_session_dir: 1 });
  });
});
