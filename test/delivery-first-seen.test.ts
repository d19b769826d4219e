import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { CREATED_AT_MS, writeMessagesSession } from './support/delivery-trees.js';
import { runEngine, type HarnessEnv } from './support/delivery-harness.js';
import { tempDir } from './transcript-helpers.js';

let env: HarnessEnv;
beforeEach(() => {
  const root = tempDir();
  env = { dataDir: path.join(root, 'data'), stateDir: path.join(root, 'state') };
  fs.mkdirSync(env.dataDir);
});

describe('a session seen for the first time', () => {
  it('is never counted unchanged: one with nothing to send is empty the first time, unchanged only after', async () => {
    // Bytes, but nothing to remember: an image-only question and a thinking-only answer.
    writeMessagesSession(env.dataDir, 1, [
      { message_id: 'msg-1', turn_id: 't1', message: { role: 'user', content: [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }], timestamp: CREATED_AT_MS } },
      { message_id: 'msg-2', turn_id: 't1', message: { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm' }], stopReason: 'stop', timestamp: CREATED_AT_MS + 1 } },
    ]);
    const first = await runEngine(env, 'import', 'local');
    expect(first.sessions).toMatchObject({ scanned: 1, unchanged: 0, empty: 1, delivered: 0 });
    const second = await runEngine(env, 'sync', 'local');
    expect(second.sessions).toMatchObject({ scanned: 1, unchanged: 1, empty: 0 });
  });
});
