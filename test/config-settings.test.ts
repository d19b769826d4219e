import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_API_BASE, defaultSink, loadSettings } from '../src/config/settings.js';
import { tempDir } from './transcript-helpers.js';

function dataDirWithEnvFile(lines: string[] | undefined): string {
  const dir = tempDir();
  if (lines) fs.writeFileSync(path.join(dir, 'everme.env'), `${lines.join('\n')}\n`);
  return dir;
}

const FILE_LINES = [
  '# written by everme install',
  'EVERME_API_KEY=evt_fromfile0000000000000000000000',
  'EVERME_API_BASE="https://file.example.test/"',
  'EVERME_STATE_DIR=/tmp/state-from-file',
  'EVERME_REQUEST_TIMEOUT_MS=1500',
];

describe('loadSettings precedence: flags, then the environment, then <data>/everme.env, then defaults', () => {
  it('falls back to the defaults when nothing is configured, and then the default sink is local', () => {
    const dataDir = dataDirWithEnvFile(undefined);
    const settings = loadSettings(dataDir, {}, {});
    expect(settings.apiKey).toBeUndefined();
    expect(settings.apiBase).toBe(DEFAULT_API_BASE);
    expect(settings.stateDir).toBe(path.join(dataDir, 'everme'));
    expect(settings.requestTimeoutMs).toBeUndefined();
    expect(defaultSink(settings)).toBe('local');
  });

  it('reads <data>/everme.env when the environment says nothing, and a configured key makes everme the default sink', () => {
    const settings = loadSettings(dataDirWithEnvFile(FILE_LINES), {}, {});
    expect(settings.apiKey).toBe('evt_fromfile0000000000000000000000');
    expect(settings.apiBase).toBe('https://file.example.test');
    expect(settings.stateDir).toBe('/tmp/state-from-file');
    expect(settings.requestTimeoutMs).toBe(1500);
    expect(defaultSink(settings)).toBe('everme');
  });

  it('lets the process environment override the env file, key by key', () => {
    const settings = loadSettings(dataDirWithEnvFile(FILE_LINES), {}, {
      EVERME_API_KEY: 'evt_fromenv00000000000000000000000',
      EVERME_STATE_DIR: '/tmp/state-from-env',
    });
    expect(settings.apiKey).toBe('evt_fromenv00000000000000000000000');
    expect(settings.stateDir).toBe('/tmp/state-from-env');
    // Not set in the environment: still the file's.
    expect(settings.apiBase).toBe('https://file.example.test');
  });

  it('treats a blank environment variable as unset rather than as an empty key', () => {
    const settings = loadSettings(dataDirWithEnvFile(FILE_LINES), {}, { EVERME_API_KEY: '   ', EVERME_API_BASE: '' });
    expect(settings.apiKey).toBe('evt_fromfile0000000000000000000000');
    expect(settings.apiBase).toBe('https://file.example.test');
  });

  it('lets flags override both the environment and the file', () => {
    const settings = loadSettings(
      dataDirWithEnvFile(FILE_LINES),
      { apiKey: 'evt_fromflag0000000000000000000000', apiBase: 'http://127.0.0.1:9/' },
      { EVERME_API_KEY: 'evt_fromenv00000000000000000000000', EVERME_API_BASE: 'https://env.example.test' },
    );
    expect(settings.apiKey).toBe('evt_fromflag0000000000000000000000');
    expect(settings.apiBase).toBe('http://127.0.0.1:9');
  });

  it('ignores a request timeout that is not a positive whole number of milliseconds', () => {
    const dataDir = dataDirWithEnvFile(undefined);
    for (const bad of ['0', '-5', 'soon', '1.5']) {
      expect(loadSettings(dataDir, {}, { EVERME_REQUEST_TIMEOUT_MS: bad }).requestTimeoutMs).toBeUndefined();
    }
    expect(loadSettings(dataDir, {}, { EVERME_REQUEST_TIMEOUT_MS: '250' }).requestTimeoutMs).toBe(250);
  });

  it('takes the SessionStart recall budget from EVERME_RECALL_CHARS (0 turns it off); anything but a whole number keeps 4000', () => {
    const dir = dataDirWithEnvFile(['EVERME_RECALL_CHARS=1200']);
    expect(loadSettings(dir, {}, {}).recallChars).toBe(1200);
    expect(loadSettings(dir, {}, { EVERME_RECALL_CHARS: '0' }).recallChars).toBe(0);
    for (const bad of ['-5', '1.5', 'lots', '1e400']) expect(loadSettings(dataDirWithEnvFile(undefined), {}, { EVERME_RECALL_CHARS: bad }).recallChars, bad).toBe(4000);
    expect(loadSettings(dataDirWithEnvFile(undefined), {}, {}).recallChars).toBe(4000);
  });

  it('resolves a relative state dir from the environment to an absolute path', () => {
    const settings = loadSettings(dataDirWithEnvFile(undefined), {}, { EVERME_STATE_DIR: 'relative/state' });
    expect(settings.stateDir).toBe(path.resolve('relative/state'));
  });
});
