import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readLines, type ReadLinesResult } from '../src/transcript/line-reader.js';
import { collect, tempDir } from './transcript-helpers.js';

function writeFile(content: string | Buffer): string {
  const file = path.join(tempDir(), 'lines.jsonl');
  fs.writeFileSync(file, content);
  return file;
}

async function readAll(file: string, highWaterMark?: number) {
  let end: ReadLinesResult | undefined;
  const lines = await collect(readLines(file, { highWaterMark, onEnd: (r) => (end = r) }));
  return { lines, end: end! };
}

describe('readLines', () => {
  it('yields non-blank lines with 1-based numbers that still count the blank ones', async () => {
    const file = writeFile('a\n\n   \n\t\r\nb\r\nc\n');
    const { lines, end } = await readAll(file);
    expect(lines.map((l) => [l.lineNo, l.line])).toEqual([
      [1, 'a'],
      [5, 'b\r'],
      [6, 'c'],
    ]);
    expect(end).toEqual({ consumedBytes: fs.statSync(file).size, incompleteTail: false, tailLineNo: 7 });
  });

  it('reports byte offsets that slice each line out of the file', async () => {
    const content = '{"x":"é"}\n\n{"y":"日本"}\n';
    const file = writeFile(content);
    const bytes = fs.readFileSync(file);
    const { lines } = await readAll(file, 3);
    for (const l of lines) expect(bytes.subarray(l.start, l.end).toString('utf8')).toBe(`${l.line}\n`);
  });

  it('holds back a last line without a newline, and yields it once the newline is written', async () => {
    const file = writeFile('{"a":1}\n{"b":');
    const first = await readAll(file);
    expect(first.lines.map((l) => l.line)).toEqual(['{"a":1}']);
    expect(first.end).toEqual({ consumedBytes: 8, incompleteTail: true, tailLineNo: 2 });

    fs.appendFileSync(file, '2}\n');
    const second = await readAll(file);
    expect(second.lines.map((l) => [l.lineNo, l.line])).toEqual([
      [1, '{"a":1}'],
      [2, '{"b":2}'],
    ]);
    expect(second.end.incompleteTail).toBe(false);
  });

  it('does not call trailing whitespace an unfinished line', async () => {
    const { end } = await readAll(writeFile('{"a":1}\n  '));
    expect(end.incompleteTail).toBe(false);
    expect(end.consumedBytes).toBe(8);
  });

  it('decodes CJK and emoji split across read chunks byte-exactly', async () => {
    const texts = ['日本語のテキスト', '中文内容，包含标点。', '한국어 문장', 'mixed ascii 和 汉字 🎉🧠', 'x'.repeat(50) + '漢'];
    const content = texts.map((t) => JSON.stringify({ t })).join('\n') + '\n';
    const file = writeFile(content);
    // 7-byte chunks cut through nearly every 3- and 4-byte UTF-8 sequence.
    const { lines } = await readAll(file, 7);
    expect(lines.map((l) => (JSON.parse(l.line) as { t: string }).t)).toEqual(texts);
    expect(Buffer.from(lines.map((l) => `${l.line}\n`).join(''), 'utf8').equals(fs.readFileSync(file))).toBe(true);
  });

  it('keeps every reader\'s lines whole when readers in flight at once take turns and reuse read buffers', async () => {
    // Default chunk size (the size whose buffers are reused), files of several chunks, and lines of
    // up to ~90 KB, so lines straddle chunk ends: each reader's bytes are its own file's.
    const fileOf = (tag: string): { file: string; lines: string[] } => {
      const lines = Array.from({ length: 40 }, (_, i) => JSON.stringify({ tag, i, text: `${tag}${i} `.repeat(1 + ((i * 7919) % 9000)) }));
      const file = path.join(tempDir(), `${tag}.jsonl`);
      fs.writeFileSync(file, lines.join('\n') + '\n');
      return { file, lines };
    };
    const a = fileOf('alpha');
    const b = fileOf('beta');
    const c = fileOf('gamma');
    expect(fs.statSync(a.file).size).toBeGreaterThan(3 * 256 * 1024);
    const readerA = readLines(a.file);
    const readerB = readLines(b.file);
    const got: Record<string, string[]> = { alpha: [], beta: [], gamma: [] };
    // A reader left early gives its buffer back; the next reader to start takes it while A and B are mid-file.
    for (let turn = 0; ; turn++) {
      const [nextA, nextB] = [await readerA.next(), await readerB.next()];
      if (!nextA.done) got.alpha!.push(nextA.value.line);
      if (!nextB.done) got.beta!.push(nextB.value.line);
      if (turn === 5) {
        const early = readLines(c.file);
        await early.next();
        await early.return({ consumedBytes: 0, incompleteTail: false, tailLineNo: 0 });
        for await (const line of readLines(c.file)) got.gamma!.push(line.line);
      }
      if (nextA.done && nextB.done) break;
    }
    expect(got.alpha).toEqual(a.lines);
    expect(got.beta).toEqual(b.lines);
    expect(got.gamma).toEqual(c.lines);
  });

  it('stops with an AbortError when the signal fires', async () => {
    const file = writeFile('{"a":1}\n'.repeat(10_000));
    const controller = new AbortController();
    const run = async () => {
      for await (const line of readLines(file, { signal: controller.signal, highWaterMark: 64 })) {
        if (line.lineNo === 3) controller.abort();
      }
    };
    await expect(run()).rejects.toMatchObject({ name: 'AbortError' });
  });
});
