/**
 * A data dir for the viewer's end-to-end tests, made the way users get one: MiniMax session files
 * (messages.jsonl, with tool calls, a credential, a private span, a malformed line and hostile
 * markup), workspaces recorded as the hook records them, imported by the real CLI. Timestamps are
 * days before now, so the activity chart (the last 90 days) shows them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { openDatabase } from '../../src/store/database.js';
import { SessionStore } from '../../src/store/session-store.js';
import { jsonl, makeSession, tempDir } from '../transcript-helpers.js';
import { cliEnv, runCli } from './cli-process.js';

export const DAY = 86_400_000;
export const ALPHA = '/srv/projects/alpha';
export const BETA = '/srv/projects/beta';
/** Words planted in one session each. */
export const WORDS = { alpha: 'quokkaviewword', beta: 'wombatforgetword', unknown: 'ibisunknownword', hostile: 'marmothostileword' } as const;
/** A credential the import masks (`[REDACTED:…]`). */
export const AWS_KEY = 'AKIAQWERTYUIOPASDFGH';
export const RECALL_CHARS = 700;

export interface ViewerFixture {
  root: string;
  dataDir: string;
  stateDir: string;
  env: NodeJS.ProcessEnv;
  sessions: { alpha: string; beta: string; unknown: string; hostile: string };
  /** UTC midnight of each session's day. */
  days: { alpha: number; beta: number; unknown: number; hostile: number };
  cleanup(): void;
}

function sessionId(n: number): string {
  return `mvs_${n.toString(16).padStart(32, 'a')}`;
}

function user(id: string, text: string, t: number): unknown {
  return { message_id: id, turn_id: `turn-${id}`, message: { role: 'user', content: [{ type: 'text', text }], timestamp: t } };
}

function assistant(id: string, content: unknown[], t: number, stopReason = 'stop'): unknown {
  return { message_id: id, turn_id: `turn-${id}`, message: { role: 'assistant', content, stopReason, timestamp: t } };
}

function toolResult(id: string, callId: string, name: string, text: string, t: number): unknown {
  return { message_id: id, turn_id: `turn-${id}`, message: { role: 'toolResult', toolCallId: callId, toolName: name, content: [{ type: 'text', text }], isError: false, timestamp: t } };
}

function write(dataDir: string, n: number, createdAtMs: number, lines: unknown[]): string {
  const id = sessionId(n);
  const d = new Date(createdAtMs);
  const date = `${d.getUTCFullYear()}/${String(d.getUTCMonth() + 1).padStart(2, '0')}/${String(d.getUTCDate()).padStart(2, '0')}`;
  makeSession(dataDir, date, id, { createdAtMs, time: d.toISOString().slice(11, 23).replace(/[:.]/g, '-'), files: { 'messages.jsonl': jsonl(lines) } });
  return id;
}

export async function buildViewerFixture(now = Date.now()): Promise<ViewerFixture> {
  const root = tempDir();
  const dataDir = path.join(root, 'data');
  const stateDir = path.join(root, 'state');
  fs.mkdirSync(path.join(dataDir, 'v2', 'sessions'), { recursive: true });
  const at = (daysAgo: number) => Math.floor(now / DAY) * DAY - daysAgo * DAY + 9 * 3_600_000;

  const tAlpha = at(2);
  const alpha = write(dataDir, 1, tAlpha, [
    user('a1', `Where is the ${WORDS.alpha} setting? My key is ${AWS_KEY}.`, tAlpha),
    assistant('a2', [{ type: 'text', text: 'Let me look.' }, { type: 'toolCall', id: 'call_1', name: 'bash', arguments: { command: `grep -r ${WORDS.alpha} .` } }], tAlpha + 1000, 'toolUse'),
    toolResult('a3', 'call_1', 'bash', `config/app.toml: ${WORDS.alpha} = true`, tAlpha + 2000),
    // Malformed: the import skips it with an invalid_json warning (line 4).
    '{"message_id": "broken", ',
    assistant('a4', [{ type: 'text', text: `It is in config/app.toml. The password is <private>hunter2-secret</private>, kept out.` }], tAlpha + 3000),
  ]);
  const tBeta = at(10);
  const beta = write(dataDir, 2, tBeta, [
    user('b1', `Explain the ${WORDS.beta} cache.`, tBeta),
    assistant('b2', [{ type: 'text', text: `The ${WORDS.beta} cache keeps hot rows.` }], tBeta + 1000),
  ]);
  const tUnknown = at(20);
  const unknown = write(dataDir, 3, tUnknown, [user('u1', `Note the ${WORDS.unknown}.`, tUnknown), assistant('u2', [{ type: 'text', text: 'Noted.' }], tUnknown + 1000)]);
  const tHostile = at(30);
  const hostile = write(dataDir, 4, tHostile, [
    user('h1', `Render this ${WORDS.hostile}: <img src="http://example.invalid/pixel.png"><script>document.title='pwned'</script><link rel="stylesheet" href="https://cdn.example.invalid/x.css">`, tHostile),
    assistant('h2', [{ type: 'text', text: `<iframe src="http://example.invalid/"></iframe> ${WORDS.hostile} shown as text.` }], tHostile + 1000),
  ]);

  // The hook records each payload's cwd; the unknown session never had one.
  const db = openDatabase(stateDir);
  try {
    const state = new SessionStore(db);
    state.rememberWorkspace(alpha, ALPHA);
    state.rememberWorkspace(beta, BETA);
    state.rememberWorkspace(hostile, ALPHA);
  } finally {
    db.close();
  }
  // A recall budget small enough that the SessionStart block must leave a conversation out: the
  // preview matches the hook only if it uses the same budget.
  const env = cliEnv(root, { EVERME_STATE_DIR: stateDir, EVERME_RECALL_CHARS: String(RECALL_CHARS) });
  const since = new Date(at(60)).toISOString().slice(0, 10);
  const imported = await runCli(['import', '--since', since, '--data-dir', dataDir, '--json'], env);
  if (imported.code !== 0) throw new Error(`fixture import failed (${imported.code}): ${imported.stderr}`);
  const midnight = (t: number) => Math.floor(t / DAY) * DAY;
  return {
    root,
    dataDir,
    stateDir,
    env,
    sessions: { alpha, beta, unknown, hostile },
    days: { alpha: midnight(tAlpha), beta: midnight(tBeta), unknown: midnight(tUnknown), hostile: midnight(tHostile) },
    cleanup: () => fs.rmSync(root, { recursive: true, force: true }),
  };
}
