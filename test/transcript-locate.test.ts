import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sessionDirSuffix } from '../src/core/session-dirs.js';
import { locateSession, recentDayDirs } from '../src/transcript/session-locate.js';
import { sessionsRoot } from '../src/transcript/discover.js';
import { makeSession, minimaxFixtures, tempDir } from './transcript-helpers.js';

const NOW = Date.UTC(2026, 8, 14, 12, 0, 0);
const SID = 'mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40';

function utcDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10).replaceAll('-', '/');
}

describe('locateSession', () => {
  it('names session directories by base64url of the id, without padding', () => {
    expect(sessionDirSuffix(SID)).toBe('-session_bXZzXzNmOWMyYTdkNDFlODRiMGM5ZDVhNmUxZjdiMmM4ZDQw');
    expect(sessionDirSuffix('a')).toBe('-session_YQ');
  });

  it('looks in today and yesterday, in UTC and in local time', () => {
    const dirs = recentDayDirs('/d', NOW).map((d) => path.relative(sessionsRoot('/d'), d));
    expect(dirs).toContain('2026/09/14');
    expect(dirs).toContain('2026/09/13');
    expect(dirs.length).toBeLessThanOrEqual(4);
  });

  it('finds a session in a recent directory without walking the rest of the tree', async () => {
    const data = tempDir();
    const dir = makeSession(data, utcDate(NOW - 24 * 3600_000), SID, { createdAtMs: NOW - 3600_000 });
    // The same name in a newer directory with a broken manifest would be reported if the walk reached it.
    makeSession(data, '2027/01/01', SID, { manifest: 'broken' });
    const invalid: string[] = [];
    const found = await locateSession(data, SID, { nowMs: NOW, onInvalidManifest: (d) => invalid.push(d) });
    expect(found).toEqual({ sessionId: SID, dir, createdAtMs: NOW - 3600_000, updatedAtMs: NOW - 3600_000 });
    expect(invalid).toEqual([]);
  });

  it('falls back to the whole date tree for an old session', async () => {
    const found = await locateSession(path.join(minimaxFixtures, 'messages-session'), SID, { nowMs: Date.UTC(2030, 0, 1) });
    expect(found?.sessionId).toBe(SID);
    expect(found?.dir).toContain(path.join('2026', '09', '14'));
  });

  it('uses a remembered directory while its manifest still names the session, and looks again otherwise', async () => {
    const data = tempDir();
    const remembered = makeSession(tempDir(), '2024/02/02', SID);
    expect((await locateSession(data, SID, { remembered, nowMs: NOW }))?.dir).toBe(remembered);

    const stale = makeSession(tempDir(), '2024/02/02', 'mvs_other_session');
    const current = makeSession(data, '2026/09/14', SID);
    expect((await locateSession(data, SID, { remembered: stale, nowMs: NOW }))?.dir).toBe(current);
    expect((await locateSession(data, SID, { remembered: path.join(data, 'gone'), nowMs: NOW }))?.dir).toBe(current);
  });

  it('confirms with the manifest: a matching name with another id is not the session', async () => {
    const data = tempDir();
    const dir = makeSession(data, '2026/09/14', SID);
    fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ sessionId: 'mvs_someone_else', createdAtMs: 1 }));
    expect(await locateSession(data, SID, { nowMs: NOW })).toBeUndefined();
  });

  it('returns undefined for an unknown id or a data dir without sessions', async () => {
    expect(await locateSession(path.join(minimaxFixtures, 'messages-session'), 'mvs_unknown', { nowMs: NOW })).toBeUndefined();
    expect(await locateSession(tempDir(), SID)).toBeUndefined();
  });
});
