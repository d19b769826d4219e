import { describe, expect, it } from 'vitest';
import { quickReaders } from '../src/memory/convert.js';
import { envelopeSchema, quickEnvelope } from '../src/transcript/messages-history.js';

/** Where a quick reader answers, it answers what the schema would; where unsure, it leaves it to the schema. */
function expectAgreement<T>(quick: (value: T) => unknown, schema: { safeParse(value: unknown): { data?: unknown } }, value: T): boolean {
  const fast = quick(value);
  if (fast !== undefined) expect(fast).toEqual(schema.safeParse(value).data);
  return fast !== undefined;
}

const blocks = {
  text: { type: 'text', text: 'hello', extra: 1 },
  call: { type: 'toolCall', id: 'c1', name: 'bash', arguments: { command: 'ls' }, partialJson: '{' },
  bareCall: { type: 'toolCall' },
  thinking: { type: 'thinking', thinking: 'secret reasoning', thinkingSignature: 's' },
  image: { type: 'image', data: 'AAAA', mimeType: 'image/png' },
};

const malformedContents: unknown[] = [
  [{ type: 'text', text: 5 }],
  [{ type: 'text' }],
  [{ type: 7 }],
  [{}],
  [null],
  ['text'],
  [[]],
  { type: 'text', text: 'not an array' },
  42,
  null,
];
const malformedTimestamps: unknown[] = [-1, 1.5, 2 ** 53, Number.NaN, '1700000000000', null];

describe('the quick message readers', () => {
  it('read every well-formed message themselves, exactly as its schema does', () => {
    const contents = ['plain', '', [], [blocks.text], [blocks.thinking, blocks.text, blocks.call, blocks.bareCall, blocks.image]];
    for (const content of contents) {
      for (const timestamp of [0, 1_700_000_000_000, -0]) {
        expect(expectAgreement(quickReaders.user.quick, quickReaders.user.schema, { role: 'user', content, timestamp, extra: true })).toBe(true);
        for (const stopReason of [undefined, 'stop', 'toolUse', '']) {
          const message = stopReason === undefined ? { role: 'assistant', content, timestamp } : { role: 'assistant', content, timestamp, stopReason };
          expect(expectAgreement(quickReaders.assistant.quick, quickReaders.assistant.schema, message)).toBe(true);
        }
        for (const id of [{}, { toolCallId: 'c1' }, { toolCallId: '' }, { toolCallId: 7 }, { toolCallId: null }]) {
          expect(expectAgreement(quickReaders.toolResult.quick, quickReaders.toolResult.schema, { role: 'toolResult', content, timestamp, ...id })).toBe(true);
        }
      }
    }
  });

  it('leave every malformed message to the schema', () => {
    const cases: Array<[keyof typeof quickReaders, Record<string, unknown>]> = [];
    for (const content of malformedContents) {
      cases.push(['user', { role: 'user', content, timestamp: 1 }], ['assistant', { role: 'assistant', content, timestamp: 1 }]);
      cases.push(['toolResult', { role: 'toolResult', content, timestamp: 1, toolCallId: 'c' }]);
    }
    for (const timestamp of malformedTimestamps) {
      cases.push(['user', { role: 'user', content: 'x', timestamp }], ['toolResult', { role: 'toolResult', content: 'x', timestamp }]);
    }
    cases.push(['user', { role: 'user', content: 'x' }]);
    cases.push(['assistant', { role: 'assistant', content: 'x', timestamp: 1, stopReason: null }]);
    cases.push(['assistant', { role: 'assistant', content: 'x', timestamp: 1, stopReason: 3 }]);
    cases.push(['user', { role: 'assistant', content: 'x', timestamp: 1 }]);
    for (const [reader, message] of cases) {
      const { quick, schema } = quickReaders[reader];
      expect(quick(message), JSON.stringify(message)).toBeUndefined();
      expect(schema.safeParse(message).success, JSON.stringify(message)).toBe(false);
    }
  });
});

describe('the quick envelope check', () => {
  it('takes a well-formed envelope as it is, and leaves anything else to the schema', () => {
    const good = [
      { message_id: 'm1', turn_id: 't1', message: { role: 'user' } },
      { message_id: 'm1', turn_id: '', message: {}, turn_config: { model: 'x' }, history_artifact: null, extra: [1] },
    ];
    for (const envelope of good) {
      expect(quickEnvelope(envelope)).toBe(envelope);
      expect(envelopeSchema.safeParse(envelope).data).toEqual(envelope);
    }
    const bad: unknown[] = [
      { message_id: '', turn_id: 't', message: {} },
      { message_id: 5, turn_id: 't', message: {} },
      { message_id: 'm', message: {} },
      { message_id: 'm', turn_id: 3, message: {} },
      { message_id: 'm', turn_id: 't', message: [] },
      { message_id: 'm', turn_id: 't', message: null },
      { message_id: 'm', turn_id: 't' },
      [{ message_id: 'm', turn_id: 't', message: {} }],
      'm',
      null,
    ];
    for (const value of bad) {
      expect(quickEnvelope(value)).toBeUndefined();
      expect(envelopeSchema.safeParse(value).success).toBe(false);
    }
  });
});
