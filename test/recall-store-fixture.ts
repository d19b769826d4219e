/**
 * Builds a real store the way users get one: MiniMax session files in a temp data dir, imported by
 * the real pipeline into a real SQLite file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadSettings, type Settings } from '../src/config/settings.js';
import { openDatabase } from '../src/store/database.js';
import { runPipeline } from '../src/engine/run-pipeline.js';
import { SessionStore } from '../src/store/session-store.js';
import { jsonl, makeSession, tempDir } from './transcript-helpers.js';

export interface FixtureSession {
  /** 1-based; becomes the session id's hex tail. */
  n: number;
  workspace?: string;
  createdAtMs: number;
  /** user, assistant, user, assistant, … */
  texts: string[];
}

export function sessionIdFor(n: number): string {
  return `mvs_${n.toString(16).padStart(32, '0')}`;
}

export function conversationIdFor(n: number): string {
  return `minimaxcode-${sessionIdFor(n)}`;
}

function envelope(n: number, i: number, role: 'user' | 'assistant', text: string, timestamp: number): unknown {
  const message =
    role === 'user'
      ? { role, content: [{ type: 'text', text }], timestamp }
      : { role, content: [{ type: 'text', text }], stopReason: 'stop', timestamp };
  return { message_id: `msg-${n}-${i}`, turn_id: `turn-${n}-${Math.floor(i / 2)}`, message };
}

function writeSession(dataDir: string, s: FixtureSession): void {
  const sessionId = sessionIdFor(s.n);
  const d = new Date(s.createdAtMs);
  const date = `${d.getUTCFullYear()}/${String(d.getUTCMonth() + 1).padStart(2, '0')}/${String(d.getUTCDate()).padStart(2, '0')}`;
  const time = d.toISOString().slice(11, 23).replace(/[:.]/g, '-');
  const lines = s.texts.map((text, i) => envelope(s.n, i, i % 2 === 0 ? 'user' : 'assistant', text, s.createdAtMs + i * 1000));
  makeSession(dataDir, date, sessionId, { createdAtMs: s.createdAtMs, time, files: { 'messages.jsonl': jsonl(lines) } });
}

export interface BuiltStore {
  dataDir: string;
  stateDir: string;
  settings: Settings;
}

/** Writes the sessions, records their workspaces (as the hook would), and imports them into the local store. */
export async function buildStore(sessions: FixtureSession[], root = tempDir()): Promise<BuiltStore> {
  const dataDir = path.join(root, 'data');
  const stateDir = path.join(root, 'state');
  fs.mkdirSync(path.join(dataDir, 'v2', 'sessions'), { recursive: true });
  for (const s of sessions) writeSession(dataDir, s);

  const db = openDatabase(stateDir);
  try {
    const store = new SessionStore(db);
    for (const s of sessions) if (s.workspace) store.rememberWorkspace(sessionIdFor(s.n), s.workspace);
  } finally {
    db.close();
  }

  const settings = loadSettings(dataDir, {}, { EVERME_STATE_DIR: stateDir });
  const summary = await runPipeline({ mode: 'import', settings, sink: 'local', since: '2026-01-01', sinceMs: Date.UTC(2026, 0, 1) });
  if (summary.sessions.failed > 0 || summary.sessions.delivered !== sessions.length) {
    throw new Error(`fixture import did not deliver every session: ${JSON.stringify(summary.sessions)} ${JSON.stringify(summary.failures)}`);
  }
  return { dataDir, stateDir, settings };
}

const BASE_MS = Date.UTC(2026, 8, 10, 8, 0, 0);
const HOUR = 3_600_000;

/** The multilingual corpus every recall test searches; `projects` is a real directory under the temp root. */
export function corpus(projects: string): FixtureSession[] {
  const widget = path.join(projects, 'widget');
  return [
    {
      n: 1,
      workspace: widget,
      createdAtMs: BASE_MS,
      texts: [
        'How do I tune the retry backoff for the payload uploader?',
        'Set retryBackoffMs to 250 in uploader.config.ts; the payload queue honours it.',
      ],
    },
    {
      n: 2,
      workspace: widget,
      createdAtMs: BASE_MS + HOUR,
      texts: ['上传器应该payload优先，然后再处理日志。', '好的，我已经把数据库迁移脚本改成了批量提交。'],
    },
    {
      n: 3,
      workspace: path.join(projects, 'gadget'),
      createdAtMs: BASE_MS + 2 * HOUR,
      texts: ['データベースのマイグレーションを確認してください。', 'マイグレーションは完了しました。'],
    },
    {
      n: 4,
      workspace: path.join(projects, 'other'),
      createdAtMs: BASE_MS + 3 * HOUR,
      texts: ['백업 스크립트를 매일 실행하도록 설정해 주세요.', '크론 작업으로 백업을 예약했습니다.'],
    },
    {
      n: 5,
      workspace: path.join(widget, 'packages', 'core'),
      createdAtMs: BASE_MS + 4 * HOUR,
      texts: [
        'The ratio a:b must stay under 3; see NEAR(a b) in the query docs and the x OR y semantics.',
        'Noted: the -x flag disables the zebracache layer.',
      ],
    },
    {
      n: 6,
      // A sibling that merely shares the prefix: never part of the widget project.
      workspace: path.join(projects, 'widget-legacy'),
      createdAtMs: BASE_MS + 5 * HOUR,
      texts: ['Port the legacy flamingo exporter.', 'The flamingo exporter now writes CSV.'],
    },
  ];
}

/** Many long conversations in one project, so an index of them cannot fit 10,000 characters. */
export function manyConversations(project: string, count: number, firstN = 100): FixtureSession[] {
  const filler = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ';
  return Array.from({ length: count }, (_, i) => ({
    n: firstN + i,
    workspace: project,
    createdAtMs: BASE_MS + 10 * HOUR + i * 60_000,
    texts: [`Request number ${i}: ${filler.repeat(5)}`, `Answer number ${i}: ${filler.repeat(5)}`],
  }));
}
