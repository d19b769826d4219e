import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_API_BASE, defaultSink, loadSettings, maskToken } from '../src/config/settings.js';
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

  it('caps EVERME_RECALL_CHARS at 10,000: MiniMax Code cuts hook output above that', () => {
    expect(loadSettings(dataDirWithEnvFile(undefined), {}, { EVERME_RECALL_CHARS: '10000' }).recallChars).toBe(10_000);
    expect(loadSettings(dataDirWithEnvFile(undefined), {}, { EVERME_RECALL_CHARS: '250000' }).recallChars).toBe(10_000);
    expect(loadSettings(dataDirWithEnvFile(['EVERME_RECALL_CHARS=99999']), {}, {}).recallChars).toBe(10_000);
  });

  it('resolves a relative state dir from the environment to an absolute path', () => {
    const settings = loadSettings(dataDirWithEnvFile(undefined), {}, { EVERME_STATE_DIR: 'relative/state' });
    expect(settings.stateDir).toBe(path.resolve('relative/state'));
  });

  it('resolves a relative state dir from <data>/everme.env against the data dir, wherever the command starts', () => {
    const dataDir = dataDirWithEnvFile(['EVERME_STATE_DIR=relstate']);
    const cwd = process.cwd();
    try {
      for (const dir of [os.tmpdir(), dataDir]) {
        process.chdir(dir);
        expect(loadSettings(dataDir, {}, {}).stateDir).toBe(path.join(dataDir, 'relstate'));
      }
    } finally {
      process.chdir(cwd);
    }
  });

  it('resolves a relative data dir to an absolute path, and reads its everme.env and places its store under that', () => {
    const dataDir = dataDirWithEnvFile(['EVERME_API_BASE=https://relative.example.test']);
    const settings = loadSettings(path.relative(process.cwd(), dataDir), {}, {});
    expect(settings.dataDir).toBe(dataDir);
    expect(settings.stateDir).toBe(path.join(dataDir, 'everme'));
    expect(settings.apiBase).toBe('https://relative.example.test');
  });
});

const EVERME_FILE = [
  '# EverMe plugin for MiniMax Code',
  'EVERME_API_BASE=https://file.example.test',
  'EVERME_AGENT_ID=agt_fromfile',
  'EVERME_AGENT_TOKEN=evt_filetoken000000000000000000',
];

describe('credentials in the format EverMe\'s own installer writes', () => {
  it('an everme.env with EVERME_AGENT_TOKEN and EVERME_AGENT_ID configures the gateway sink without EVERME_API_KEY', () => {
    const settings = loadSettings(dataDirWithEnvFile(EVERME_FILE), {}, {});
    expect(settings.apiKey).toBe('evt_filetoken000000000000000000');
    expect(settings.credential).toEqual({ token: 'evt_filetoken000000000000000000', variable: 'EVERME_AGENT_TOKEN', source: 'everme.env' });
    expect(settings.agentId).toBe('agt_fromfile');
    expect(defaultSink(settings)).toBe('everme');
  });

  it('the file wins over the environment for EVERME_AGENT_TOKEN and EVERME_AGENT_ID (a reinstall rotates them), the environment for every other key', () => {
    const settings = loadSettings(dataDirWithEnvFile(EVERME_FILE), {}, {
      EVERME_AGENT_TOKEN: 'evt_staleenvtoken00000000000000',
      EVERME_AGENT_ID: 'agt_stale',
      EVERME_API_BASE: 'https://env.example.test',
    });
    expect(settings.credential?.token).toBe('evt_filetoken000000000000000000');
    expect(settings.credential?.source).toBe('everme.env');
    expect(settings.agentId).toBe('agt_fromfile');
    expect(settings.apiBase).toBe('https://env.example.test');
  });

  it('the environment fills the agent token and id when the file leaves them unset', () => {
    const settings = loadSettings(dataDirWithEnvFile(undefined), {}, { EVERME_AGENT_TOKEN: 'evt_envtoken0000', EVERME_AGENT_ID: 'agt_env' });
    expect(settings.credential).toEqual({ token: 'evt_envtoken0000', variable: 'EVERME_AGENT_TOKEN', source: 'env' });
    expect(settings.agentId).toBe('agt_env');
  });

  it('with both an agent token and EVERME_API_KEY the agent token is used (writes need it); EVERME_API_KEY alone still works', () => {
    const both = loadSettings(dataDirWithEnvFile(EVERME_FILE), {}, { EVERME_API_KEY: 'emk_account00000000000' });
    expect(both.credential?.variable).toBe('EVERME_AGENT_TOKEN');
    const keyOnly = loadSettings(dataDirWithEnvFile(undefined), {}, { EVERME_API_KEY: 'emk_account00000000000' });
    expect(keyOnly.credential).toEqual({ token: 'emk_account00000000000', variable: 'EVERME_API_KEY', source: 'env' });
    expect(keyOnly.agentId).toBeUndefined();
  });

  it('an --api-key flag beats every configured credential and is named as the flag', () => {
    const settings = loadSettings(dataDirWithEnvFile(EVERME_FILE), { apiKey: 'evt_flag00000000' }, {});
    expect(settings.credential).toEqual({ token: 'evt_flag00000000', variable: 'EVERME_API_KEY', source: 'flag' });
  });

  it('masks a token to its first eight characters as the CLI contract does', () => {
    expect(maskToken('evt_a1b2c3d4e5f6')).toBe('evt_a1b2_REDACTED');
    expect(maskToken('emk_zz99abcdef')).toBe('emk_zz99_REDACTED');
    expect(maskToken('something-else-secret')).toBe('[REDACTED]');
  });
});
