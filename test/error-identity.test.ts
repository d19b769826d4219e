/** EvermeError's identity across copies of its module (the hook's bundle carries its own copy). */
import { describe, expect, it } from 'vitest';
import { EvermeError, toEvermeError } from '../src/core/errors.js';
import { ensureBuilt } from './support/hook-harness.js';

describe('an EvermeError from another copy of errors.js', () => {
  it('is still an EvermeError, so its type and hint survive toEvermeError instead of becoming internal', async () => {
    ensureBuilt();
    // The built module is a second copy of the class: the one the bundled hook's lazy imports throw.
    const builtUrl = new URL('../dist/src/core/errors.js', import.meta.url).href;
    const built = (await import(builtUrl)) as typeof import('../src/core/errors.js');
    expect(built.EvermeError).not.toBe(EvermeError);
    const err = new built.EvermeError('network', 'the gateway did not answer', { hint: 'try again' });
    expect(err instanceof EvermeError).toBe(true);
    expect(toEvermeError(err)).toBe(err);
    expect(toEvermeError(err).type).toBe('network');
    expect(built.toEvermeError(new EvermeError('rate_limit', 'slow down')).type).toBe('rate_limit');
  });

  it('is not claimed by anything else: a plain Error, or an object that only looks like one, is internal', () => {
    const lookalike = Object.assign(new Error('x'), { type: 'network', code: 'network' });
    expect(lookalike instanceof EvermeError).toBe(false);
    expect(toEvermeError(lookalike).type).toBe('internal');
    expect(toEvermeError({ type: 'auth' }).type).toBe('internal');
    const nothing: unknown = null;
    expect(nothing instanceof EvermeError).toBe(false);
  });
});
