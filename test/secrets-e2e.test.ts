import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, runCli } from './support/cli-process.js';
import { FAKE_GATEWAY_TOKEN, startFakeGateway, type FakeGateway } from './support/fake-gateway.js';
import { indexRecord, writeSessionIndex } from './support/session-index-host.js';
import { jsonl, makeSession, tempDir } from './transcript-helpers.js';

/** Credentials of every family the redactor knows, planted in text, tool arguments and tool output. */
const SECRETS = {
  aws: 'AKIAIOSFODNN7EXAMPLE',
  awsSecret: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  openai: 'sk-proj-4fT9qLmZ2xR8vK1nB7cW3yH6dJ0sA5gE',
  anthropic: 'sk-ant-api03-Xy7Qm2Lp9Rt4Vn8Bk1Hc6Jd3Fs0Gw5Ez',
  github: 'ghp_16C7e42F292c6912E7710c838347Ae178B4a',
  slack: 'xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx',
  google: 'AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q',
  everme: 'evt_a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6',
  urlPassword: 'hunter2-very-secret',
  jwt: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
};
const SESSION = 'mvs_5ec2e75ec2e75ec2e75ec2e75ec2e700';

function plantSecrets(dataDir: string): void {
  makeSession(dataDir, '2026/10/06', SESSION, {
    createdAtMs: Date.UTC(2026, 9, 6),
    files: {
      'messages.jsonl': jsonl([
        {
          message_id: 'm1',
          turn_id: 't1',
          message: { role: 'user', content: `deploy canary with ${SECRETS.aws} and ${SECRETS.openai}; the slack bot is ${SECRETS.slack}`, timestamp: 1_790_000_000_000 },
        },
        {
          message_id: 'm2',
          turn_id: 't1',
          message: {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Setting credentials for the canary deploy.' },
              {
                type: 'toolCall',
                id: 'c1',
                name: 'bash',
                arguments: {
                  command: `export ANTHROPIC_API_KEY=${SECRETS.anthropic} GITHUB_TOKEN=${SECRETS.github}`,
                  env: { aws_secret_access_key: SECRETS.awsSecret, url: `postgres://admin:${SECRETS.urlPassword}@db.internal/app` },
                },
              },
            ],
            stopReason: 'toolUse',
            timestamp: 1_790_000_001_000,
          },
        },
        {
          message_id: 'm3',
          turn_id: 't1',
          message: {
            role: 'toolResult',
            toolCallId: 'c1',
            toolName: 'bash',
            content: [{ type: 'text', text: `canary config: key=${SECRETS.google} token ${SECRETS.everme}\nAuthorization: Bearer ${SECRETS.jwt}` }],
            isError: false,
            timestamp: 1_790_000_002_000,
          },
        },
        { message_id: 'm4', turn_id: 't1', message: { role: 'assistant', content: [{ type: 'text', text: 'Canary deployed.' }], stopReason: 'stop', timestamp: 1_790_000_003_000 } },
      ]),
    },
  });
}

/** MiniMax Code often titles a session with its first prompt: the title can hold what the prompt held. */
function titleWithSecrets(dataDir: string): void {
  writeSessionIndex(dataDir, 'newest', [indexRecord(SESSION, { title: `deploy with ${SECRETS.openai} and ${SECRETS.github}`, workspaceDir: '/home/dev/canary' })]);
}

function expectNoSecret(where: string, text: string): void {
  for (const [name, secret] of Object.entries(SECRETS)) expect(text.includes(secret), `${name} found in ${where}`).toBe(false);
}

function filesBelow(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

describe('credentials never leave the machine, never land in the store, never reach the terminal', () => {
  let gateway: FakeGateway;
  beforeAll(async () => {
    gateway = await startFakeGateway();
  });
  afterAll(async () => gateway.close());

  it('the embedded store and every output of import, search, show and report hold none of them', async () => {
    const dataDir = tempDir();
    plantSecrets(dataDir);
    titleWithSecrets(dataDir);
    const env = cliEnv(tempDir(), { MINIMAX_DATA_DIR: dataDir });
    const outputs = [
      await runCli(['import', '--since', '2026-10-01', '--sink', 'local'], env),
      await runCli(['search', 'canary', '--json'], env),
      await runCli(['search', 'canary'], env),
      await runCli(['show', SESSION], env),
      await runCli(['report', '--json'], env),
      await runCli(['export'], env),
      await runCli(['status', '--json'], env),
    ];
    expect(outputs.map((o) => o.code)).toEqual([0, 0, 0, 0, 0, 0, 1]);
    for (const o of outputs) {
      expectNoSecret('stdout', o.stdout);
      expectNoSecret('stderr', o.stderr);
    }
    expect(outputs[1]!.stdout).toContain('canary');
    // The title is there, masked: search hits and the export carry it.
    expect(outputs[1]!.stdout).toContain('deploy with [REDACTED:');
    expect(outputs[5]!.stdout).toContain('"title":"deploy with [REDACTED:');
    // Every byte the store wrote: the database, its WAL, hook state.
    for (const file of filesBelow(path.join(dataDir, 'everme'))) expectNoSecret(file, fs.readFileSync(file).toString('latin1'));
  });

  it('nothing uploaded to the gateway holds them, and the API key is never printed', async () => {
    const dataDir = tempDir();
    plantSecrets(dataDir);
    const env = cliEnv(tempDir(), { MINIMAX_DATA_DIR: dataDir, EVERME_API_KEY: FAKE_GATEWAY_TOKEN, EVERME_API_BASE: gateway.url });
    const imported = await runCli(['import', '--since', '2026-10-01', '--json'], env);
    expect(imported.code).toBe(0);
    const bodies = gateway.requestsTo('/mem/agent-memory').map((r) => JSON.stringify(r.body));
    expect(bodies.length).toBeGreaterThan(0);
    for (const body of bodies) expectNoSecret('an uploaded body', body);
    expect(bodies.join('\n')).toContain('[REDACTED:');
    const status = await runCli(['status', '--json'], env);
    for (const o of [imported, status]) {
      expect(o.stdout + o.stderr).not.toContain(FAKE_GATEWAY_TOKEN);
    }
    for (const file of filesBelow(path.join(dataDir, 'everme'))) {
      const bytes = fs.readFileSync(file).toString('latin1');
      expectNoSecret(file, bytes);
      expect(bytes.includes(FAKE_GATEWAY_TOKEN), file).toBe(false);
    }
  });

  it('an export file cannot put a credential into the store through a title', async () => {
    const dataDir = tempDir();
    plantSecrets(dataDir);
    const env = cliEnv(tempDir(), { MINIMAX_DATA_DIR: dataDir });
    expect((await runCli(['import', '--since', '2026-10-01', '--sink', 'local'], env)).code).toBe(0);
    const exported = (await runCli(['export'], env)).stdout;
    // Another tool (or a hand) writes a title with credentials into the file.
    const line = JSON.parse(exported.trim().split('\n')[0]!) as { conversation: Record<string, unknown> };
    line.conversation.title = `rotate ${SECRETS.slack} now`;
    const file = path.join(tempDir(), 'hand-made.jsonl');
    fs.writeFileSync(file, `${JSON.stringify(line)}\n`);
    const otherEnv = cliEnv(tempDir(), { MINIMAX_DATA_DIR: dataDir });
    const imported = await runCli(['import', '--from-export', file], otherEnv);
    expect(imported.code).toBe(0);
    const again = await runCli(['export'], otherEnv);
    expect(again.stdout).toContain('"title":"rotate [REDACTED:');
    expectNoSecret('the re-export', again.stdout);
    for (const file of filesBelow(path.join(dataDir, 'everme'))) expectNoSecret(file, fs.readFileSync(file).toString('latin1'));
  });

  it('an export file cannot put a credential into the store through an id or the conversation metadata', async () => {
    const dataDir = tempDir();
    const conversationId = 'minimaxcode-mvs_0000000000000000000000000000abcd';
    const line = (over: Record<string, unknown>, message: Record<string, unknown> = { role: 'user', timestamp: 1_790_000_000_000, content: 'canary text' }) =>
      JSON.stringify({ conversationId, key: `k-${Math.random()}`, message, ...over });
    const file = path.join(tempDir(), 'hand-made.jsonl');
    fs.writeFileSync(
      file,
      [
        // The conversation's metadata: masked where it is no id.
        line({
          conversation: {
            sessionId: 'mvs_0000000000000000000000000000abcd',
            source: 'messages',
            workspaceDir: `/srv/${SECRETS.github}/app`,
            historyFile: `/tmp/${SECRETS.slack}.jsonl`,
            kind: SECRETS.google,
            createdAtMs: 1_790_000_000_000,
          },
        }),
        // Ids hold a credential: each line is refused.
        line({ conversationId: `minimaxcode-${SECRETS.github}` }),
        line({ key: `key-${SECRETS.everme}` }),
        line({ conversation: { sessionId: SECRETS.slack, source: 'messages' }, conversationId: 'minimaxcode-mvs_0000000000000000000000000000abce' }),
        line({ conversation: { sessionId: 'mvs_0000000000000000000000000000abcf', source: 'messages', parentSessionId: SECRETS.everme }, conversationId: 'minimaxcode-mvs_0000000000000000000000000000abcf' }),
        line({}, { role: 'tool', timestamp: 1_790_000_000_001, toolCallId: `call_${SECRETS.openai}`, content: 'ok' }),
        line({}, { role: 'assistant', timestamp: 1_790_000_000_002, turnComplete: false, toolCalls: [{ id: `call_${SECRETS.github}`, type: 'function', name: 'bash', arguments: '{}' }] }),
      ].join('\n') + '\n',
    );
    const env = cliEnv(tempDir(), { MINIMAX_DATA_DIR: dataDir });
    const imported = await runCli(['import', '--from-export', file, '--json'], env);
    expect(imported.code, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout)).toMatchObject({ data: { conversations: 1, messages: 1, warnings: { invalid_record: 6 } } });
    const outputs = [imported, await runCli(['export'], env), await runCli(['search', 'canary', '--json'], env), await runCli(['report', '--json'], env)];
    expect(outputs[1]!.stdout).toContain('[REDACTED:');
    expect(outputs[2]!.stdout).toContain('canary');
    for (const o of outputs) {
      expectNoSecret('stdout', o.stdout);
      expectNoSecret('stderr', o.stderr);
    }
    for (const stored of filesBelow(path.join(dataDir, 'everme'))) expectNoSecret(stored, fs.readFileSync(stored).toString('latin1'));
  });
});
