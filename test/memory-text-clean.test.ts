import { describe, expect, it } from 'vitest';

import { cleanText, stripPluginHookContext, stripSystemReminders, trimBlankEdges } from '../src/memory/text-clean.js';
import { expectLinearTime } from './support/linear-time.js';

describe('cleanText', () => {
  it('removes ANSI colour, cursor, OSC and charset escape sequences', () => {
    const coloured = '\x1b[1;31merror\x1b[0m: \x1b[2K\x1b[1Gdone \x1b]8;;https://x.test\x07link\x1b]8;;\x1b\\ \x1b(Bok\x1b7';
    expect(cleanText(coloured)).toBe('error: done link ok');
  });

  it('turns CRLF and lone CR into LF', () => {
    expect(cleanText('a\r\nb\rc\n')).toBe('a\nb\nc\n');
  });

  it('removes trailing spaces and tabs of every line but keeps indentation and blank lines', () => {
    expect(cleanText('  indented \t\n\t\ncode  \r\n  \nend \t')).toBe('  indented\n\ncode\n\nend');
  });

  it('returns clean text unchanged', () => {
    const text = 'line one\n  line two\n\nline four\n';
    expect(cleanText(text)).toBe(text);
  });

  it('stays linear on hostile input (1 MB each) and on 10 MB of ordinary text', () => {
    const inputs = [
      ' '.repeat(1e6) + 'x',
      (' '.repeat(999) + 'x').repeat(1000),
      '\x1b['.repeat(5e5),
      '\x1b]'.repeat(5e5),
      '\x1b[' + '0'.repeat(1e6),
      '\r'.repeat(1e6),
      ' \r\n'.repeat(3e5),
      'The quick brown fox jumps over the lazy dog and keeps on running.   \r\n'.repeat(140_000),
    ];
    for (const input of inputs) expectLinearTime(cleanText, input);
    expect(cleanText(' '.repeat(1e6) + 'x')).toHaveLength(1e6 + 1);
    expect(cleanText('\x1b['.repeat(5e5))).toBe('');
  });
});

describe('stripSystemReminders', () => {
  it('removes every reminder block, including multi-line ones, and keeps the text around them', () => {
    const text =
      '<system-reminder>\nToday is Monday.\nBe brief.\n</system-reminder>\nFix the build<system-reminder>cwd=/x</system-reminder> please';
    expect(stripSystemReminders(text)).toBe('\nFix the build please');
  });

  it('leaves an opening tag without a closing one as it is', () => {
    const text = 'a<system-reminder>b</system-reminder>c<system-reminder>never closed';
    expect(stripSystemReminders(text)).toBe('ac<system-reminder>never closed');
  });

  it('is linear when closing tags never come', () => {
    const hostile = '<system-reminder>'.repeat(60_000);
    expect(stripSystemReminders(hostile)).toBe(hostile);
    expectLinearTime(stripSystemReminders, hostile);
  });
});

describe('stripPluginHookContext', () => {
  it('removes every block a plugin hook injected, keeping the user text around them and reminders alone', () => {
    const text =
      '<plugin-hook-context>\n> Retrieved memory from past sessions follows.\n- user: old question\n</plugin-hook-context>\nFix the build<plugin-hook-context>x</plugin-hook-context> please<system-reminder>r</system-reminder>';
    expect(stripPluginHookContext(text)).toBe('\nFix the build please<system-reminder>r</system-reminder>');
  });

  it('leaves an opening tag without a closing one, and is linear when closing tags never come', () => {
    expect(stripPluginHookContext('a<plugin-hook-context>b</plugin-hook-context>c<plugin-hook-context>open')).toBe('ac<plugin-hook-context>open');
    const hostile = '<plugin-hook-context>'.repeat(50_000);
    expect(stripPluginHookContext(hostile)).toBe(hostile);
    expectLinearTime(stripPluginHookContext, hostile);
  });
});

describe('trimBlankEdges', () => {
  it('drops leading blank lines and trailing whitespace but keeps the first line’s indentation', () => {
    expect(trimBlankEdges('\n  \n    def f():\n        pass\n\n  ')).toBe('    def f():\n        pass');
  });

  it('turns whitespace-only text into an empty string', () => {
    expect(trimBlankEdges(' \n\t\n ')).toBe('');
  });
});
