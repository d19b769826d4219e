import { createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { mulberry32 } from './prng.js';

const COMMON = (
  'the a to of and in is it for on with this that we build test deploy fix refactor cache index ' +
  'query schema stream buffer socket retry timeout config flag option module import export function ' +
  'class interface type promise async await error warning handler router service client server'
).split(' ');
const RARE_CJK = '优先级 缓存 数据库 迁移 修复 部署 测试 テスト 設定 キャッシュ 데이터 설정'.split(' ');
const SYLLABLES = 'ka ro mi ta ne so lu vi pe da zo ri ga no fu te ha yo ki ma be su'.split(' ');

/**
 * A vocabulary shaped like real text: a few very common words, then thousands of rarer ones
 * (identifiers, file names) drawn with a Zipf-like skew, so a query matches a realistic share of
 * messages rather than nearly all of them.
 */
const VOCABULARY: string[] = (() => {
  const rand = mulberry32(1234);
  const words = [...COMMON];
  for (let i = 0; i < 6000; i++) {
    const parts = 2 + Math.floor(rand() * 3);
    let w = '';
    for (let p = 0; p < parts; p++) w += SYLLABLES[Math.floor(rand() * SYLLABLES.length)];
    words.push(i % 97 === 0 ? RARE_CJK[i % RARE_CJK.length]! : w);
  }
  words.splice(400, 0, 'payload', 'migration', 'parser', 'lexer', 'token');
  return words;
})();

function word(rand: () => number): string {
  // Inverse of a power law over ranks: small ranks (common words) dominate.
  const rank = Math.floor(Math.pow(rand(), 2.2) * VOCABULARY.length);
  return VOCABULARY[rank]!;
}

function sentence(rand: () => number, words: number): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(word(rand));
  return out.join(' ');
}

/**
 * Tool output sizes shaped like real sessions: mostly small, a long tail of big listings and logs;
 * `scale` times that (the same random draws, so scale 1 writes the trees it always wrote).
 */
function toolOutput(rand: () => number, scale: number): string {
  const r = rand();
  const size = scale * (r < 0.6 ? 200 + rand() * 1500 : r < 0.9 ? 2000 + rand() * 8000 : 10_000 + rand() * 40_000);
  const lines: string[] = [];
  let length = 0;
  while (length < size) {
    const line = `${sentence(rand, 6 + Math.floor(rand() * 8))} ${Math.floor(rand() * 1e6)}`;
    lines.push(line);
    length += line.length + 1;
  }
  return lines.join('\n');
}

interface PiMessage {
  role: string;
  [key: string]: unknown;
}

function turnMessages(rand: () => number, t: number, turn: number, toolScale = 1): PiMessage[] {
  const callId = `call_${turn}_${Math.floor(rand() * 1e9).toString(16)}`;
  return [
    { role: 'user', content: [{ type: 'text', text: `${sentence(rand, 12)}?` }], timestamp: t },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: sentence(rand, 20), thinkingSignature: 'sig' },
        { type: 'text', text: sentence(rand, 10) },
        { type: 'toolCall', id: callId, name: rand() < 0.5 ? 'bash' : 'read', arguments: { command: `grep -rn ${sentence(rand, 1)} src/` } },
      ],
      api: 'anthropic-messages',
      provider: 'minimax',
      model: 'MiniMax-M3',
      usage: { input: 100, output: 20, cacheRead: 0, cacheWrite: 0, totalTokens: 120 },
      stopReason: 'toolUse',
      timestamp: t + 1000,
    },
    { role: 'toolResult', toolCallId: callId, toolName: 'bash', content: [{ type: 'text', text: toolOutput(rand, toolScale) }], isError: false, timestamp: t + 2000 },
    {
      role: 'assistant',
      content: [{ type: 'text', text: sentence(rand, 30) }],
      api: 'anthropic-messages',
      provider: 'minimax',
      model: 'MiniMax-M3',
      stopReason: 'stop',
      timestamp: t + 3000,
    },
  ];
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

export interface CorpusStats {
  sessions: number;
  bytes: number;
  files: string[];
}

export function sessionDir(root: string, createdAtMs: number, sessionId: string): string {
  const d = new Date(createdAtMs);
  const name = `${pad(d.getUTCHours())}-${pad(d.getUTCMinutes())}-${pad(d.getUTCSeconds())}-${pad(d.getUTCMilliseconds(), 3)}-session_${Buffer.from(sessionId).toString('base64url')}`;
  return path.join(root, 'v2', 'sessions', String(d.getUTCFullYear()), pad(d.getUTCMonth() + 1), pad(d.getUTCDate()), name);
}

/**
 * Writes `sessions` sessions of about `avgBytes` each under `<root>/v2/sessions`: four in five in
 * the messages.jsonl era (Sep–Nov 2026), one in five in the ledger era (Jul–Aug 2026). `toolScale`
 * makes tool outputs that many times larger (sessions keep their size: fewer, longer turns).
 */
export function generateCorpus(root: string, sessions: number, avgBytes: number, seed = 42, toolScale = 1): CorpusStats {
  const rand = mulberry32(seed);
  const stats: CorpusStats = { sessions: 0, bytes: 0, files: [] };
  for (let s = 0; s < sessions; s++) {
    const ledgerEra = s % 5 === 4;
    const base = ledgerEra ? Date.UTC(2026, 6, 1) : Date.UTC(2026, 8, 1);
    const span = ledgerEra ? 60 : 85;
    const createdAtMs = base + Math.floor(rand() * span * 86_400_000);
    const sessionId = `mvs_${s.toString(16).padStart(8, '0')}${Math.floor(rand() * 2 ** 32).toString(16).padStart(8, '0')}${'0'.repeat(16)}`;
    const dir = sessionDir(root, createdAtMs, sessionId);
    mkdirSync(dir, { recursive: true });
    const lines: string[] = [];
    let bytes = 0;
    let turn = 0;
    let t = createdAtMs + 1000;
    let seq = 1;
    const target = avgBytes * (0.5 + rand());
    if (ledgerEra) {
      lines.push(JSON.stringify({ kind: 'session.created', sessionId, record: { sessionId, workspaceDir: `/home/dev/project-${s % 17}` }, schemaVersion: 1, eventId: `e${seq}`, seq, createdAtMs: t }));
      seq++;
    }
    while (bytes < target) {
      const messages = turnMessages(rand, t, turn, toolScale);
      if (ledgerEra) {
        const line = JSON.stringify({ kind: 'message.pi_history_appended', sessionId, messages, schemaVersion: 1, eventId: `e${seq}`, seq, createdAtMs: t });
        seq++;
        lines.push(line);
        bytes += line.length + 1;
      } else {
        for (const [i, message] of messages.entries()) {
          const line = JSON.stringify({ message_id: `msg-${turn}-${i}-${s}`, turn_id: `turn_${turn}`, message });
          lines.push(line);
          bytes += line.length + 1;
        }
      }
      turn++;
      t += 60_000;
    }
    const file = path.join(dir, ledgerEra ? 'ledger.jsonl' : 'messages.jsonl');
    writeFileSync(file, `${lines.join('\n')}\n`);
    writeFileSync(
      path.join(dir, 'manifest.json'),
      JSON.stringify({ schemaVersion: 1, sessionId, createdAtMs, updatedAtMs: t, source: 'local-runtime', layout: 'v2-final-dated-session', paths: { sessionDir: dir } }, null, 2),
    );
    stats.sessions++;
    stats.bytes += Buffer.byteLength(lines.join('\n')) + 1;
    stats.files.push(file);
  }
  return stats;
}

/** One session with a single transcript of about `bytes`, written in chunks (never one big string). */
export async function generateBigTranscript(root: string, bytes: number): Promise<string> {
  const rand = mulberry32(7);
  const createdAtMs = Date.UTC(2026, 10, 1, 12);
  const sessionId = 'mvs_b16b16b16b16b16b16b16b16b16b16b1';
  const dir = sessionDir(root, createdAtMs, sessionId);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ schemaVersion: 1, sessionId, createdAtMs, paths: {} }));
  const file = path.join(dir, 'messages.jsonl');
  const out = createWriteStream(file);
  let written = 0;
  let turn = 0;
  let t = createdAtMs;
  while (written < bytes) {
    let chunk = '';
    for (const [i, message] of turnMessages(rand, t, turn).entries()) {
      chunk += `${JSON.stringify({ message_id: `msg-${turn}-${i}`, turn_id: `turn_${turn}`, message })}\n`;
    }
    written += Buffer.byteLength(chunk);
    if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
    turn++;
    t += 1000;
  }
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
  return sessionId;
}

/**
 * One session whose messages.jsonl holds a normal line, one single line of `bytes` (a user message
 * far over any cap), and another normal line: the reader must skip the giant without holding it.
 */
export async function generateHugeLine(root: string, bytes: number): Promise<string> {
  const createdAtMs = Date.UTC(2026, 10, 2, 12);
  const sessionId = 'mvs_1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a';
  const dir = sessionDir(root, createdAtMs, sessionId);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ schemaVersion: 1, sessionId, createdAtMs, paths: {} }));
  const out = createWriteStream(path.join(dir, 'messages.jsonl'));
  const write = async (chunk: string | Buffer): Promise<void> => {
    if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  };
  const line = (id: string, text: string): string =>
    `${JSON.stringify({ message_id: id, turn_id: 't', message: { role: 'user', content: text, timestamp: createdAtMs } })}\n`;
  await write(line('before', 'a normal line before the giant'));
  await write('{"message_id":"giant","turn_id":"t","message":{"role":"user","timestamp":1,"content":"');
  const chunk = Buffer.alloc(1024 * 1024, 0x61);
  for (let written = 0; written < bytes; written += chunk.length) await write(chunk);
  await write('"}}\n');
  await write(line('after', 'a normal line after the giant'));
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
  return sessionId;
}
