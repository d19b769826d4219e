import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openMemoryDatabase } from '../src/store/database.js';
import { SessionManifestStore } from '../src/store/session-manifests.js';
import { discoverSessions, sessionsRoot } from '../src/transcript/discover.js';
import type { SessionRef } from '../src/transcript/types.js';
import { collect, makeSession, minimaxFixtures, tempDir } from './transcript-helpers.js';

async function discover(dataDir: string, sinceMs?: number) {
  const invalid: { dir: string; reason: string }[] = [];
  const sessions = await collect(
    discoverSessions(dataDir, { sinceMs, onInvalidManifest: (dir, reason) => invalid.push({ dir, reason }) }),
  );
  return { sessions, invalid, ids: sessions.map((s: SessionRef) => s.sessionId) };
}

const since = (date: string) => Date.parse(`${date}T00:00:00Z`);

describe('discoverSessions', () => {
  it('finds the sessions of both fixture trees, identified by their manifests, in date order', async () => {
    const messages = await discover(path.join(minimaxFixtures, 'messages-session'));
    expect(messages.ids).toEqual(['mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40', 'mvs_0b7e55aa90c24f3e8d1c2b3a4f5e6d70']);
    expect(messages.sessions[0]).toEqual({
      sessionId: 'mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40',
      dir: path.join(
        sessionsRoot(path.join(minimaxFixtures, 'messages-session')),
        '2026/09/14/03-05-12-345-session_bXZzXzNmOWMyYTdkNDFlODRiMGM5ZDVhNmUxZjdiMmM4ZDQw',
      ),
      createdAtMs: 1789355112345,
      updatedAtMs: 1789355173845,
    });
    const ledger = await discover(path.join(minimaxFixtures, 'ledger-session'));
    expect(ledger.ids).toEqual(['mvs_9d2e4c6a8b0f41d3a5c7e9f1b3d5f7a9', 'mvs_5a5a5a5a0000411182c3d4e5f6a7b8c9']);
    expect(messages.invalid).toEqual([]);
    expect(ledger.invalid).toEqual([]);
  });

  it('takes the id from manifest.json, not from the directory name', async () => {
    const data = tempDir();
    const dir = makeSession(data, '2026/09/01', 'mvs_name_in_dir');
    fs.writeFileSync(
      path.join(dir, 'manifest.json'),
      JSON.stringify({ sessionId: 'mvs_real_id', createdAtMs: 1, extraKey: { nested: true } }),
    );
    expect((await discover(data)).ids).toEqual(['mvs_real_id']);
  });

  it('reads manifests of every size whole, one after another, small after large (the read buffer is shared)', async () => {
    const data = tempDir();
    const sizes = [200, 9_000, 300, 700_000, 100];
    sizes.forEach((size, i) => {
      const dir = makeSession(data, '2026/09/01', `mvs_size_${i}`, { time: `12-00-0${i}-000` });
      const head = JSON.stringify({ sessionId: `mvs_size_${i}`, createdAtMs: 1000 + i, paths: { note: '' } });
      // Padded with multi-byte characters, so a read cut short would break the JSON or a character.
      const note = 'é'.repeat(Math.max(0, Math.floor((size - head.length) / 2)));
      fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ sessionId: `mvs_size_${i}`, createdAtMs: 1000 + i, paths: { note } }));
    });
    const found = await discover(data);
    expect(found.invalid).toEqual([]);
    // In the walk's order: each manifest after a larger one, and the one that grows the buffer.
    expect(found.ids).toEqual(sizes.map((_, i) => `mvs_size_${i}`));
    expect(found.sessions.map((s) => s.createdAtMs)).toEqual([1000, 1001, 1002, 1003, 1004]);
  });

  it('does not follow symlinked session, day or year directories', async () => {
    const data = tempDir();
    const real = makeSession(data, '2026/09/01', 'mvs_real');
    const elsewhere = makeSession(tempDir(), '2026/09/02', 'mvs_outside');
    fs.mkdirSync(path.join(sessionsRoot(data), '2026/09/03'), { recursive: true });
    fs.symlinkSync(real, path.join(sessionsRoot(data), '2026/09/03', '01-00-00-000-session_bGluaw'));
    fs.symlinkSync(path.dirname(elsewhere), path.join(sessionsRoot(data), '2026/09/04'));
    fs.symlinkSync(path.join(sessionsRoot(data), '2026'), path.join(sessionsRoot(data), '2027'));
    expect((await discover(data)).ids).toEqual(['mvs_real']);
  });

  it('reports an invalid manifest with its directory and goes on with the rest', async () => {
    const data = tempDir();
    const broken = makeSession(data, '2026/09/01', 'mvs_broken', { manifest: '{"sessionId": ' });
    const noDate = makeSession(data, '2026/09/01', 'mvs_nodate', { time: '13-00-00-000', manifest: '{"sessionId":"x"}' });
    makeSession(data, '2026/09/01', 'mvs_creating', { time: '14-00-00-000', manifest: null });
    makeSession(data, '2026/09/02', 'mvs_good');
    const { ids, invalid } = await discover(data);
    expect(ids).toEqual(['mvs_good']);
    expect(invalid.map((i) => i.dir)).toEqual([broken, noDate]);
    expect(invalid[1]!.reason).toContain('createdAtMs');
  });

  it('skips directory names that are not a date tree or a session', async () => {
    const data = tempDir();
    makeSession(data, '2026/09/01', 'mvs_good');
    for (const odd of ['tmp/09/01', '2026/13/01', '2026/9/01', '2026/09/xx', '2026/09/32', '20266/09/01']) {
      makeSession(data, odd, `mvs_odd_${odd.replaceAll('/', '_')}`);
    }
    const notSession = path.join(sessionsRoot(data), '2026/09/01/12-00-00-000-notasession');
    fs.mkdirSync(notSession);
    fs.writeFileSync(path.join(notSession, 'manifest.json'), JSON.stringify({ sessionId: 'mvs_no', createdAtMs: 1 }));
    fs.writeFileSync(path.join(sessionsRoot(data), '2026/09/01/13-00-00-000-session_ZmlsZQ'), 'a file');
    expect((await discover(data)).ids).toEqual(['mvs_good']);
  });

  it('finds nothing, without failing, when there is no sessions directory', async () => {
    expect((await discover(tempDir())).ids).toEqual([]);
  });

  it('keeps sessions created at or after --since, by the manifest date', async () => {
    const data = tempDir();
    makeSession(data, '2026/07/22', 'mvs_before', { time: '01-00-00-000', createdAtMs: since('2026-07-21') - 1 });
    makeSession(data, '2026/07/22', 'mvs_at', { time: '02-00-00-000', createdAtMs: since('2026-07-21') });
    makeSession(data, '2026/07/23', 'mvs_after', { createdAtMs: since('2026-07-23') });
    expect((await discover(data, since('2026-07-21'))).ids).toEqual(['mvs_at', 'mvs_after']);
  });

  it('keeps a session in the directory of the day before since, when its manifest says it is on since', async () => {
    // Ledger-era directories are named in local time: 2026-07-20 at UTC-1 is 2026-07-21 in UTC.
    const data = tempDir();
    makeSession(data, '2026/07/20', 'mvs_local_late', { time: '23-30-00-000', createdAtMs: since('2026-07-21') + 30 * 60_000 });
    makeSession(data, '2026/07/20', 'mvs_really_old', { createdAtMs: since('2026-07-20') + 12 * 3600_000 });
    expect((await discover(data, since('2026-07-21'))).ids).toEqual(['mvs_local_late']);
  });

  it('never opens date directories that are certainly older than since', async () => {
    const data = tempDir();
    // Broken manifests would be reported if their directories were walked.
    for (const date of ['2025/12/31', '2026/06/30', '2026/07/19']) {
      makeSession(data, date, `mvs_${date.replaceAll('/', '')}`, { manifest: 'not json' });
    }
    makeSession(data, '2026/07/21', 'mvs_kept', { createdAtMs: since('2026-07-21') });
    const pruned = await discover(data, since('2026-07-21'));
    expect(pruned.ids).toEqual(['mvs_kept']);
    expect(pruned.invalid).toEqual([]);

    // One day earlier, 2026/07/19 is within the slack and is opened.
    const slack = await discover(data, since('2026-07-20'));
    expect(slack.invalid.map((i) => path.basename(path.dirname(i.dir)))).toEqual(['19']);
  });
});

describe('what a walk keeps of each manifest', () => {
  async function walkWith(dataDir: string, manifests: SessionManifestStore) {
    const invalid: string[] = [];
    const sessions = await collect(discoverSessions(dataDir, { onInvalidManifest: (_dir, reason) => invalid.push(reason), manifests }));
    manifests.flush();
    return { ids: sessions.map((s: SessionRef) => s.sessionId), invalid };
  }

  it('reads a manifest again only when its stat changed, and forgets a session directory that is gone', async () => {
    const data = tempDir();
    const dir = makeSession(data, '2026/09/01', 'mvs_aaaa');
    const file = path.join(dir, 'manifest.json');
    const when = new Date('2026-09-02T00:00:00Z');
    fs.utimesSync(file, when, when);
    const store = new SessionManifestStore(openMemoryDatabase());
    expect((await walkWith(data, store)).ids).toEqual(['mvs_aaaa']);

    // Rewritten in place (same inode), same size, its mtime put back: nothing a stat sees, so not read...
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('mvs_aaaa', 'mvs_bbbb'));
    fs.utimesSync(file, when, when);
    expect((await walkWith(data, store)).ids).toEqual(['mvs_aaaa']);
    // ...as a walk without what was kept shows: it reads the file.
    expect((await discover(data)).ids).toEqual(['mvs_bbbb']);

    // A change a stat sees: read again, and kept.
    fs.utimesSync(file, when, new Date('2026-09-03T00:00:00Z'));
    expect((await walkWith(data, store)).ids).toEqual(['mvs_bbbb']);
    expect(store.knownIn(path.dirname(dir)).get(path.basename(dir))).toMatchObject({ sessionId: 'mvs_bbbb', size: fs.statSync(file).size });

    fs.rmSync(dir, { recursive: true });
    expect((await walkWith(data, store)).ids).toEqual([]);
    expect(store.knownIn(path.dirname(dir)).size).toBe(0);
  });

  it('never takes a manifest that became a symlink from what was kept: it is read, and reported', async () => {
    const data = tempDir();
    const dir = makeSession(data, '2026/09/01', 'mvs_aaaa');
    const store = new SessionManifestStore(openMemoryDatabase());
    expect((await walkWith(data, store)).ids).toEqual(['mvs_aaaa']);
    const file = path.join(dir, 'manifest.json');
    fs.renameSync(file, path.join(data, 'elsewhere.json'));
    fs.symlinkSync(path.join(data, 'elsewhere.json'), file);
    expect(await walkWith(data, store)).toEqual({ ids: [], invalid: ['manifest.json is a symlink'] });
    expect(store.knownIn(path.dirname(dir)).size).toBe(0);
  });

  it('in a dry run, uses what earlier walks kept and keeps nothing new', async () => {
    const data = tempDir();
    const dir = makeSession(data, '2026/09/01', 'mvs_aaaa');
    const db = openMemoryDatabase();
    expect((await walkWith(data, new SessionManifestStore(db, true))).ids).toEqual(['mvs_aaaa']);
    expect(new SessionManifestStore(db).knownIn(path.dirname(dir)).size).toBe(0);
  });
});
