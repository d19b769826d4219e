import { describe, expect, it } from 'vitest';
import { PrivacyGate } from '../src/engine/privacy-gate.js';
import { openDatabase } from '../src/store/database.js';
import { SessionScopeStore } from '../src/store/session-scope.js';
import { WRITE_TURN_BYTES, WriteTurn } from '../src/store/write-turn.js';
import type { SessionRef } from '../src/transcript/types.js';
import { tempDir } from './transcript-helpers.js';

const T = Date.UTC(2026, 8, 1);

function sessions(n: number): SessionRef[] {
  return Array.from({ length: n }, (_, i) => ({ sessionId: `mvs_${String(i).padStart(32, '0')}`, dir: `/nowhere/${i}`, createdAtMs: T }));
}

describe('privacy decisions written in the middle of a run', () => {
  it('wait for the main thread\'s turn while the writer thread holds it, then are all written', async () => {
    const db = openDatabase(tempDir());
    const turn = new WriteTurn(new SharedArrayBuffer(WRITE_TURN_BYTES));
    const gate = new PrivacyGate(db, [], [() => undefined], false, undefined, () => turn);
    const scopes = new SessionScopeStore(db);

    // The writer thread's side: a transaction of its is under way.
    turn.takeWriter();
    // More decisions than the gate holds before it writes them: a write is due now.
    for (const session of sessions(1000)) expect(await gate.scope(session)).toEqual({ status: 'unknown' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(scopes.list()).toEqual([]);

    turn.give();
    await gate.settled();
    expect(scopes.list()).toHaveLength(1000);
    expect(scopes.list()[0]).toMatchObject({ status: 'workspace_unknown' });
    db.close();
  });

  it('are written at once when no writer thread runs', async () => {
    const db = openDatabase(tempDir());
    const gate = new PrivacyGate(db, [], [() => undefined], false, undefined, () => undefined);
    for (const session of sessions(1000)) await gate.scope(session);
    expect(new SessionScopeStore(db).list()).toHaveLength(1000);
    db.close();
  });
});
