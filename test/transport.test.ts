/**
 * The API key never travels in clear text: http:// is refused unless the host is loopback, both
 * when sending and when install would store such a base; EVERME_ALLOW_INSECURE_HTTP=1 opts in.
 * `0.0.0.0` is not a loopback address, yet on Linux a connection to it reaches this machine: the
 * fake gateway (bound to 127.0.0.1) shows whether a request, with its key, was actually sent.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isLoopbackHost } from '../src/config/transport.js';
import { useCliTree } from './support/cli-tree.js';
import { cliEnv, envelopeOf, runCli } from './support/cli-process.js';
import type { FakeGateway } from './support/fake-gateway.js';
import { turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';

let gateway: FakeGateway;
let dataDir: string;
let env: NodeJS.ProcessEnv;
let root: string;

useCliTree((tree) => {
  ({ gateway, dataDir, env, root } = tree);
});

const importWith = (extra: Record<string, string>) =>
  runCli(['import', '--since', '2026-09-01', '--data-dir', dataDir, '--sink', 'everme', '--json'], cliEnv(root, { ...env, ...extra }));

describe('the API key over plain http', () => {
  it('is refused for a non-loopback host with invalid_args naming the fix, and nothing is sent', async () => {
    writeMessagesSession(dataDir, 1, turnsEnvelopes('t', [0]));
    const refused = await importWith({ EVERME_API_BASE: `http://0.0.0.0:${gateway.port}` });
    expect(refused.code).toBe(2);
    const error = envelopeOf(refused).error!;
    expect(error).toMatchObject({ type: 'invalid_args', code: 'insecure_api_base' });
    expect(String(error.hint)).toContain('https://');
    expect(String(error.hint)).toContain('EVERME_ALLOW_INSECURE_HTTP=1');
    expect(gateway.requests).toHaveLength(0);
  });

  it('is allowed to loopback, and anywhere with EVERME_ALLOW_INSECURE_HTTP=1', async () => {
    writeMessagesSession(dataDir, 1, turnsEnvelopes('t', [0]));
    const hatch = await importWith({ EVERME_API_BASE: `http://0.0.0.0:${gateway.port}`, EVERME_ALLOW_INSECURE_HTTP: '1' });
    expect(hatch.code, hatch.stderr).toBe(0);
    expect(gateway.requests.length).toBeGreaterThan(0);
    writeMessagesSession(dataDir, 2, turnsEnvelopes('u', [0]));
    const loopback = await importWith({ EVERME_API_BASE: `http://localhost:${gateway.port}` });
    expect(loopback.code, loopback.stderr).toBe(0);
  });

  it('install --api-base refuses to store such a base, and stores it with the escape hatch', async () => {
    const envFile = path.join(dataDir, 'everme.env');
    const install = (base: string, extra: Record<string, string> = {}) =>
      runCli(['install', '--api-base', base, '--data-dir', dataDir, '--json'], cliEnv(root, { HOME: root, ...extra }));
    const refused = await install('http://memory.example.com');
    expect(refused.code).toBe(2);
    expect(envelopeOf(refused).error).toMatchObject({ type: 'invalid_args', code: 'insecure_api_base' });
    expect(fs.existsSync(envFile) ? fs.readFileSync(envFile, 'utf8') : '').not.toContain('memory.example.com');

    const allowed = await install('http://memory.example.com', { EVERME_ALLOW_INSECURE_HTTP: '1' });
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(fs.readFileSync(envFile, 'utf8')).toContain('EVERME_API_BASE=http://memory.example.com');
  });

  it('install stores the opt-in beside the http base it stores, for the hook, and uninstall --purge takes both out again', async () => {
    const envFile = path.join(dataDir, 'everme.env');
    fs.writeFileSync(envFile, 'EVERME_AGENT_ID=agt_mine\n', { mode: 0o600 });
    const cli = (args: string[], extra: Record<string, string> = {}) => runCli([...args, '--data-dir', dataDir, '--json'], cliEnv(root, { HOME: root, ...extra }));
    const installed = await cli(['install', '--api-base', 'http://memory.example.com'], { EVERME_ALLOW_INSECURE_HTTP: '1' });
    expect(installed.code, installed.stderr).toBe(0);
    // MiniMax Code gives the hook a reduced environment: without the opt-in in the file it refused the base at every event.
    expect(fs.readFileSync(envFile, 'utf8')).toBe('EVERME_AGENT_ID=agt_mine\nEVERME_API_BASE=http://memory.example.com\nEVERME_ALLOW_INSECURE_HTTP=1\n');
    const purged = await cli(['uninstall', '--purge']);
    expect(purged.code, purged.stderr).toBe(0);
    expect(fs.readFileSync(envFile, 'utf8')).toBe('EVERME_AGENT_ID=agt_mine\n');
  });

  it('install honours the opt-in everme.env holds, as every other command does, and a loopback or https base needs none', async () => {
    const envFile = path.join(dataDir, 'everme.env');
    fs.writeFileSync(envFile, 'EVERME_ALLOW_INSECURE_HTTP=1\n', { mode: 0o600 });
    const install = (base: string) => runCli(['install', '--api-base', base, '--data-dir', dataDir, '--json'], cliEnv(root, { HOME: root }));
    const fromFile = await install('http://memory.example.com');
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(fs.readFileSync(envFile, 'utf8')).toBe('EVERME_ALLOW_INSECURE_HTTP=1\nEVERME_API_BASE=http://memory.example.com\n');

    fs.writeFileSync(envFile, '', { mode: 0o600 });
    for (const base of ['http://127.0.0.1:9', 'https://memory.example.com']) {
      const plain = await install(base);
      expect(plain.code, plain.stderr).toBe(0);
      expect(fs.readFileSync(envFile, 'utf8')).not.toContain('EVERME_ALLOW_INSECURE_HTTP');
    }
  });

  it.each([
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['[::1]', true],
    ['localhost', true],
    ['LOCALHOST', true],
    ['0.0.0.0', false],
    ['128.0.0.1', false],
    ['127.0.0.1.example.com', false],
    ['localhost.example.com', false],
    ['[::ffff:7f00:1]', false],
  ])('%s is loopback: %s', (host, loopback) => {
    expect(isLoopbackHost(host)).toBe(loopback);
  });
});
