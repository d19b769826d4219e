import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { entryPath } from '../src/core/entry-path.js';

describe('the path of a directory entry', () => {
  it('is exactly what path.join gives, for directories already normal and for those it must rewrite', () => {
    const dirs = [
      '/home/u/.minimax/v2/sessions/2026/07/01/02-39-05-869-session_abc',
      '/home/u/.minimax',
      '/..hidden/x',
      '/a/...b/c.',
      'relative/dir',
      '.minimax/v2',
      '/',
      '',
      '.',
      '..',
      './a',
      '../a',
      'a/.',
      'a/..',
      '/a/./b',
      '/a/../b',
      '/a//b',
      '/a/b/',
      '//a',
    ];
    for (const dir of dirs) {
      for (const name of ['manifest.json', 'messages.jsonl', '.hidden', '02-39-05-869-session_abc']) {
        expect(entryPath(dir, name), JSON.stringify([dir, name])).toBe(path.join(dir, name));
      }
    }
  });
});
