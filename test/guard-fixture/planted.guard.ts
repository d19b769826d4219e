/**
 * Planted faults, run only by net-guard.test.ts in a vitest run of their own: each must fail that
 * run and be named in its output. Never part of the suite (the suite includes *.test.ts only).
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { envelopeOf, runCli } from '../support/cli-process.js';
import { hermeticEnv } from '../support/hermetic-env.js';
import { tempDir } from '../support/temp.js';

describe('planted', () => {
  it('opens a socket from the test process', async () => {
    // The code under test swallows the error: only the guard can fail this test.
    const answer = await fetch('http://192.0.2.1:8080/').catch(() => 'refused');
    expect(answer).toBe('refused');
  });

  it('runs a CLI that asks the real EverMe service', async () => {
    const home = tempDir();
    const dataDir = path.join(home, 'data');
    fs.mkdirSync(dataDir);
    // A key and no API base: `status` checks the default gateway, https://api.everme.evermind.ai.
    const env = hermeticEnv(home, { EVERME_API_KEY: 'evt_planted000000000000000000000', EVERME_API_BASE: null });
    const run = await runCli(['status', '--data-dir', dataDir, '--json'], env);
    // status answers (the gateway "does not answer") and exits: the test itself would pass.
    expect(envelopeOf(run).ok).toBe(false);
  });

  it('stays on loopback', async () => {
    const code = await new Promise((resolve) => http.get('http://127.0.0.1:9/').on('error', (err: NodeJS.ErrnoException) => resolve(err.code)));
    expect(code).toBe('ECONNREFUSED');
  });

  it('leaves a temp dir behind', () => {
    fs.mkdtempSync(path.join(os.tmpdir(), 'everme-litter-'));
  });
});
