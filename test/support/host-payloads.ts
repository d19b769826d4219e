/**
 * Hook payloads shaped like the ones MiniMax Code sends (reference §5; fixtures/minimax/hooks/),
 * with the session, workspace and any event fields a test needs swapped in.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { minimaxFixtures } from '../transcript-helpers.js';

const FIXTURE: Record<string, string> = {
  PreToolUse: 'pretooluse-stdin.native.json',
  PostToolUse: 'posttooluse-stdin.native.json',
  Stop: 'stop-stdin.native.json',
  SessionStart: 'sessionstart-stdin.native.json',
  SessionEnd: 'sessionend-stdin.native.json',
  PreCompact: 'precompact-stdin.native.json',
  UserPromptSubmit: 'userpromptsubmit-stdin.native.json',
};

export type HostEvent = keyof typeof FIXTURE;

export function hostPayload(event: HostEvent, sessionId: string, extra: Record<string, unknown> = {}): string {
  const file = FIXTURE[event];
  if (!file) throw new Error(`no fixture for ${event}`);
  const base = JSON.parse(readFileSync(path.join(minimaxFixtures, 'hooks', file), 'utf8')) as Record<string, unknown>;
  return JSON.stringify({ ...base, session_id: sessionId, ...extra });
}

const envelope = (id: string, turn: string, message: unknown): string => JSON.stringify({ message_id: id, turn_id: turn, message });

/** A turn without any tool call: the user asks, the assistant answers. Texts unique to `n`. */
export function chatTurnLines(n: number, base = Date.now()): string[] {
  const t = base + n * 10;
  return [
    envelope(`msg-c${n}-u`, `turn-c${n}`, { role: 'user', content: [{ type: 'text', text: `chat question ${n}` }], timestamp: t }),
    envelope(`msg-c${n}-a`, `turn-c${n}`, { role: 'assistant', content: [{ type: 'text', text: `chat answer ${n}` }], stopReason: 'stop', timestamp: t + 1 }),
  ];
}

export function chatContents(n: number): string[] {
  return [`chat question ${n}`, `chat answer ${n}`];
}

/** The first part of a tool turn: question, the assistant's call, the tool's result (no answer yet). */
export function toolCallLines(n: number, base = Date.now()): string[] {
  const t = base + n * 10;
  return [
    envelope(`msg-${n}-u`, `turn-${n}`, { role: 'user', content: [{ type: 'text', text: `question ${n}` }], timestamp: t }),
    envelope(`msg-${n}-a1`, `turn-${n}`, {
      role: 'assistant',
      content: [
        { type: 'text', text: `calling tool ${n}` },
        { type: 'toolCall', id: `call_${n}`, name: 'bash', arguments: { command: `echo ${n}` } },
      ],
      stopReason: 'toolUse',
      timestamp: t + 1,
    }),
    envelope(`msg-${n}-r`, `turn-${n}`, { role: 'toolResult', toolCallId: `call_${n}`, toolName: 'bash', content: [{ type: 'text', text: `output ${n}` }], isError: false, timestamp: t + 2 }),
  ];
}

/** The final answer of a tool turn, written after the last tool call. */
export function finalAnswerLine(n: number, base = Date.now()): string {
  return envelope(`msg-${n}-a2`, `turn-${n}`, { role: 'assistant', content: [{ type: 'text', text: `answer ${n}` }], stopReason: 'stop', timestamp: base + n * 10 + 3 });
}

export function appendLines(sessionDir: string, lines: string[]): void {
  appendFileSync(path.join(sessionDir, 'messages.jsonl'), `${lines.join('\n')}\n`);
}
