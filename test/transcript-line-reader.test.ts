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
