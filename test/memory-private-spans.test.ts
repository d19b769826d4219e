import { describe, expect, it } from 'vitest';

import { WarningCollector } from '../src/core/warnings.js';
import type { AgentMessage } from '../src/core/agent-message.js';
import { Converter } from '../src/memory/convert.js';
import { hidePrivateSpans, PrivateSpans, PRIVATE_PLACEHOLDER } from '../src/core/private-spans.js';
import { expectLinearTime } from './support/linear-time.js';

const SECRET = 'hunter2-PLANTED-c0ffee';
const T = 1_789_355_112_345;

function convert(messages: Record<string, unknown>[]): AgentMessage[] {
  const converter = new Converter(new WarningCollector());
  const out: AgentMessage[] = [];
  messages.forEach((message, i) => {
    const converted = converter.convert({ key: `k${i}`, message, location: { file: 'messages.jsonl', line: i + 1 } });
    if (converted) out.push(converted.message);
  });
  return out;
}

describe('hidePrivateSpans', () => {
  it('replaces a span with [PRIVATE], keeping the text around it', () => {
    expect(hidePrivateSpans(`before <private>${SECRET}</private> after`)).toBe(`before ${PRIVATE_PLACEHOLDER} after`);
  });

  it('matches tags case-insensitively and across lines', () => {
    expect(hidePrivateSpans(`a <PRIVATE>\n${SECRET}\nmore\n</Private> b`)).toBe('a [PRIVATE] b');
    expect(hidePrivateSpans(`a < private >${SECRET}</ PRIVATE > b`)).toBe('a [PRIVATE] b');
  });

  it('hides every span of a text', () => {
    expect(hidePrivateSpans(`<private>x</private> and <private>${SECRET}</private>!`)).toBe('[PRIVATE] and [PRIVATE]!');
  });

  it('hides everything to the end when the span is not closed', () => {
    expect(hidePrivateSpans(`keep <private>${SECRET}\nand this too`)).toBe('keep [PRIVATE]');
  });

  it('leaves text without tags, and a stray closing tag, as they are', () => {
    expect(hidePrivateSpans('no tags here')).toBe('no tags here');
    expect(hidePrivateSpans('a </private> b')).toBe('a </private> b');
  });

  it('carries an open span from one piece of a message into the next', () => {
    const spans = new PrivateSpans();
    expect(spans.text(`a <private>${SECRET}`)).toBe('a [PRIVATE]');
    // Inside the span keys are hidden too, and entries wholly inside it fold into one.
    expect(spans.json({ command: SECRET, n: 3 })).toEqual({ [PRIVATE_PLACEHOLDER]: PRIVATE_PLACEHOLDER });
    expect(spans.text(`${SECRET}</private> b`)).toBe(' b');
  });
});

describe('private spans the issue #29 way round', () => {
  const RED = '\x1b[01;31m\x1b[K';
  const OFF = '\x1b[m\x1b[K';

  it('holds when terminal colour codes sit inside the tags (grep --color output)', () => {
    const coloured = `match: <${RED}private${OFF}>${SECRET}</${RED}private${OFF}> done`;
    const [msg] = convert([
      { role: 'assistant', content: [{ type: 'toolCall', id: 'c', name: 'bash', arguments: { command: 'grep -r private' } }], stopReason: 'toolUse', timestamp: T },
      { role: 'toolResult', toolCallId: 'c', content: [{ type: 'text', text: coloured }], timestamp: T + 1 },
      { role: 'user', content: coloured, timestamp: T + 2 },
    ]).slice(1);
    expect(msg).toEqual({ role: 'tool', timestamp: T + 1, toolCallId: 'c', content: 'match: [PRIVATE] done' });
    const all = JSON.stringify(convert([{ role: 'user', content: coloured, timestamp: T }]));
    expect(all).not.toContain(SECRET);
  });

  it('a span opened in a tool-argument key hides the rest of the message, keys included', () => {
    const [msg] = convert([
      {
        role: 'assistant',
        content: [
          { type: 'toolCall', id: 'c1', name: 'write', arguments: { [`note <private>${SECRET}`]: `value ${SECRET}`, [`key-${SECRET}`]: 7 } },
          { type: 'text', text: `after ${SECRET}` },
        ],
        stopReason: 'toolUse',
        timestamp: T,
      },
    ]);
    if (msg?.role !== 'assistant') throw new Error('expected an assistant message');
    expect(JSON.stringify(msg)).not.toContain(SECRET);
    expect(JSON.parse(msg.toolCalls![0]!.arguments)).toEqual({ 'note [PRIVATE]': '[PRIVATE]', '[PRIVATE]': '[PRIVATE]' });
    expect(msg.content).toBeUndefined();
  });

  it('a nested span runs to its matching close tag', () => {
    expect(hidePrivateSpans(`a <private>x <private>inner</private> ${SECRET}</private> b`)).toBe('a [PRIVATE] b');
    expect(hidePrivateSpans(`a <private><private>${SECRET}</private> still hidden`)).toBe('a [PRIVATE]');
    const spans = new PrivateSpans();
    expect(spans.text('<private>1 <private>2')).toBe('[PRIVATE]');
    expect(spans.text(`</private>${SECRET}`)).toBe('');
    expect(spans.text(`</private> seen`)).toBe(' seen');
  });

  it('keys that a span turns into the same text stay apart', () => {
    const spans = new PrivateSpans();
    expect(spans.json({ '<private>a</private>': 1, '<private>b</private>': 2 })).toEqual({ '[PRIVATE]': 1, '[PRIVATE] (2)': 2 });
    expect(Object.keys(spans.json(JSON.parse('{"__proto__": "<private>x</private>"}')) as object)).toEqual(['__proto__']);
  });

  it('stays linear on hostile nesting', () => {
    expectLinearTime((s: string) => hidePrivateSpans(s), '<private>'.repeat(100_000) + '</private>'.repeat(100_000));
    expectLinearTime((s: string) => hidePrivateSpans(s), '<private></private>'.repeat(100_000));
  });
});

describe('private spans in conversion', () => {
  it('hides spans in user text before cleanup and redaction see it', () => {
    const [msg] = convert([{ role: 'user', content: [{ type: 'text', text: `deploy with <private>${SECRET}</private> please` }], timestamp: T }]);
    expect(msg).toEqual({ role: 'user', timestamp: T, content: 'deploy with [PRIVATE] please' });
  });

  it('hides an unclosed span in a user string to the end of the message', () => {
    const [msg] = convert([{ role: 'user', content: `first\n<private>${SECRET}\nsecond line`, timestamp: T }]);
    expect(msg).toEqual({ role: 'user', timestamp: T, content: 'first\n[PRIVATE]' });
  });

  it('hides spans in assistant text and in tool arguments, which stay valid JSON', () => {
    const [msg] = convert([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: `Running <PRIVATE>${SECRET}</PRIVATE> now` },
          { type: 'toolCall', id: 'call_1', name: 'bash', arguments: { command: `echo <private>${SECRET}</private>`, env: ['<private>x</private>'] } },
        ],
        stopReason: 'toolUse',
        timestamp: T,
      },
    ]);
    expect(msg?.role).toBe('assistant');
    if (msg?.role !== 'assistant') return;
    expect(msg.content).toBe('Running [PRIVATE] now');
    const args = JSON.parse(msg.toolCalls![0]!.arguments) as unknown;
    expect(args).toEqual({ command: 'echo [PRIVATE]', env: ['[PRIVATE]'] });
    expect(JSON.stringify(msg)).not.toContain(SECRET);
  });

  it('an unclosed span in assistant text hides the tool calls after it', () => {
    const [msg] = convert([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: `ok <private>${SECRET}` },
          { type: 'toolCall', id: 'call_1', name: 'bash', arguments: { command: `cat ${SECRET}` } },
        ],
        stopReason: 'toolUse',
        timestamp: T,
      },
    ]);
    if (msg?.role !== 'assistant') throw new Error('expected an assistant message');
    expect(msg.content).toBe('ok [PRIVATE]');
    expect(JSON.parse(msg.toolCalls![0]!.arguments)).toEqual({ '[PRIVATE]': '[PRIVATE]' });
  });

  it('hides spans in tool output', () => {
    const out = convert([
      { role: 'assistant', content: [{ type: 'toolCall', id: 'c', name: 'bash', arguments: { command: 'env' } }], stopReason: 'toolUse', timestamp: T },
      { role: 'toolResult', toolCallId: 'c', content: [{ type: 'text', text: `A=1\n<private>\nB=${SECRET}\n</private>\nC=3` }], timestamp: T + 1 },
    ]);
    expect(out[1]).toEqual({ role: 'tool', timestamp: T + 1, toolCallId: 'c', content: 'A=1\n[PRIVATE]\nC=3' });
  });

  it('does not let a span of one message hide the next message', () => {
    const out = convert([
      { role: 'user', content: `<private>${SECRET}`, timestamp: T },
      { role: 'user', content: 'visible', timestamp: T + 1 },
    ]);
    expect(out.map((m) => m.content)).toEqual(['[PRIVATE]', 'visible']);
  });
});
