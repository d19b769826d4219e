import { describe, expect, it } from 'vitest';
import { withThousands } from '../src/core/thousands.js';

describe('withThousands', () => {
  it("writes every integer exactly as toLocaleString('en-US') does", () => {
    const samples = [0, 7, 99, 999, 1000, 1001, 9_999, 10_000, 123_456, 999_999, 1_000_000, 4_000, 12_345_678, Number.MAX_SAFE_INTEGER];
    for (let n = 1; n < 1e15; n = n * 3 + 1) samples.push(n);
    for (const n of samples) {
      expect(withThousands(n), String(n)).toBe(n.toLocaleString('en-US'));
      expect(withThousands(-n), String(-n)).toBe((-n).toLocaleString('en-US'));
    }
  });

  it('leaves what is not a safe integer to toLocaleString', () => {
    for (const n of [1234.5, 1e21, Number.NaN, Number.POSITIVE_INFINITY]) expect(withThousands(n)).toBe(n.toLocaleString('en-US'));
  });
});
