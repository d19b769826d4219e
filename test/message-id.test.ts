import { describe, expect, it } from 'vitest';
import { EvermeError } from '../src/core/errors.js';
import { messageIdOf, parseMessageId } from '../src/recall/recall.js';

describe('message ids', () => {
  it('reads back the id a hit names, retyped in capitals or with spaces around it', () => {
    expect(parseMessageId(messageIdOf(42))).toBe(42);
    expect(parseMessageId('M42')).toBe(42);
    expect(parseMessageId(' m42 ')).toBe(42);
  });

  it('rejects anything else as invalid_args with a hint', () => {
    for (const bad of ['42', 'm0', 'm-1', 'mx', 'm12.5', 'message 12', '']) {
      const thrown = (() => {
        try {
          parseMessageId(bad);
        } catch (err) {
          return err;
        }
        return undefined;
      })();
      expect(thrown, bad).toBeInstanceOf(EvermeError);
      expect((thrown as EvermeError).type, bad).toBe('invalid_args');
      expect((thrown as EvermeError).hint, bad).toContain('m123');
    }
  });
});
