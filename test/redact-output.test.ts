/**
 * The mask on everything printed, logged or handed to the model (src/core/redact-output.ts): it
 * keeps a key's short prefix, and leaves alone the ordinary identifiers that share a key's prefix.
 */
import { describe, expect, it } from 'vitest';
import { redactOutput } from '../src/core/redact-output.js';

describe('redactOutput', () => {
  it('masks an EverMe key, keeping the four characters that tell which one it is', () => {
    expect(redactOutput('token evt_a1b2c3d4e5f6 and emk_zz99abcdef')).toBe('token evt_a1b2_REDACTED and emk_zz99_REDACTED');
    expect(redactOutput('evt_QwErTyUiOpAsDfGhJkLzXc')).toBe('evt_QwEr_REDACTED');
  });

  it('leaves an identifier that only starts like a key (evt_click, evt_dispatcher) whole', () => {
    const text = 'the handler evt_dispatcher fires evt_click and evt_submit_form';
    expect(redactOutput(text)).toBe(text);
  });

  it('masks a URL password to the last @ of the authority, a password holding a raw @ included', () => {
    expect(redactOutput('base https://user:p@ss@host.example/path')).toBe('base https://user:REDACTED@host.example/path');
    expect(redactOutput('https://gw:Zq@9x@k2@127.0.0.1:8080?x=1 then mail a@b.c')).toBe('https://gw:REDACTED@127.0.0.1:8080?x=1 then mail a@b.c');
    expect(redactOutput('https://user:plain@host/a@b')).toBe('https://user:REDACTED@host/a@b');
  });

  it('masks a credential in a URL query (token, access_token, key, sig, …), keeping the other parameters', () => {
    expect(redactOutput('https://gw.example/v1?token=Sup3rSecret&region=eu')).toBe('https://gw.example/v1?token=REDACTED&region=eu');
    expect(redactOutput('{"apiBase":"https://h/p?a=1&access_token=abc123XYZ&key=k9k9k9&sig=s1g"}')).toBe(
      '{"apiBase":"https://h/p?a=1&access_token=REDACTED&key=REDACTED&sig=REDACTED"}',
    );
    expect(redactOutput('https://h/?api_key=Q1w2e3#frag')).toBe('https://h/?api_key=REDACTED#frag');
  });

  it('leaves a query without credentials, a variable and an already masked value as they are', () => {
    for (const text of ['https://h/p?page=2&sort=name', 'curl "https://h/?token=$TOKEN"', 'https://h/?key=[REDACTED:url-query-secret]&x=1']) {
      expect(redactOutput(text)).toBe(text);
    }
  });
});
