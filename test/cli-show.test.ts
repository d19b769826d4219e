import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliEntry, ensureBuilt, repoRoot } from './support/cli.js';
import { hermeticEnv } from './support/hermetic-env.js';
import { makeSession, jsonl, tempDir } from './transcript-helpers.js';

function show(dataDir: string, ...args: string[]) {
  return spawnSync(process.execPath, [cliEntry, 'show', ...args, '--data-dir', dataDir], {
    env: hermeticEnv(tempDir()),
    encoding: 'utf8',
  });
}

interface ShowData {
  conversationId: string;
  sessionId: string;
  source: string;
  requests: Array<{ messages: number; flush: boolean }>;
  messages: Array<Record<string, unknown>>;
  warnings: Array<{ code: string; count: number; samples: Array<{ file: string; line: number }> }>;
}

function showJson(dataDir: string, sessionId: string): ShowData {
  const r = show(dataDir, sessionId, '--json');
  expect(r.status).toBe(0);
  expect(r.stdout.trim().split('\n')).toHaveLength(1);
  const body = JSON.parse(r.stdout) as { ok: true; data: ShowData };
  expect(body.ok).toBe(true);
  return body.data;
}

describe('everme show (the built CLI)', () => {
  beforeAll(() => ensureBuilt());

  it('prints the messages-era fixture exactly as it would be uploaded', () => {
    const data = showJson(path.join(repoRoot, 'fixtures', 'minimax', 'messages-session'), 'mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40');
    expect(data).toMatchObject({
      conversationId: 'minimaxcode-mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40',
      sessionId: 'mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40',
      source: 'messages',
      requests: [{ messages: 6, flush: true }],
      warnings: [],
    });
    expect(data.messages).toEqual([
      { role: 'user', timestamp: 1789355113545, content: 'List the files in the repo root and tell me which one is the build script.' },
      {
        role: 'assistant',
        timestamp: 1789355116445,
        turnComplete: false,
        content: 'Let me check the directory.',
        toolCalls: [{ id: 'call_fx_01', type: 'function', name: 'bash', arguments: '{"command":"ls -1","timeout":30}' }],
      },
      { role: 'tool', timestamp: 1789355116695, toolCallId: 'call_fx_01', content: 'Makefile\nREADME.md\nsrc\n' },
      { role: 'assistant', timestamp: 1789355118365, turnComplete: true, content: 'The build script is the `Makefile` in the root.' },
      { role: 'user', timestamp: 1789355172345, content: 'Thanks, that is all.' },
      { role: 'assistant', timestamp: 1789355173845, turnComplete: true, content: "You're welcome." },
    ]);
  });

  it('prints the effective history of a replayed ledger, not the retracted turn', () => {
    const data = showJson(path.join(repoRoot, 'fixtures', 'minimax', 'ledger-session'), 'mvs_9d2e4c6a8b0f41d3a5c7e9f1b3d5f7a9');
    expect(data.source).toBe('ledger');
    expect(data.messages.map((m) => [m.role, m.content ?? null])).toEqual([
      ['user', '[Earlier conversation summarized] The user asked what src/widget.ts exports; answer: makeWidget and WIDGET_VERSION.'],
      ['user', 'Bump WIDGET_VERSION to 3.'],
      ['assistant', null],
      ['tool', 'Edited src/widget.ts'],
      ['assistant', 'Done: WIDGET_VERSION is now 3.'],
    ]);
    expect(JSON.stringify(data)).not.toContain('reviewer will reject');
  });

  it('lists the warnings with file:line samples only', () => {
    const data = showJson(path.join(repoRoot, 'fixtures', 'report'), 'mvs_4e9a7c1d2b3f40c8a6d5e4f3b2a1c0d9');
    expect(data.warnings.map((w) => [w.code, w.count])).toEqual([
      ['invalid_json', 2],
      ['invalid_record', 1],
      ['incomplete_tail', 1],
      ['tool_call_missing_id', 1],
      ['unmatched_tool_result', 1],
    ]);
    expect(data.messages).toHaveLength(4);
  });

  it('shows secrets masked, in text and inside tool-call arguments, and never thinking', () => {
    const dataDir = tempDir();
    const awsKey = 'AKIAIOSFODNN7EXAMPLE';
    const token = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789';
    makeSession(dataDir, '2026/10/05', 'mvs_5ec2e75ec2e75ec2e75ec2e75ec2e75e', {
      files: {
        'messages.jsonl': jsonl([
          { message_id: 'm1', turn_id: 't1', message: { role: 'user', content: `deploy with key ${awsKey}`, timestamp: 1 } },
          {
            message_id: 'm2',
            turn_id: 't1',
            message: {
              role: 'assistant',
              content: [
                { type: 'thinking', thinking: 'secret plan' },
                { type: 'toolCall', id: 'c1', name: 'bash', arguments: { command: `GITHUB_TOKEN=${token} gh pr list` } },
              ],
              stopReason: 'toolUse',
              timestamp: 2,
            },
          },
        ]),
      },
    });
    const r = show(dataDir, 'mvs_5ec2e75ec2e75ec2e75ec2e75ec2e75e', '--json');
    expect(r.status).toBe(0);
    expect(r.stdout).not.toContain(awsKey);
    expect(r.stdout).not.toContain(token);
    expect(r.stdout).not.toContain('secret plan');
    const data = (JSON.parse(r.stdout) as { data: ShowData }).data;
    expect(data.messages[0]!.content).toContain('[REDACTED:aws-access-key]');
    const args = JSON.parse((data.messages[1]!.toolCalls as Array<{ arguments: string }>)[0]!.arguments) as { command: string };
    expect(args.command).toContain('[REDACTED:');
    const text = show(dataDir, 'mvs_5ec2e75ec2e75ec2e75ec2e75ec2e75e');
    expect(text.status).toBe(0);
    expect(text.stdout).toContain('→ bash c1');
    expect(text.stdout).not.toContain(token);
  });

  it('says when an import would skip the session: forgotten, or its workspace excluded', () => {
    const demo = path.join(repoRoot, 'fixtures', 'demo');
    const env = (extra: Record<string, string> = {}) => hermeticEnv(home, { EVERME_STATE_DIR: stateDir, ...extra });
    const home = tempDir();
    const stateDir = tempDir();
    const cli = (args: string[], extra: Record<string, string> = {}) =>
      spawnSync(process.execPath, [cliEntry, ...args, '--data-dir', demo], { env: env(extra), encoding: 'utf8' });
    const skippedOf = (sessionId: string, extra: Record<string, string> = {}) => {
      const r = cli(['show', sessionId, '--json'], extra);
      expect(r.status, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as { data: ShowData & { skipped?: Record<string, string> } }).data.skipped;
    };
    const messagesSession = 'mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40';
    const ledgerSession = 'mvs_9d2e4c6a8b0f41d3a5c7e9f1b3d5f7a9';
    expect(cli(['import', '--since', '2026-07-01']).status).toBe(0);
    expect(skippedOf(messagesSession)).toBeUndefined();
    expect(cli(['forget', '--session', messagesSession, '--yes']).status).toBe(0);
    expect(skippedOf(messagesSession)).toEqual({ reason: 'forgotten' });
    expect(cli(['show', messagesSession]).stdout).toMatch(/^skipped: forgotten, so an import or sync delivers none of this/m);
    // The ledger session's workspace comes from its files; EVERME_EXCLUDE names it.
    expect(skippedOf(ledgerSession)).toBeUndefined();
    const excluded = { EVERME_EXCLUDE: '/home/demo/projects/widget' };
    expect(skippedOf(ledgerSession, excluded)).toEqual({ reason: 'excluded', rule: 'EVERME_EXCLUDE /home/demo/projects/widget', workspaceDir: '/home/demo/projects/widget' });
    expect(cli(['show', ledgerSession], excluded).stdout).toMatch(/^skipped: its workspace \/home\/demo\/projects\/widget is excluded by EVERME_EXCLUDE/m);
  });

  it('answers an unknown session with not_found (exit 1) and a hint', () => {
    const r = show(path.join(repoRoot, 'fixtures', 'minimax', 'messages-session'), 'mvs_00000000000000000000000000000000', '--json');
    expect(r.status).toBe(1);
    const body = JSON.parse(r.stdout) as { ok: false; error: { type: string; hint: string } };
    expect(body.error.type).toBe('not_found');
    expect(body.error.hint).toBeTruthy();
  });
});
