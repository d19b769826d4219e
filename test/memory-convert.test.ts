import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { WarningCollector, type WarningEntry } from '../src/core/warnings.js';
import type { KeyedMessage } from '../src/core/agent-message.js';
import { Converter } from '../src/memory/convert.js';
import type { HistoryItem } from '../src/transcript/types.js';

type Raw = Record<string, unknown>;

/** Items numbered by position: key `k<line>`, location `messages.jsonl:<line>`. */
function items(messages: Raw[]): HistoryItem[] {
  return messages.map((message, i) => ({ key: `k${i + 1}`, message, location: { file: 'messages.jsonl', line: i + 1 } }));
}

function convertAll(messages: Raw[]): { out: KeyedMessage[]; warnings: WarningEntry[] } {
  const warnings = new WarningCollector();
  const converter = new Converter(warnings);
  const out: KeyedMessage[] = [];
  for (const item of items(messages)) {
    const converted = converter.convert(item);
    if (converted) out.push(converted);
  }
  return { out, warnings: warnings.entries() };
}

/** `{code: count}` for compact assertions. */
function counts(warnings: WarningEntry[]): Record<string, number> {
  return Object.fromEntries(warnings.map((w) => [w.code, w.count]));
}

const T = 1_789_355_112_345;
const user = (content: unknown, extra: Raw = {}): Raw => ({ role: 'user', content, timestamp: T, ...extra });
const text = (t: string): Raw => ({ type: 'text', text: t });
const call = (id: unknown, name: unknown = 'bash', args: unknown = { command: 'ls' }): Raw => ({
  type: 'toolCall',
  id,
  name,
  arguments: args,
});
const assistant = (content: unknown[], stopReason = 'stop', extra: Raw = {}): Raw => ({
  role: 'assistant',
  content,
  stopReason,
  timestamp: T + 1,
  ...extra,
});
const result = (toolCallId: unknown, content: unknown[] = [text('ok')], extra: Raw = {}): Raw => ({
  role: 'toolResult',
  toolCallId,
  toolName: 'bash',
  content,
  isError: false,
  timestamp: T + 2,
  ...extra,
});

const messagesFixture = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  'fixtures/minimax/messages-session/v2/sessions/2026/09/14/03-05-12-345-session_bXZzXzNmOWMyYTdkNDFlODRiMGM5ZDVhNmUxZjdiMmM4ZDQw/messages.jsonl',
);

describe('Converter on the MiniMax example session', () => {
  it('converts the 6 messages of messages.jsonl into exactly this agent memory', () => {
    const lines = fs.readFileSync(messagesFixture, 'utf8').split('\n').filter((l) => l !== '');
    const envelopes = lines.map((l) => JSON.parse(l) as { message_id: string; message: Raw });
    const warnings = new WarningCollector();
    const converter = new Converter(warnings);
    const out = envelopes.map((e, i) =>
      converter.convert({ key: e.message_id, message: e.message, location: { file: 'messages.jsonl', line: i + 1 } }),
    );

    expect(out).toStrictEqual([
      {
        key: 'msg-user-v1-TT-2acGp0U1lMo3y4R74dsyPMdw-ZgpLGDVPiFESMBI',
        message: {
          role: 'user',
          timestamp: 1789355113545,
          content: 'List the files in the repo root and tell me which one is the build script.',
        },
      },
      {
        key: 'msg-BvRcn5IcxXax0C0DHEAvMRHYS508CAFMnDFfDsoklvw',
        message: {
          role: 'assistant',
          timestamp: 1789355116445,
          content: 'Let me check the directory.',
          toolCalls: [{ id: 'call_fx_01', type: 'function', name: 'bash', arguments: '{"command":"ls -1","timeout":30}' }],
          turnComplete: false,
        },
      },
      {
        key: 'msg-nQCy7aUHy2l-7BYTx4VgDFPnxzfDgboYm6BlzcAX5BM',
        message: { role: 'tool', timestamp: 1789355116695, toolCallId: 'call_fx_01', content: 'Makefile\nREADME.md\nsrc\n' },
      },
      {
        key: 'msg-4wQWLiri2Do-XM8O_APngfTvWXos8pHyMqijm9NHeY0',
        message: {
          role: 'assistant',
          timestamp: 1789355118365,
          content: 'The build script is the `Makefile` in the root.',
          turnComplete: true,
        },
      },
      {
        key: 'msg-user-v1-cK2fws7H0t73fLTAikYD5JOebNGTeQhr02Uumu94Ii4',
        message: { role: 'user', timestamp: 1789355172345, content: 'Thanks, that is all.' },
      },
      {
        key: 'msg-8ouVXB57X3srEqO_EiJQIflKJeCwH5DY5hoqLSr8fGM',
        message: { role: 'assistant', timestamp: 1789355173845, content: "You're welcome.", turnComplete: true },
      },
    ]);
    expect(warnings.entries()).toEqual([]);
  });

  it('converts a conversation of a single message', () => {
    const { out, warnings } = convertAll([user('hello')]);
    expect(out).toStrictEqual([{ key: 'k1', message: { role: 'user', timestamp: T, content: 'hello' } }]);
    expect(warnings).toEqual([]);
  });
});

describe('user messages', () => {
  it('joins text blocks with a newline and drops images', () => {
    const { out } = convertAll([user([text('first'), { type: 'image', data: 'iVBORw0K', mimeType: 'image/png' }, text('second')])]);
    expect(out[0]?.message).toStrictEqual({ role: 'user', timestamp: T, content: 'first\nsecond' });
  });

  it('removes system reminders the runtime prefixed, even several and multi-line ones', () => {
    const { out } = convertAll([
      user([text('<system-reminder>\ncwd: /repo\ntoday: Monday\n</system-reminder>'), text('Fix the build<system-reminder>x</system-reminder>')]),
      user('<system-reminder>a</system-reminder>\n\nWhy?'),
    ]);
    expect(out.map((m) => m.message.content)).toStrictEqual(['Fix the build', 'Why?']);
  });

  it('removes the <plugin-hook-context> blocks the host stores recalled context in, secrets inside them included', () => {
    const secret = 'evt_a1b2c3d4e5f6a7b8c9d0PLANTED';
    const { out, warnings } = convertAll([
      user([text(`<plugin-hook-context>\n> Retrieved memory\n- token ${secret}\n</plugin-hook-context>`), text('What next?')]),
      user(`<system-reminder>cwd</system-reminder><plugin-hook-context>only recalled memory ${secret}</plugin-hook-context>\n`),
    ]);
    expect(out.map((m) => m.message.content)).toStrictEqual(['What next?']);
    expect(JSON.stringify(out)).not.toContain('PLANTED');
    expect(JSON.stringify(out)).not.toContain('Retrieved memory');
    expect(warnings).toEqual([]);
  });

  it('cleans ANSI escapes, CRLF and trailing blanks', () => {
    const { out } = convertAll([user('\x1b[31mred\x1b[0m line  \r\nnext\t\r\n  indented')]);
    expect(out[0]?.message.content).toBe('red line\nnext\n  indented');
  });

  it('drops, without a warning, a user message left with no text (image-only or reminder-only)', () => {
    const { out, warnings } = convertAll([
      user([{ type: 'image', data: 'iVBORw0K', mimeType: 'image/png' }]),
      user('<system-reminder>only context</system-reminder>\n  '),
      user([]),
    ]);
    expect(out).toEqual([]);
    expect(warnings).toEqual([]);
  });
});

describe('assistant messages', () => {
  it('never uploads thinking, redacted or not', () => {
    const { out, warnings } = convertAll([
      assistant([
        { type: 'thinking', thinking: 'PRIVATE-THOUGHT-1', thinkingSignature: 'sig' },
        { type: 'thinking', thinking: 'PRIVATE-THOUGHT-2', redacted: true },
        text('Answer.'),
      ]),
      assistant([{ type: 'thinking', thinking: 'PRIVATE-THOUGHT-3' }]),
    ]);
    expect(out).toStrictEqual([
      { key: 'k1', message: { role: 'assistant', timestamp: T + 1, content: 'Answer.', turnComplete: true } },
    ]);
    expect(JSON.stringify(out)).not.toContain('PRIVATE-THOUGHT');
    expect(warnings).toEqual([]);
  });

  it('joins text blocks with a newline and cleans them', () => {
    const { out } = convertAll([assistant([text('One.  '), text('Two.\r\n')])]);
    expect(out[0]?.message.content).toBe('One.\nTwo.');
  });

  it.each<[string, Raw[], string | undefined, boolean]>([
    ['stop, text, no call', [text('Done.')], 'stop', true],
    ['stop, text and a valid call', [text('Running.'), call('c1')], 'stop', false],
    ['stop, whitespace-only text and a valid call', [text('  \n'), call('c1')], 'stop', false],
    // A tool-call block, valid or not, means the turn goes on.
    ['stop, text and only an invalid call', [text('Done.'), call('c1', '')], 'stop', false],
    ['toolUse, text', [text('Running.')], 'toolUse', false],
    ['length, text', [text('Cut off')], 'length', false],
    ['error, text', [text('Partial')], 'error', false],
    ['aborted, text', [text('Partial')], 'aborted', false],
    ['no stopReason, text', [text('Partial')], undefined, false],
  ])('turnComplete for %s', (_name, content, stopReason, expected) => {
    const message: Raw = { role: 'assistant', content, timestamp: T };
    if (stopReason !== undefined) message['stopReason'] = stopReason;
    const { out } = convertAll([message]);
    expect(out).toHaveLength(1);
    expect(out[0]?.message).toMatchObject({ role: 'assistant', turnComplete: expected });
  });

  it('omits content when there is no text and toolCalls when there is no call', () => {
    const { out } = convertAll([assistant([call('c1')], 'toolUse'), assistant([text('Hi.')], 'toolUse')]);
    expect(out.map((m) => m.message)).toStrictEqual([
      {
        role: 'assistant',
        timestamp: T + 1,
        toolCalls: [{ id: 'c1', type: 'function', name: 'bash', arguments: '{"command":"ls"}' }],
        turnComplete: false,
      },
      { role: 'assistant', timestamp: T + 1, content: 'Hi.', turnComplete: false },
    ]);
  });

  it('drops an assistant message left with no text and no valid call, and it ends nothing', () => {
    const { out, warnings } = convertAll([assistant([]), assistant([text(' \n ')]), assistant([call('c1', 'bash', null)], 'stop')]);
    expect(out).toEqual([]);
    expect(counts(warnings)).toStrictEqual({ tool_call_invalid_arguments: 1 });
  });
});

describe('tool calls', () => {
  it('keeps ids and names verbatim and JSON-encodes the arguments', () => {
    const args = { path: 'a.txt', edits: [{ old: 'x', new: 'y' }], n: 1.5, force: false, nothing: null };
    const { out, warnings } = convertAll([assistant([call('toolu_01:AbC/def', 'unknown', args)], 'toolUse')]);
    expect(out[0]?.message).toMatchObject({
      toolCalls: [{ id: 'toolu_01:AbC/def', type: 'function', name: 'unknown', arguments: JSON.stringify(args) }],
    });
    expect(warnings).toEqual([]);
  });

  it.each<[string, Raw, string]>([
    ['no id', { type: 'toolCall', name: 'bash', arguments: {} }, 'tool_call_missing_id'],
    ['an empty id', call(''), 'tool_call_missing_id'],
    ['a numeric id', call(7), 'tool_call_missing_id'],
    ['no id and no name (id is checked first)', { type: 'toolCall', arguments: {} }, 'tool_call_missing_id'],
    ['no name', { type: 'toolCall', id: 'c1', arguments: {} }, 'tool_call_missing_name'],
    ['an empty name', call('c1', ''), 'tool_call_missing_name'],
    ['a non-string name', call('c1', 42), 'tool_call_missing_name'],
    ['no name and array arguments (name is checked first)', { type: 'toolCall', id: 'c1', arguments: [] }, 'tool_call_missing_name'],
    ['array arguments', call('c1', 'bash', ['ls']), 'tool_call_invalid_arguments'],
    ['null arguments', call('c1', 'bash', null), 'tool_call_invalid_arguments'],
    ['string arguments', call('c1', 'bash', '{"command":"ls"}'), 'tool_call_invalid_arguments'],
    ['no arguments', { type: 'toolCall', id: 'c1', name: 'bash' }, 'tool_call_invalid_arguments'],
  ])('drops a call with %s as %s', (_name, block, code) => {
    const { out, warnings } = convertAll([assistant([text('Trying.'), block], 'toolUse')]);
    expect(out[0]?.message).toStrictEqual({ role: 'assistant', timestamp: T + 1, content: 'Trying.', turnComplete: false });
    expect(warnings).toStrictEqual([{ code, count: 1, samples: [{ file: 'messages.jsonl', line: 1 }] }]);
  });

  it('warns once per dropped call and keeps the valid ones in order', () => {
    const { out, warnings } = convertAll([
      assistant([call(''), call('a'), call('b', ''), call('c', 'read', []), call('d', 'read', { path: 'x' })], 'toolUse'),
    ]);
    expect(out[0]?.message.role === 'assistant' && out[0].message.toolCalls?.map((c) => c.id)).toStrictEqual(['a', 'd']);
    expect(counts(warnings)).toStrictEqual({
      tool_call_missing_id: 1,
      tool_call_missing_name: 1,
      tool_call_invalid_arguments: 1,
    });
  });

  it('warns duplicate_tool_call_id once per call that reuses an id already seen', () => {
    const { out, warnings } = convertAll([
      assistant([call('same'), call('same')], 'toolUse'),
      assistant([call('same', '')], 'toolUse'),
      assistant([call('other')], 'toolUse'),
    ]);
    expect(out.map((m) => m.key)).toStrictEqual(['k1', 'k3']);
    expect(counts(warnings)).toStrictEqual({ tool_call_missing_name: 1, duplicate_tool_call_id: 2 });
  });
});

describe('tool results', () => {
  it('becomes a tool message with its native id, text joined, cleaned and not trimmed', () => {
    const { out, warnings } = convertAll([
      assistant([call('c1')], 'toolUse'),
      result('c1', [text('\x1b[32mok\x1b[0m  \r\n'), { type: 'image', data: 'iVBORw0K', mimeType: 'image/png' }, text('line 2\n')]),
    ]);
    expect(out[1]).toStrictEqual({
      key: 'k2',
      message: { role: 'tool', timestamp: T + 2, toolCallId: 'c1', content: 'ok\n\nline 2\n' },
    });
    expect(warnings).toEqual([]);
  });

  it('keeps an empty output as ""', () => {
    const { out } = convertAll([
      assistant([call('c1'), call('c2')], 'toolUse'),
      result('c1', []),
      result('c2', [{ type: 'image', data: 'iVBORw0K', mimeType: 'image/png' }]),
    ]);
    expect(out.slice(1).map((m) => m.message.content)).toStrictEqual(['', '']);
  });

  it.each<[string, Raw]>([
    ['missing', { role: 'toolResult', content: [text('x')], timestamp: T }],
    ['empty', result('')],
    ['not a string', result(12)],
  ])('drops a result whose id is %s (tool_result_missing_id)', (_name, message) => {
    const { out, warnings } = convertAll([assistant([call('c1')], 'toolUse'), message]);
    expect(out).toHaveLength(1);
    expect(warnings).toStrictEqual([{ code: 'tool_result_missing_id', count: 1, samples: [{ file: 'messages.jsonl', line: 2 }] }]);
  });

  it('drops a tool result only when its id names the rejected call uniquely', () => {
    const { out, warnings } = convertAll([assistant([text('Trying.'), call('bad', '')], 'toolUse'), result('bad')]);
    expect(out.map((m) => m.message.role)).toStrictEqual(['assistant']);
    expect(counts(warnings)).toStrictEqual({ tool_call_missing_name: 1, tool_result_of_rejected_call: 1 });
    expect(warnings.find((w) => w.code === 'tool_result_of_rejected_call')?.samples).toStrictEqual([
      { file: 'messages.jsonl', line: 2 },
    ]);
  });

  it('keeps, with duplicate_tool_call_id, a result whose id a valid call shares with a rejected one', () => {
    const { out, warnings } = convertAll([
      assistant([call('dup', 'bash', 'not-an-object')], 'toolUse'),
      assistant([call('dup')], 'toolUse'),
      result('dup', [text('output')]),
    ]);
    expect(out.map((m) => m.message)).toStrictEqual([
      {
        role: 'assistant',
        timestamp: T + 1,
        toolCalls: [{ id: 'dup', type: 'function', name: 'bash', arguments: '{"command":"ls"}' }],
        turnComplete: false,
      },
      { role: 'tool', timestamp: T + 2, toolCallId: 'dup', content: 'output' },
    ]);
    // One for the call that reused the id, one for the ambiguous result.
    expect(counts(warnings)).toStrictEqual({ tool_call_invalid_arguments: 1, duplicate_tool_call_id: 2 });
  });

  it('keeps as it is, with duplicate_tool_call_id, a result whose id two rejected calls share (it names neither uniquely)', () => {
    const { out, warnings } = convertAll([assistant([call('x', ''), call('x', 'bash', [])], 'toolUse'), result('x', [text('output')])]);
    expect(out.map((m) => m.message)).toStrictEqual([{ role: 'tool', timestamp: T + 2, toolCallId: 'x', content: 'output' }]);
    // One for the second call reusing the id, one for the ambiguous result; nothing dropped as "of a rejected call".
    expect(counts(warnings)).toStrictEqual({ tool_call_missing_name: 1, tool_call_invalid_arguments: 1, duplicate_tool_call_id: 2 });
  });

  it('keeps, with unmatched_tool_result, a result that matches no call, never re-matching it', () => {
    const { out, warnings } = convertAll([assistant([call('c1')], 'toolUse'), result('c9', [text('orphan')])]);
    expect(out[1]?.message).toStrictEqual({ role: 'tool', timestamp: T + 2, toolCallId: 'c9', content: 'orphan' });
    expect(warnings).toStrictEqual([{ code: 'unmatched_tool_result', count: 1, samples: [{ file: 'messages.jsonl', line: 2 }] }]);
  });

  it('judges results only against calls seen earlier in the same session', () => {
    const { warnings } = convertAll([result('later'), assistant([call('later')], 'toolUse')]);
    expect(counts(warnings)).toStrictEqual({ unmatched_tool_result: 1 });
    const fresh = new WarningCollector();
    new Converter(fresh).convert(items([result('c1')])[0]!);
    expect(counts(fresh.entries())).toStrictEqual({ unmatched_tool_result: 1 });
  });
});

describe('invalid records', () => {
  it.each<[string, Raw]>([
    ['a user message with a numeric content', user(5)],
    ['a non-number timestamp', user('hi', { timestamp: '1789355112345' })],
    ['a fractional timestamp', user('hi', { timestamp: 1.5 })],
    ['no timestamp', { role: 'user', content: 'hi' }],
    ['a text block without a string text', user([{ type: 'text', text: 7 }])],
    ['a block without a type', assistant([{ text: 'x' }])],
    ['a non-string stopReason', assistant([text('x')], 'stop', { stopReason: 1 })],
    ['an assistant without a timestamp', assistant([text('x')], 'stop', { timestamp: undefined })],
    ['an unknown role', { role: 'system', content: 'x', timestamp: T }],
    ['no role', { content: 'x', timestamp: T }],
  ])('drops %s with invalid_record and its location as the only sample', (_name, message) => {
    const { out, warnings } = convertAll([message]);
    expect(out).toEqual([]);
    expect(warnings).toStrictEqual([{ code: 'invalid_record', count: 1, samples: [{ file: 'messages.jsonl', line: 1 }] }]);
  });

  it('skips compaction summaries and custom markers silently should the reader pass one', () => {
    const { out, warnings } = convertAll([
      { role: 'compactionSummary', summary: 'earlier', tokensBefore: 10, timestamp: T },
      { role: 'custom', customType: 'marker', display: false },
    ]);
    expect(out).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it('ignores unknown keys and unknown block types', () => {
    const { out, warnings } = convertAll([
      user([text('hi'), { type: 'audio', data: 'x' }], { extra: { deep: true } }),
      assistant([text('yo'), { type: 'citation', url: 'x' }], 'end_turn', { usage: { input: 1 } }),
    ]);
    expect(out.map((m) => m.message.content)).toStrictEqual(['hi', 'yo']);
    expect(warnings).toEqual([]);
  });
});

describe('redaction during conversion', () => {
  const OPENAI = 'sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv';
  const GITHUB = 'ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8';

  it('masks secrets in user, assistant and tool text', () => {
    const { out } = convertAll([
      user(`my key is ${OPENAI}`),
      assistant([text(`Using password=hunter2 and ${GITHUB}.`), call('c1')], 'toolUse'),
      result('c1', [text('postgres://app:s3cret@db:5432/x\n')]),
    ]);
    expect(out.map((m) => m.message.content)).toStrictEqual([
      'my key is [REDACTED:openai-key]',
      'Using password=[REDACTED:password] and [REDACTED:github-token].',
      'postgres://app:[REDACTED:url-password]@db:5432/x\n',
    ]);
  });

  it('masks secrets inside tool-call arguments while the arguments stay valid JSON', () => {
    const args = {
      command: `curl -H "Authorization: Bearer ${OPENAI}" https://api.example.com`,
      env: { GITHUB_TOKEN: GITHUB, password: 'hunter2', quote: 'say "hi"\n' },
      files: ['a.txt', 'sk-ant-api03-Xy7zAb3dEf6hIj9kLm2nOp5qRs8tUv-AA'],
    };
    const { out } = convertAll([assistant([call('c1', 'bash', args)], 'toolUse')]);
    const encoded = out[0]?.message.role === 'assistant' ? out[0].message.toolCalls?.[0]?.arguments : undefined;
    expect(JSON.parse(encoded ?? 'null')).toStrictEqual({
      command: 'curl -H "Authorization: Bearer [REDACTED:openai-key]" https://api.example.com',
      env: { GITHUB_TOKEN: '[REDACTED:github-token]', password: '[REDACTED:password]', quote: 'say "hi"\n' },
      files: ['a.txt', '[REDACTED:anthropic-key]'],
    });
    expect(encoded).not.toContain('hunter2');
  });

  it('never puts content into warning samples', () => {
    const secret = 'hunter2-SECRET';
    const { warnings } = convertAll([
      user(secret, { timestamp: 'bad' }),
      assistant([text(secret), call('', secret), call('r1', '', { p: secret })], 'toolUse'),
      result('r1', [text(secret)]),
      result('nope', [text(secret)]),
    ]);
    expect(warnings.length).toBeGreaterThan(3);
    for (const entry of warnings) {
      for (const sample of entry.samples) expect(Object.keys(sample).sort()).toStrictEqual(['file', 'line']);
    }
    expect(JSON.stringify(warnings)).not.toContain(secret);
  });
});

describe('the conversion contract, literally', () => {
  it('non-empty means non-empty: ids and names made of whitespace are kept verbatim', () => {
    const { out, warnings } = convertAll([assistant([call(' ', '\tbash ')], 'toolUse'), result(' ', [text('ran')])]);
    expect(out.map((m) => m.message)).toStrictEqual([
      { role: 'assistant', timestamp: T + 1, toolCalls: [{ id: ' ', type: 'function', name: '\tbash ', arguments: '{"command":"ls"}' }], turnComplete: false },
      { role: 'tool', timestamp: T + 2, toolCallId: ' ', content: 'ran' },
    ]);
    expect(warnings).toEqual([]);
  });

  it('only "" or a non-string id or name is missing', () => {
    const { warnings } = convertAll([assistant([call(''), call(null), call('c1', ''), call('c2', 3)], 'toolUse'), result('')]);
    expect(counts(warnings)).toStrictEqual({ tool_call_missing_id: 2, tool_call_missing_name: 2, tool_result_missing_id: 1 });
  });

  it('a message whose content is absent is a message with empty content, not an invalid record', () => {
    const { out, warnings } = convertAll([
      { role: 'user', timestamp: T },
      { role: 'toolResult', toolCallId: 'c9', timestamp: T + 2 },
    ]);
    // The user said nothing (dropped silently); the tool result is kept with empty output.
    expect(out.map((m) => m.message)).toStrictEqual([{ role: 'tool', timestamp: T + 2, toolCallId: 'c9', content: '' }]);
    expect(counts(warnings)).toStrictEqual({ unmatched_tool_result: 1 });
  });

  it('an assistant row with a stopReason but no content is dropped silently, like an empty one', () => {
    const { out, warnings } = convertAll([{ role: 'assistant', stopReason: 'stop', timestamp: T }, { role: 'assistant', stopReason: 'aborted', errorMessage: 'x', timestamp: T }]);
    expect(out).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it('turnComplete is false whenever the message holds a tool-call block, even an invalid one', () => {
    const { out } = convertAll([assistant([text('Done.'), call('', 'bash')], 'stop'), assistant([text('Done.')], 'stop')]);
    expect(out.map((m) => (m.message.role === 'assistant' ? m.message.turnComplete : undefined))).toStrictEqual([false, true]);
  });
});
