/**
 * Hostile session files: a line too long to hold, a message too long to store, history files that
 * are symlinks. The reader, the converter and the real CLI each keep going, bounded, and say where.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { WarningCollector } from '../src/core/warnings.js';
import { capText, MAX_CONTENT_BYTES } from '../src/memory/content-cap.js';
import { Converter } from '../src/memory/convert.js';
import { redactText } from '../src/core/redact.js';
import { readLines, type LineReaderReport } from '../src/transcript/line-reader.js';
import { cliEnv, envelopeOf, runCli } from './support/cli-process.js';
import { jsonlOf, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { collect, tempDir } from './transcript-helpers.js';

function envelopeLine(id: string, text: string): string {
  return JSON.stringify({ message_id: id, turn_id: 't', message: { role: 'user', content: text, timestamp: 1_790_000_000_000 } });
}

describe('the line reader never builds a string for a line over its cap', () => {
  it('skips the long line with oversized_line at its position and reads the rest of the file', async () => {
    const file = path.join(tempDir(), 'messages.jsonl');
    fs.writeFileSync(file, ['{"a":1}', `{"big":"${'x'.repeat(5000)}"}`, '', '{"b":2}', `${'y'.repeat(3000)}`].join('\n') + '\n{"c":');
    const reports: Array<[string, number]> = [];
    const report: LineReaderReport = (code, lineNo) => reports.push([code, lineNo]);
    for (const highWaterMark of [7, 64, 65536]) {
      reports.length = 0;
      let end;
      const lines = await collect(readLines(file, { maxLineBytes: 1000, highWaterMark, report, onEnd: (r) => (end = r) }));
      expect(lines.map((l) => [l.lineNo, l.line])).toEqual([
        [1, '{"a":1}'],
        [4, '{"b":2}'],
      ]);
      expect(reports).toEqual([
        ['oversized_line', 2],
        ['oversized_line', 5],
      ]);
      expect(end).toMatchObject({ incompleteTail: true, tailLineNo: 6, consumedBytes: fs.statSync(file).size - 5 });
    }
  });

  it('a line of exactly the cap is still read', async () => {
    const file = path.join(tempDir(), 'm.jsonl');
    fs.writeFileSync(file, `${'z'.repeat(1000)}\n`);
    const lines = await collect(readLines(file, { maxLineBytes: 1000, highWaterMark: 100 }));
    expect(lines).toHaveLength(1);
  });

  it('does not follow a symlink: reported as symlinked_file, nothing read', async () => {
    const dir = tempDir();
    const outside = path.join(dir, 'outside.jsonl');
    fs.writeFileSync(outside, '{"secret":1}\n');
    const link = path.join(dir, 'messages.jsonl');
    fs.symlinkSync(outside, link);
    const reports: Array<[string, number]> = [];
    const lines = await collect(readLines(link, { report: (code, lineNo) => reports.push([code, lineNo]) }));
    expect(lines).toEqual([]);
    expect(reports).toEqual([['symlinked_file', 0]]);
  });
});

describe('a stored message is capped at 1 MiB, head and tail around a marker', () => {
  it('keeps valid UTF-8 at both cuts, masks a secret that straddles a cut, and warns oversized_unit', () => {
    const secret = 'ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8';
    const half = Math.floor(MAX_CONTENT_BYTES / 2) - 64;
    // Multi-byte characters everywhere, and a token right where the head is cut.
    const head = '日本語😀'.repeat(Math.ceil(half / 13));
    const raw = `${head.slice(0, half / 3 - 10)} ${secret} ${'中'.repeat(1_000_000)} tail-end ${'é'.repeat(1000)}END`;
    const { text, capped } = capText(raw, redactText);
    expect(capped).toBe(true);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX_CONTENT_BYTES);
    expect(text).not.toContain('\uFFFD');
    expect(text).not.toContain(secret);
    expect(text).not.toContain('ghp_a1B2');
    expect(text.startsWith('日本語😀')).toBe(true);
    expect(text.endsWith('éEND')).toBe(true);
    expect(text).toMatch(/\n\[… \d+ bytes omitted by everme …\]\n/);

    const warnings = new WarningCollector();
    const converted = new Converter(warnings).convert({
      key: 'k',
      message: { role: 'toolResult', toolCallId: 'c', toolName: 'bash', content: [{ type: 'text', text: raw }], timestamp: 1 },
      location: { file: 'messages.jsonl', line: 7 },
    });
    expect(Buffer.byteLength(converted!.message.content ?? '')).toBeLessThanOrEqual(MAX_CONTENT_BYTES);
    expect(warnings.entries()).toEqual(
      expect.arrayContaining([{ code: 'oversized_unit', count: 1, samples: [{ file: 'messages.jsonl', line: 7 }] }]),
    );
  });

  it('leaves text under the cap exactly as cleaning and redaction made it', () => {
    const raw = `x ${'é'.repeat(300_000)} y`;
    expect(capText(raw, (s) => s)).toEqual({ text: raw, capped: false });
  });
});

const peakRss = fileURLToPath(new URL('./support/peak-rss.mjs', import.meta.url));

/**
 * Runs the CLI and reports the peak RSS of the process that did the import: `import` hands the
 * command to a heap-capped child node (src/cli/heap-capped.ts), so the peak is the child's, read
 * from what support/peak-rss.mjs logged at its exit. Undefined when no capped child reported (it
 * did not run, or it died: a crash must not read as a small number).
 */
async function runMeasured(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string; cappedMaxRssMb?: number; parentMaxRssMb?: number }> {
  const log = path.join(tempDir(), 'peak-rss.jsonl');
  const run = await runCli(args, { ...env, NODE_OPTIONS: `${env.NODE_OPTIONS ?? ''} --import=${pathToFileURL(peakRss).href}`, PEAK_RSS_LOG: log });
  const lines = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { capped: boolean; maxRssKb: number }) : [];
  const mb = (capped: boolean) => {
    const found = lines.filter((l) => l.capped === capped);
    return found.length === 1 ? found[0]!.maxRssKb / 1024 : undefined;
  };
  return { code: run.code, stdout: run.stdout, stderr: run.stderr, cappedMaxRssMb: mb(true), parentMaxRssMb: mb(false) };
}

describe('the real CLI on hostile files', () => {
  it('imports around a 64 MB single line in bounded memory, warning oversized_line at its line', async () => {
    const root = tempDir();
    const dataDir = path.join(root, 'data');
    const dir = writeMessagesSession(dataDir, 1, turnsEnvelopes('ok', [0]));
    const file = path.join(dir, 'messages.jsonl');
    const fd = fs.openSync(file, 'a');
    const chunk = Buffer.alloc(1024 * 1024, 0x61);
    fs.writeSync(fd, '{"message_id":"huge","turn_id":"t","message":{"role":"user","content":"');
    for (let i = 0; i < 64; i++) fs.writeSync(fd, chunk);
    fs.writeSync(fd, '","timestamp":1}}\n');
    fs.writeSync(fd, `${envelopeLine('after', 'the line after the huge one')}\n`);
    fs.closeSync(fd);

    const env = cliEnv(root, { MINIMAX_DATA_DIR: dataDir, EVERME_STATE_DIR: path.join(root, 'state'), EVERME_MAX_LINE_BYTES: String(1024 * 1024) });
    const run = await runMeasured(['import', '--since', '2026-09-01', '--sink', 'local', '--json'], env);
    expect(run.code, run.stderr).toBe(0);
    const data = JSON.parse(run.stdout) as { data: { messages: number; warnings: Record<string, number> } };
    expect(data.data.messages).toBe(5);
    expect(data.data.warnings).toEqual({ oversized_line: 1 });
    // A whole 64 MB line as a string and a parsed value costs several times its size. The peak is
    // the capped child's, the one that read the file (the parent that waited for it stays small).
    expect(run.parentMaxRssMb).toBeDefined();
    expect(run.cappedMaxRssMb).toBeDefined();
    expect(run.cappedMaxRssMb).toBeLessThan(200);

    const report = await runCli(['report', '--json'], env);
    expect(JSON.stringify(envelopeOf(report).data)).toContain('"code":"oversized_line","count":1,"samples":[{"file":"messages.jsonl","line":5}]');
  });

  it('stores a 3 MB message as 1 MiB in SQLite, with oversized_unit', async () => {
    const root = tempDir();
    const dataDir = path.join(root, 'data');
    const big = `start ${'word '.repeat(600_000)} finish`;
    const dir = writeMessagesSession(dataDir, 1, []);
    fs.writeFileSync(path.join(dir, 'messages.jsonl'), `${envelopeLine('m1', big)}\n`);
    const stateDir = path.join(root, 'state');
    const env = cliEnv(root, { MINIMAX_DATA_DIR: dataDir, EVERME_STATE_DIR: stateDir });
    const run = await runCli(['import', '--since', '2026-09-01', '--sink', 'local', '--json'], env);
    expect(run.code, run.stderr).toBe(0);
    // Two: the message was cut to 1 MiB, and that message alone is still over one request's budget.
    expect(envelopeOf(run).data).toMatchObject({ messages: 1, warnings: { oversized_unit: 2 } });
    const db = new Database(path.join(stateDir, 'everme.db'), { readonly: true });
    const row = db.prepare('SELECT length(CAST(content AS BLOB)) AS bytes, content FROM messages').get() as { bytes: number; content: string };
    db.close();
    expect(row.bytes).toBeLessThanOrEqual(MAX_CONTENT_BYTES);
    expect(row.content.startsWith('start word')).toBe(true);
    expect(row.content.endsWith('word  finish')).toBe(true);
  });

  it('never follows a symlinked messages.jsonl, snapshot or manifest.json: symlinked_file, nothing imported from outside', async () => {
    const root = tempDir();
    const dataDir = path.join(root, 'data');
    const outside = path.join(root, 'outside.jsonl');
    fs.writeFileSync(outside, jsonlOf(turnsEnvelopes('outside', [0])));
    const linked = writeMessagesSession(dataDir, 1, []);
    fs.rmSync(path.join(linked, 'messages.jsonl'));
    fs.symlinkSync(outside, path.join(linked, 'messages.jsonl'));

    const compacted = writeMessagesSession(dataDir, 2, []);
    const first = { ...turnsEnvelopes('kept', [1])[0]!, history_artifact: { schemaVersion: 1, generation: 1, parentSnapshot: { generation: 0, compactionId: 'c1' } } };
    fs.writeFileSync(path.join(compacted, 'messages.jsonl'), jsonlOf([first]));
    fs.mkdirSync(path.join(compacted, 'snapshots'));
    fs.symlinkSync(outside, path.join(compacted, 'snapshots', 'g000000000000--c1.jsonl'));

    const badManifest = writeMessagesSession(dataDir, 3, turnsEnvelopes('m', [0]));
    const manifestCopy = path.join(root, 'manifest.json');
    fs.renameSync(path.join(badManifest, 'manifest.json'), manifestCopy);
    fs.symlinkSync(manifestCopy, path.join(badManifest, 'manifest.json'));

    const stateDir = path.join(root, 'state');
    const env = cliEnv(root, { MINIMAX_DATA_DIR: dataDir, EVERME_STATE_DIR: stateDir });
    const run = await runCli(['import', '--since', '2026-09-01', '--sink', 'local', '--json'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(envelopeOf(run).data).toMatchObject({ messages: 1, warnings: { symlinked_file: 3 } });
    const db = new Database(path.join(stateDir, 'everme.db'), { readonly: true });
    const contents = db.prepare('SELECT content FROM messages').pluck().all() as string[];
    db.close();
    expect(contents.join('\n')).not.toContain('outside');
    // Each symlink is reported against its own session directory (the one with the symlinked
    // manifest has no session id to name: its manifest was never read).
    const report = envelopeOf(await runCli(['report', '--json'], env)).data as { conversations: Array<{ sessionDir: string; warnings: unknown[] }> };
    const warningsOf = (dir: string) => report.conversations.find((c) => c.sessionDir === dir)?.warnings;
    const symlinked = (file: string) => [{ code: 'symlinked_file', count: 1, samples: [{ file, line: 0 }] }];
    expect(warningsOf(linked)).toEqual(symlinked('messages.jsonl'));
    expect(warningsOf(compacted)).toEqual(symlinked('snapshots/g000000000000--c1.jsonl'));
    expect(warningsOf(badManifest)).toEqual(symlinked('manifest.json'));
    expect(report.conversations).toHaveLength(3);
  });
});
