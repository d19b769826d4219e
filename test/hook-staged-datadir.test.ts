import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runInstall } from '../src/install/install-plan.js';
import { readHookCommand } from '../src/install/markdown-hooks.js';
import { readHookEvents } from '../src/hook/hook-events.js';
import { openDatabase } from '../src/store/database.js';
import { LocalStore } from '../src/store/local-store.js';
import { repoRoot } from './support/cli.js';
import { hermeticEnv } from './support/hermetic-env.js';
import { waitForWorkers } from './support/hook-harness.js';
import { sessionIdFor, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { tempDir } from './transcript-helpers.js';

describe('a hook installed for a data dir that is not the default', () => {
  it('captures into that data dir although the host passes no MINIMAX_DATA_DIR', async () => {
    const root = tempDir();
    const data = path.join(root, 'profiles', 'work-minimax');
    const home = path.join(root, 'home');
    fs.mkdirSync(home, { recursive: true });
    writeMessagesSession(data, 1, turnsEnvelopes('staged', [0, 1]));
    await runInstall({ dataDir: data, sourceRoot: repoRoot, detect: { pathEnv: '' } });

    const command = readHookCommand(fs.readFileSync(path.join(data, 'hooks', 'everme-post-tool-use.md'), 'utf8'))!;
    const hook = spawnSync('sh', ['-c', command], {
      input: JSON.stringify({ session_id: sessionIdFor(1), hook_event_name: 'PostToolUse', tool_name: 'bash' }),
      // What MiniMax gives a hook: no MINIMAX_DATA_DIR, and a HOME whose ~/.minimax does not exist.
      env: hermeticEnv(home, { EVERME_MINIMAX_SYNC_INTERVAL_MS: '100' }),
      encoding: 'utf8',
    });
    expect(hook.status).toBe(0);
    expect(hook.stdout).toBe('');

    const stateDir = path.join(data, 'everme');
    expect(readHookEvents(stateDir).map((e) => e.outcome)).toEqual(['claimed']);
    await waitForWorkers(stateDir);
    const db = openDatabase(stateDir);
    try {
      expect(new LocalStore(db).counts()).toEqual({ conversations: 1, messages: 8 });
    } finally {
      db.close();
    }
    expect(fs.existsSync(path.join(home, '.minimax'))).toBe(false);
  }, 60_000);
});
