import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { WarningCollector } from '../src/core/warnings.js';
import { discoverSessions } from '../src/transcript/discover.js';
import { chooseHistoryFile, openSessionHistory } from '../src/transcript/session-history.js';
import type { SessionRef } from '../src/transcript/types.js';
import { collect, copyTree, jsonl, makeSession, minimaxFixtures, tempDir, transcriptFixtures } from './transcript-helpers.js';

const SID = 'mvs_00000000000000000000000000000002';

async function sessionsIn(dataDir: string): Promise<SessionRef[]> {
  return collect(discoverSessions(dataDir, { onInvalidManifest: () => undefined }));
}

async function read(session: SessionRef) {
  const warnings = new WarningCollector();
  const history = openSessionHistory(session, warnings);
  const items = await collect(history.items());
  return { history, items, keys: items.map((i) => i.key), warnings: warnings.entries() };
}

const envelope = (id: string, message: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  message_id: id,
  turn_id: 'turn_1',
  message,
  ...extra,
});
const user = (text: string) => ({ role: 'user', content: [{ type: 'text', text }], timestamp: 1 });

function messagesSession(content: string): SessionRef {
  const dir = makeSession(tempDir(), '2026/09/01', SID, { files: { 'messages.jsonl': content } });
  return { sessionId: SID, dir, createdAtMs: 1 };
}

describe('choosing the history file', () => {
  it('uses messages.jsonl when it has bytes, even though the manifest declares a ledger that does not exist', async () => {
    const [session] = await sessionsIn(path.join(minimaxFixtures, 'messages-session'));
    const choice = chooseHistoryFile(session!.dir);
    expect(choice).toMatchObject({ source: 'messages', relFile: 'messages.jsonl', file: path.join(session!.dir, 'messages.jsonl') });
    expect(choice.stat?.size).toBe(fs.statSync(choice.file!).size);
  });

  it('has nothing yet for a session whose messages.jsonl is empty and that has no ledger', async () => {
    const [, fresh] = await sessionsIn(path.join(minimaxFixtures, 'messages-session'));
    const { history, items, warnings } = await read(fresh!);
    expect(history.source).toBe('none');
    expect(items).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it('falls back to ledger.jsonl when messages.jsonl is empty', async () => {
    const dir = makeSession(tempDir(), '2026/07/21', SID, {
      files: {
        'messages.jsonl': '',
        'ledger.jsonl': jsonl([
          { kind: 'message.pi_history_appended', sessionId: SID, schemaVersion: 1, eventId: 'e1', seq: 1, createdAtMs: 1, messages: [user('hi')] },
        ]),
      },
    });
    expect(chooseHistoryFile(dir)).toMatchObject({ source: 'ledger', relFile: 'ledger.jsonl' });
    expect((await read({ sessionId: SID, dir, createdAtMs: 1 })).items).toHaveLength(1);
  });

  it('has nothing yet when there are no history files at all', () => {
    const dir = makeSession(tempDir(), '2026/07/21', SID);
    expect(chooseHistoryFile(dir)).toEqual({ source: 'none' });
  });
});

describe('reading messages.jsonl', () => {
  it('yields the fixture envelopes keyed by message_id, with their lines', async () => {
    const [session] = await sessionsIn(path.join(minimaxFixtures, 'messages-session'));
    const { items, warnings } = await read(session!);
    const lines = fs.readFileSync(path.join(session!.dir, 'messages.jsonl'), 'utf8').trim().split('\n');
    expect(items).toEqual(
      lines.map((line, i) => {
        const env = JSON.parse(line) as { message_id: string; message: Record<string, unknown> };
        return { key: env.message_id, message: env.message, location: { file: 'messages.jsonl', line: i + 1 } };
      }),
    );
    expect(items.map((i) => i.message.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant', 'user', 'assistant']);
    expect(warnings).toEqual([]);
  });

  it('skips blank lines and drops bad lines with a warning each, naming file and line only', async () => {
    const session = messagesSession(
      jsonl([
        envelope('m1', user('one')),
        '',
        '{"message_id":"m2", broken',
        envelope('m3', user('three'), { turn_config: { model: 'MiniMax-M3' }, extra: 'ignored' }),
        { message_id: 'm4', message: user('no turn id') },
        envelope('m5', [user('array')] as unknown as Record<string, unknown>),
        { message_id: 6, turn_id: 't', message: user('numeric id') },
        '[1,2,3]',
        '   ',
        envelope('m7', user('seven')),
      ]),
    );
    const { keys, warnings, items } = await read(session);
    expect(keys).toEqual(['m1', 'm3', 'm7']);
    expect(items[2]!.location).toEqual({ file: 'messages.jsonl', line: 10 });
    expect(warnings).toEqual([
      { code: 'invalid_json', count: 1, samples: [{ file: 'messages.jsonl', line: 3 }] },
      { code: 'invalid_record', count: 4, samples: [5, 6, 7, 8].map((line) => ({ file: 'messages.jsonl', line })) },
    ]);
  });

  it('does not consume a last line that is still being written, and reads it once it is complete', async () => {
    const whole = JSON.stringify(envelope('m2', user('second')));
    const session = messagesSession(jsonl([envelope('m1', user('first'))]) + whole.slice(0, 25));
    const partial = await read(session);
    expect(partial.keys).toEqual(['m1']);
    expect(partial.warnings).toEqual([{ code: 'incomplete_tail', count: 1, samples: [{ file: 'messages.jsonl', line: 2 }] }]);

    fs.appendFileSync(path.join(session.dir, 'messages.jsonl'), `${whole.slice(25)}\n`);
    const complete = await read(session);
    expect(complete.keys).toEqual(['m1', 'm2']);
    expect(complete.warnings).toEqual([]);
  });

  it('accepts a tool call at the end of the file whose result is not written yet', async () => {
    const call = { role: 'assistant', content: [{ type: 'toolCall', id: 'call_1', name: 'bash', arguments: {} }], stopReason: 'toolUse' };
    const { keys, warnings } = await read(messagesSession(jsonl([envelope('m1', user('run it')), envelope('m2', call)])));
    expect(keys).toEqual(['m1', 'm2']);
    expect(warnings).toEqual([]);
  });
});

describe('compacted sessions', () => {
  const compacted = path.join(transcriptFixtures, 'compacted');
  const g1 = 'snapshots/g000000000001--cmp_first.jsonl';
  const g2 = 'snapshots/g000000000002--cmp_second.jsonl';

  it('yields the whole history through a two-level snapshot chain, oldest first, each kept message once', async () => {
    const [session] = await sessionsIn(compacted);
    const { items, warnings } = await read(session!);
    expect(items.map((i) => [i.key, i.location.file, i.location.line])).toEqual([
      ['msg-c-01', g1, 1],
      ['msg-c-02', g1, 2],
      ['msg-c-03', g1, 3],
      ['msg-c-04', g1, 4],
      ['msg-c-05', g2, 3],
      ['msg-c-06', g2, 5],
      ['msg-c-07', 'messages.jsonl', 3],
      ['msg-c-08', 'messages.jsonl', 4],
    ]);
    expect(items.map((i) => i.message.role)).not.toContain('compactionSummary');
    expect(items.map((i) => i.message.role)).not.toContain('custom');
    expect(warnings).toEqual([]);
  });

  it('warns about a missing oldest snapshot and keeps what exists', async () => {
    const data = copyTree(compacted);
    const [session] = await sessionsIn(data);
    fs.rmSync(path.join(session!.dir, g1));
    const { keys, warnings } = await read(session!);
    expect(keys).toEqual(['msg-c-04', 'msg-c-05', 'msg-c-06', 'msg-c-07', 'msg-c-08']);
    expect(warnings).toEqual([{ code: 'missing_snapshot', count: 1, samples: [{ file: g1, line: 0 }] }]);
  });

  it('warns about a missing middle snapshot; the history behind it cannot be reached', async () => {
    const data = copyTree(compacted);
    const [session] = await sessionsIn(data);
    fs.rmSync(path.join(session!.dir, g2));
    const { keys, warnings } = await read(session!);
    expect(keys).toEqual(['msg-c-06', 'msg-c-07', 'msg-c-08']);
    expect(warnings).toEqual([{ code: 'missing_snapshot', count: 1, samples: [{ file: g2, line: 0 }] }]);
  });

  it('refuses a compactionId that would leave the snapshots directory', async () => {
    const outside = makeSession(tempDir(), '2026/09/01', 'mvs_outside', {
      files: { 'messages.jsonl': jsonl([envelope('secret', user('not this session'))]) },
    });
    const artifact = { schemaVersion: 1, generation: 2, parentSnapshot: { generation: 1, compactionId: `../../${path.basename(outside)}` } };
    const session = messagesSession(
      jsonl([envelope('sum', { role: 'compactionSummary', summary: 's' }, { history_artifact: artifact }), envelope('m1', user('x'))]),
    );
    const { keys, warnings } = await read(session);
    expect(keys).toEqual(['m1']);
    expect(warnings).toEqual([{ code: 'invalid_record', count: 1, samples: [{ file: 'messages.jsonl', line: 1 }] }]);
  });

  it('stops at a snapshot chain that loops back on itself', async () => {
    const looping = { schemaVersion: 1, generation: 1, parentSnapshot: { generation: 1, compactionId: 'loop' } };
    const first = envelope('sum', { role: 'compactionSummary', summary: 's' }, { history_artifact: looping });
    const dir = makeSession(tempDir(), '2026/09/01', SID, {
      files: {
        'messages.jsonl': jsonl([first, envelope('m2', user('new'))]),
        'snapshots/g000000000001--loop.jsonl': jsonl([first, envelope('m1', user('old'))]),
      },
    });
    const { keys, warnings } = await read({ sessionId: SID, dir, createdAtMs: 1 });
    expect(keys).toEqual(['m1', 'm2']);
    expect(warnings).toEqual([
      { code: 'invalid_record', count: 1, samples: [{ file: 'snapshots/g000000000001--loop.jsonl', line: 1 }] },
    ]);
  });
});
