import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { WarningCollector } from '../src/core/warnings.js';
import { openSessionHistory } from '../src/transcript/session-history.js';
import { makeSession, tempDir } from './transcript-helpers.js';

const TARGET_BYTES = 300 * 1024 * 1024;
const LINES_PER_CHUNK = 2_000;
const SID = 'mvs_00000000000000000000000000000300';

const root = tempDir();
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** ~1 KiB envelopes (CJK text, so multi-byte sequences straddle read chunks); returns the line count. */
function writeLargeTranscript(file: string): number {
  const text = '内存有界的流式读取测试。'.repeat(20) + 'streaming must stay bounded '.repeat(10);
  const fd = fs.openSync(file, 'w');
  let written = 0;
  let lines = 0;
  try {
    while (written < TARGET_BYTES) {
      let chunk = '';
      for (let i = 0; i < LINES_PER_CHUNK; i += 1, lines += 1) {
        const role = lines % 2 === 0 ? 'user' : 'assistant';
        chunk += `{"message_id":"msg-${lines}","turn_id":"turn_${lines >> 3}","message":{"role":"${role}","content":[{"type":"text","text":"${text}"}],"timestamp":${1789355112345 + lines}}}\n`;
      }
      written += fs.writeSync(fd, chunk);
    }
  } finally {
    fs.closeSync(fd);
  }
  return lines;
}

describe('memory', () => {
  it(
    'streams a 300 MB messages.jsonl with bounded memory',
    async () => {
      const dir = makeSession(root, '2026/09/01', SID, { files: { 'messages.jsonl': '' } });
      const file = path.join(dir, 'messages.jsonl');
      const expectedLines = writeLargeTranscript(file);
      expect(fs.statSync(file).size).toBeGreaterThanOrEqual(TARGET_BYTES);

      const warnings = new WarningCollector();
      const history = openSessionHistory({ sessionId: SID, dir, createdAtMs: 1 }, warnings);
      const startRss = process.memoryUsage().rss;
      let peakRss = startRss;
      let count = 0;
      let lastKey = '';
      for await (const item of history.items()) {
        count += 1;
        lastKey = item.key;
        if (count % 1_000 === 0) peakRss = Math.max(peakRss, process.memoryUsage().rss);
      }
      fs.rmSync(file);

      expect(count).toBe(expectedLines);
      expect(lastKey).toBe(`msg-${expectedLines - 1}`);
      expect(warnings.entries()).toEqual([]);
      expect(peakRss - startRss).toBeLessThan(150 * 1024 * 1024);
    },
    90_000,
  );
});
