import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseEnvText } from '../src/config/env-file.js';
import { loadSettings } from '../src/config/settings.js';
import { planEnvFile } from '../src/install/env-file-writer.js';
import { tempDir } from './transcript-helpers.js';

const read = (text: string): Record<string, string> => Object.fromEntries(parseEnvText(text));

describe('everme.env inline comments, read as dotenv and the shell read them', () => {
  it('ends an unquoted value where whitespace and `#` start a comment', () => {
    expect(read('EVERME_AGENT_ID=agt_123  # this machine\nEVERME_API_BASE=http://127.0.0.1:18081\t# local proxy\nEMPTY= # nothing\n')).toEqual({
      EVERME_AGENT_ID: 'agt_123',
      EVERME_API_BASE: 'http://127.0.0.1:18081',
      EMPTY: '',
    });
  });

  it('ends a quoted value at its closing quote and drops the comment after it, a `#` inside the quotes kept', () => {
    expect(read('EVERME_AGENT_TOKEN="evt_abcd1234secret"   # rotated 2026-11\nA=\'x # y\'  # note "quoted"\nB="say \'hi\'"\n')).toEqual({
      EVERME_AGENT_TOKEN: 'evt_abcd1234secret',
      A: 'x # y',
      B: "say 'hi'",
    });
  });

  it('keeps a `#` that does not follow whitespace, as part of the value', () => {
    expect(read('A=abc#def\nB=#notacomment\nC=https://host/path#frag\n')).toEqual({ A: 'abc#def', B: '#notacomment', C: 'https://host/path#frag' });
  });

  it('gives the gateway the token and agent id without the comments beside them', () => {
    const dataDir = tempDir();
    const text = '# EverMe\nEVERME_API_BASE=http://127.0.0.1:18081\nEVERME_AGENT_ID=agt_123  # this machine\nEVERME_AGENT_TOKEN="evt_abcd1234secret"   # rotated 2026-11\n';
    fs.writeFileSync(path.join(dataDir, 'everme.env'), text);
    const settings = loadSettings(dataDir, {}, {});
    expect(settings.credential).toMatchObject({ token: 'evt_abcd1234secret', variable: 'EVERME_AGENT_TOKEN', source: 'everme.env' });
    expect(settings.agentId).toBe('agt_123');
    expect(settings.apiBase).toBe('http://127.0.0.1:18081');
  });

  it('quotes a value the writer stores when whitespace and `#` in it would read back as a comment', () => {
    expect(read(planEnvFile(undefined, { EVERME_API_BASE: 'https://host/a #b' }).text).EVERME_API_BASE).toBe('https://host/a #b');
  });
});
