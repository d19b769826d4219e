import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../bench/prng.js';
import { WarningCollector } from '../src/core/warnings.js';
import { discoverSessions } from '../src/transcript/discover.js';
import { canonicalJson } from '../src/transcript/ledger-replay.js';
import { openSessionHistory, type HistoryOptions } from '../src/transcript/session-history.js';
import type { SessionRef } from '../src/transcript/types.js';
import { collect, jsonl, makeSession, minimaxFixtures, tempDir } from './transcript-helpers.js';

const SID = 'mvs_00000000000000000000000000000001';

interface ExpectedReplay {
  sessionId: string;
  deleted: boolean;
  piHistory: unknown[];
  displayMsgIds?: string[];
}

async function fixtureSession(sessionId: string): Promise<SessionRef> {
  const all = await collect(
    discoverSessions(path.join(minimaxFixtures, 'ledger-session'), { onInvalidManifest: () => undefined }),
  );
  return all.find((s) => s.sessionId === sessionId)!;
}

function expected(name: string): ExpectedReplay {
  return JSON.parse(fs.readFileSync(path.join(minimaxFixtures, 'ledger-session', name), 'utf8')) as ExpectedReplay;
}

let seqCounter = 0;
function event(kind: string, payload: Record<string, unknown> = {}, over: Record<string, unknown> = {}) {
  seqCounter += 1;
  return { kind, sessionId: SID, schemaVersion: 1, eventId: `evt_${seqCounter}`, seq: seqCounter, createdAtMs: 1, ...payload, ...over };
}
const user = (text: string) => ({ role: 'user', content: [{ type: 'text', text }], timestamp: 1 });
const append = (...texts: string[]) => event('message.pi_history_appended', { messages: texts.map(user) });
const replace = (...texts: string[]) => event('message.pi_history_replaced', { messages: texts.map(user) });

async function replayLines(lines: unknown[], opts: HistoryOptions = {}) {
  const dir = makeSession(tempDir(), '2026/07/21', SID, { files: { 'ledger.jsonl': jsonl(lines) } });
  const warnings = new WarningCollector();
  const history = openSessionHistory({ sessionId: SID, dir, createdAtMs: 1 }, warnings, {}, opts);
  const items = await collect(history.items());
  const texts = items.map((i) => ((i.message.content as { text: string }[])[0]!).text);
  return { history, items, texts, warnings: warnings.entries(), dir };
}

describe('ledger replay', () => {
  it('reproduces expected-replay.json from the fixture ledger', async () => {
    const want = expected('expected-replay.json');
    const session = await fixtureSession(want.sessionId);
    const warnings = new WarningCollector();
    const history = openSessionHistory(session, warnings);
    expect(history.source).toBe('ledger');
    const items = await collect(history.items());
    expect(items.map((i) => i.message)).toEqual(want.piHistory);
    expect(history.workspaceDir()).toBe('/home/demo/projects/widget');
    expect(warnings.entries()).toEqual([]);
    // The summary came from seq 6's replacement, the rest from seq 10's retraction that restored them.
    expect(items.map((i) => i.location)).toEqual([1, 2, 3, 4, 5].map(() => ({ file: 'ledger.jsonl', line: 10 })));
  });

  it('reproduces expected-replay-state-deleted.json: a state deletion clears what came before', async () => {
    const want = expected('expected-replay-state-deleted.json');
    const history = openSessionHistory(await fixtureSession(want.sessionId), new WarningCollector());
    expect((await collect(history.items())).map((i) => i.message)).toEqual(want.piHistory);
  });

  it('appends, replaces and retracts to the effective history only', async () => {
    const { texts } = await replayLines([
      append('a', 'b'),
      append('c'),
      replace('summary'),
      append('d'),
      append('rejected'),
      event('message.turn_retracted', { turnId: 't', removedDisplayMsgIds: [], messages: [user('summary'), user('d')] }),
      append('e'),
    ]);
    expect(texts).toEqual(['summary', 'd', 'e']);
  });

  it('replays by seq, then eventId, whatever the line order', async () => {
    const lines = [
      event('message.pi_history_appended', { messages: [user('third')] }, { seq: 3 }),
      event('message.pi_history_appended', { messages: [user('second-b')] }, { seq: 2, eventId: 'evt_b' }),
      event('message.pi_history_appended', { messages: [user('first')] }, { seq: 1 }),
      event('message.pi_history_appended', { messages: [user('second-a')] }, { seq: 2, eventId: 'evt_a' }),
    ];
    expect((await replayLines(lines)).texts).toEqual(['first', 'second-a', 'second-b', 'third']);
  });

  it('ignores events of another session', async () => {
    const { texts, warnings } = await replayLines([
      append('mine'),
      event('message.pi_history_replaced', { messages: [user('theirs')] }, { sessionId: 'mvs_other' }),
      event('message.state_deleted', {}, { sessionId: 'mvs_other' }),
    ]);
    expect(texts).toEqual(['mine']);
    expect(warnings).toEqual([]);
  });

  it('treats session.deleted as the end: no history, deleted, later appends ignored', async () => {
    const { texts } = await replayLines([append('a'), event('session.deleted'), append('after')]);
    expect(texts).toEqual([]);
    // A state deletion clears the same way but is not the end: what follows it is history again.
    expect((await replayLines([append('a'), event('message.state_deleted'), append('after')])).texts).toEqual(['after']);
  });

  it('takes the workspace dir from the latest session metadata', async () => {
    const { history } = await replayLines([
      event('session.created', { record: { sessionId: SID, workspaceDir: '/p/one', status: 'idle' } }),
      event('session.metadata_updated', { record: { sessionId: SID, workspaceDir: '/p/two', title: 'x' } }),
      event('session.metadata_updated', { record: { sessionId: SID, title: 'renamed' } }),
    ]);
    expect(history.workspaceDir()).toBe('/p/two');
  });

  it('drops unparseable lines and events the runtime would reject, one warning each, and replays the rest', async () => {
    const { texts, warnings } = await replayLines([
      append('ok-1'),
      '{"kind": not json',
      event('message.pi_history_appended', { messages: [user('v2')] }, { schemaVersion: 2 }),
      event('message.pi_history_appended', { messages: [user('fraction')] }, { seq: 2.5 }),
      event('message.pi_history_appended', { messages: [user('no-created')] }, { createdAtMs: '1' }),
      event('message.pi_history_replaced', { messages: 'not an array' }),
      '',
      append('ok-2'),
    ]);
    expect(texts).toEqual(['ok-1', 'ok-2']);
    expect(warnings).toEqual([
      { code: 'invalid_json', count: 1, samples: [{ file: 'ledger.jsonl', line: 2 }] },
      {
        code: 'invalid_record',
        count: 4,
        samples: [3, 4, 5, 6].map((line) => ({ file: 'ledger.jsonl', line })),
      },
    ]);
  });

  it('holds back an unfinished last event and reports it as incomplete_tail', async () => {
    const dir = makeSession(tempDir(), '2026/07/21', SID, {
      files: { 'ledger.jsonl': jsonl([append('a')]) + JSON.stringify(append('b')).slice(0, 30) },
    });
    const warnings = new WarningCollector();
    const history = openSessionHistory({ sessionId: SID, dir, createdAtMs: 1 }, warnings);
    expect(await collect(history.items())).toHaveLength(1);
    expect(warnings.entries()).toEqual([{ code: 'incomplete_tail', count: 1, samples: [{ file: 'ledger.jsonl', line: 2 }] }]);
  });

  it('keys an unchanged prefix identically after a replacement and gives changed messages new keys', async () => {
    seqCounter = 0;
    const before = await replayLines([append('a', 'b', 'c')]);
    seqCounter = 0;
    const after = await replayLines([append('a', 'b', 'c'), replace('a', 'b', 'C', 'd')]);
    const k0 = before.items.map((i) => i.key);
    const k1 = after.items.map((i) => i.key);
    expect(k1.slice(0, 2)).toEqual(k0.slice(0, 2));
    expect(k1[2]).not.toBe(k0[2]);
    expect(new Set([...k0, ...k1]).size).toBe(5);
    for (const key of k1) expect(key).toMatch(/^[0-9a-f]{32}$/);

    // A retraction back to the earlier history restores the earlier keys exactly.
    seqCounter = 0;
    const retracted = await replayLines([
      append('a', 'b', 'c'),
      append('x'),
      event('message.turn_retracted', { turnId: 't', messages: ['a', 'b', 'c'].map(user) }),
    ]);
    expect(retracted.items.map((i) => i.key)).toEqual(k0);
  });

  it('keeps the keys of the messages a replacement carries over after a summary, and keys stay unique', async () => {
    seqCounter = 0;
    const before = await replayLines([append('a', 'b', 'c')]);
    seqCounter = 0;
    const compacted = await replayLines([append('a', 'b', 'c'), replace('summary', 'b', 'c'), append('d')]);
    const [, kb, kc] = before.items.map((i) => i.key);
    expect(compacted.texts).toEqual(['summary', 'b', 'c', 'd']);
    expect(compacted.items.slice(1, 3).map((i) => i.key)).toEqual([kb, kc]);

    // The same message twice around a carried one: its chained key would be the carried key again.
    seqCounter = 0;
    const repeated = await replayLines([append('a', 'b'), replace('b', 'a', 'b')]);
    expect(new Set(repeated.items.map((i) => i.key)).size).toBe(3);
  });

  it('gives a message the key an earlier release gave it only where a carried key made it differ, and only when asked', async () => {
    // Earlier releases keyed any history as the plain chain this build gives one written without a replacement.
    seqCounter = 0;
    const plain = await replayLines([append('summary', 'b', 'c'), append('d')]);
    seqCounter = 0;
    const compacted = [append('a', 'b', 'c'), replace('summary', 'b', 'c'), append('d')];
    const asked = await replayLines(compacted, { legacyKeys: true });
    expect(asked.items.map((i) => i.legacyKey ?? i.key)).toEqual(plain.items.map((i) => i.key));
    // The summary is chained from the session id under both keyings: only what follows a carried key differs.
    expect(asked.items.map((i) => i.legacyKey === undefined)).toEqual([true, false, false, false]);

    seqCounter = 0;
    expect((await replayLines(compacted)).items.some((i) => i.legacyKey !== undefined)).toBe(false);
    seqCounter = 0;
    const replacedWhole = await replayLines([append('a', 'b'), replace('x', 'y'), append('d')], { legacyKeys: true });
    expect(replacedWhole.items.some((i) => i.legacyKey !== undefined)).toBe(false);
  });

  it('keys the same message the same however its JSON keys are ordered', () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: 'é' }] })).toBe(canonicalJson({ a: [{ c: 'é', d: 2 }], b: 1 }));
    expect(canonicalJson({ b: 1, a: null })).toBe('{"a":null,"b":1}');
  });
});

describe('canonicalJson', () => {
  /** The definition: keys sorted at every level, undefined members dropped, arrays joined as Array.prototype.join does. */
  function reference(value: unknown): string {
    if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
    if (typeof value === 'object' && value !== null) {
      const record = value as Record<string, unknown>;
      const body = Object.keys(record)
        .sort()
        .filter((key) => record[key] !== undefined)
        .map((key) => `${JSON.stringify(key)}:${reference(record[key])}`);
      return `{${body.join(',')}}`;
    }
    return JSON.stringify(value) ?? 'null';
  }

  it('writes every value as the definition does: keys in any order, undefined members, holes, escapes', () => {
    const rand = mulberry32(175);
    const keyPool = ['a', 'b', 'B', 'é', '10', '2', 'k"ey', '', 'role', 'content', 'z\n'];
    const make = (depth: number): unknown => {
      const pick = Math.floor(rand() * (depth > 0 ? 8 : 5));
      if (pick === 0) return keyPool[Math.floor(rand() * keyPool.length)]! + '优\t"';
      if (pick === 1) return [0, -1.5, 1e21, Number.NaN][Math.floor(rand() * 4)];
      if (pick === 2) return rand() < 0.5 ? null : true;
      if (pick === 3) return undefined;
      if (pick === 4) return 'text';
      if (pick < 7) {
        const out: Record<string, unknown> = {};
        for (let i = Math.floor(rand() * 5); i > 0; i--) out[keyPool[Math.floor(rand() * keyPool.length)]!] = make(depth - 1);
        return out;
      }
      const list: unknown[] = Array.from({ length: Math.floor(rand() * 4) }, () => make(depth - 1));
      if (rand() < 0.2) list[list.length + 1] = 'after a hole';
      return list;
    };
    for (let i = 0; i < 3000; i++) {
      const value = make(4);
      expect(canonicalJson(value)).toBe(reference(value));
    }
  });
});
