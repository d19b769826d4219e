import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { recentDayPaths, sessionDirSuffix } from '../src/core/session-dirs.js';
import { locateSession } from '../src/transcript/session-locate.js';
import { makeSession, minimaxFixtures, tempDir } from './transcript-helpers.js';

const NOW = Date.UTC(2026, 8, 14, 12, 0, 0);
const SID = 'mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40';

describe('locateSession', () => {
  it('names session directories by base64url of the id, without padding', () => {
    expect(sessionDirSuffix(SID)).toBe('-session_bXZzXzNmOWMyYTdkNDFlODRiMGM5ZDVhNmUxZjdiMmM4ZDQw');
    expect(sessionDirSuffix('a')).toBe('-session_YQ');
  });

  it('looks in today and yesterday, in UTC and in local time', () => {
    const dirs = recentDayPaths(NOW);
    expect(dirs).toContain('2026/09/14');
    expect(dirs).toContain('2026/09/13');
    expect(dirs.length).toBeLessThanOrEqual(4);
  });

  it('reads the newest copy wherever it is: a restored older copy in a later date directory is not the session', async () => {
    const data = tempDir();
    // makeSession writes updatedAtMs = createdAtMs: the live copy's manifest is the newer.
    const live = makeSession(data, '2026/09/14', SID, { createdAtMs: NOW });
    const restored = makeSession(data, '2026/09/15', SID, { createdAtMs: NOW - 60_000 });
    // A broken copy is reported, not chosen.
    const broken = makeSession(data, '2027/01/01', SID, { manifest: 'broken' });
    const invalid: string[] = [];
    expect((await locateSession(data, SID, { onInvalidManifest: (d) => invalid.push(d) }))?.dir).toBe(live);
    expect(invalid).toEqual([broken]);
    // Remembered is a candidate, not the answer: the stale copy a hook once found loses to the live one.
    expect((await locateSession(data, SID, { remembered: restored }))?.dir).toBe(live);
    expect((await locateSession(data, SID, { remembered: live }))?.dir).toBe(live);
  });

  it('falls back to the whole date tree for an old session', async () => {
    const found = await locateSession(path.join(minimaxFixtures, 'messages-session'), SID);
    expect(found?.sessionId).toBe(SID);
    expect(found?.dir).toContain(path.join('2026', '09', '14'));
  });

  it('uses a remembered directory while its manifest still names the session, and looks again otherwise', async () => {
    const data = tempDir();
    const remembered = makeSession(tempDir(), '2024/02/02', SID);
    expect((await locateSession(data, SID, { remembered }))?.dir).toBe(remembered);

    const stale = makeSession(tempDir(), '2024/02/02', 'mvs_other_session');
    const current = makeSession(data, '2026/09/14', SID);
    expect((await locateSession(data, SID, { remembered: stale }))?.dir).toBe(current);
    expect((await locateSession(data, SID, { remembered: path.join(data, 'gone') }))?.dir).toBe(current);
  });

  it('confirms with the manifest: a matching name with another id is not the session', async () => {
    const data = tempDir();
    const dir = makeSession(data, '2026/09/14', SID);
    fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ sessionId: 'mvs_someone_else', createdAtMs: 1 }));
    expect(await locateSession(data, SID)).toBeUndefined();
  });

  it('returns undefined for an unknown id or a data dir without sessions', async () => {
    expect(await locateSession(path.join(minimaxFixtures, 'messages-session'), 'mvs_unknown')).toBeUndefined();
    expect(await locateSession(tempDir(), SID)).toBeUndefined();
  });
});
