import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import * as z from 'zod';
import { sessionDir } from '../corpus.js';

export interface FixtureSession {
  id: string;
  /** Epoch ms of the session's start. */
  at: number;
  /** [role, text] per turn. */
  turns: Array<['user' | 'assistant', string]>;
}

export interface FixtureQuestion {
  id: string;
  type: string;
  question: string;
  /** [session id, turn index] of every turn labelled as holding the answer. */
  evidence: Array<[string, number]>;
}

export interface RecallFixture {
  source: string;
  license: string;
  sessions: FixtureSession[];
  questions: FixtureQuestion[];
}

const fixtureSchema = z.object({
  source: z.string(),
  license: z.string(),
  sessions: z.array(z.object({ id: z.string(), at: z.number(), turns: z.array(z.tuple([z.enum(['user', 'assistant']), z.string()])) })),
  questions: z.array(z.object({ id: z.string(), type: z.string(), question: z.string(), evidence: z.array(z.tuple([z.string(), z.number()])) })),
});

export function loadFixture(file: string): RecallFixture {
  return fixtureSchema.parse(JSON.parse(gunzipSync(readFileSync(file)).toString('utf8')));
}

/** The MiniMax session id a fixture session is imported under (stable: derived from its id). */
export function minimaxSessionId(fixtureSessionId: string): string {
  return `mvs_${createHash('sha256').update(fixtureSessionId).digest('hex').slice(0, 32)}`;
}

/** A turn's message id in the written transcript, and so its key in the store. */
export function turnKey(index: number): string {
  return `t${index}`;
}

/**
 * Writes the fixture's sessions as MiniMax Code sessions (messages.jsonl era) under
 * `<root>/v2/sessions`, a turn a message, 30 s apart.
 */
export function writeSessions(root: string, sessions: readonly FixtureSession[]): void {
  for (const session of sessions) {
    const sessionId = minimaxSessionId(session.id);
    const dir = sessionDir(root, session.at, sessionId);
    mkdirSync(dir, { recursive: true });
    const lines = session.turns.map(([role, text], i) => {
      const timestamp = session.at + 1000 + i * 30_000;
      const message =
        role === 'user'
          ? { role: 'user', content: [{ type: 'text', text }], timestamp }
          : { role: 'assistant', content: [{ type: 'text', text }], api: 'anthropic-messages', provider: 'minimax', model: 'MiniMax-M3', stopReason: 'stop', timestamp };
      return JSON.stringify({ message_id: turnKey(i), turn_id: `turn_${Math.floor(i / 2)}`, message });
    });
    writeFileSync(path.join(dir, 'messages.jsonl'), `${lines.join('\n')}\n`);
    const updatedAtMs = session.at + 1000 + session.turns.length * 30_000;
    writeFileSync(
      path.join(dir, 'manifest.json'),
      JSON.stringify({ schemaVersion: 1, sessionId, createdAtMs: session.at, updatedAtMs, source: 'local-runtime', layout: 'v2-final-dated-session', paths: { sessionDir: dir } }),
    );
  }
}
