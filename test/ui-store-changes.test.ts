/**
 * The viewer runs for hours while the store changes under it: `uninstall --purge` removes it, a
 * rebuild replaces it, an import holds its write lock. Every page shows the store as it is now,
 * never creates one, and only reading never waits for a writer.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, envelopeOf, runCli } from './support/cli-process.js';
import { rawRequest, startViewerProcess, type RawResponse, type ViewerProcess } from './support/viewer-process.js';
import { buildStore, conversationIdFor, type BuiltStore } from './recall-store-fixture.js';
import { tempDir } from './transcript-helpers.js';

const FIRST = 'quokkafirstword';
const SECOND = 'pelicansecondword';
const ALPHA = '/srv/projects/alpha';
const BETA = '/srv/projects/beta';

const DB_FILES = ['everme.db', 'everme.db-wal', 'everme.db-shm'];

function authed(viewer: ViewerProcess, pathname: string): Promise<RawResponse> {
  return rawRequest({ port: viewer.port, path: `${viewer.prefix}${pathname}` });
}

describe('everme ui while the store is removed or replaced', { timeout: 120_000 }, () => {
  let root: string;
  let first: BuiltStore;
  let second: BuiltStore;
  let viewer: ViewerProcess;

  beforeAll(async () => {
    root = tempDir();
    first = await buildStore([{ n: 1, workspace: ALPHA, createdAtMs: Date.UTC(2026, 8, 10, 8), texts: [`Where is the ${FIRST} config?`, `The ${FIRST} config is in alpha.toml.`] }], path.join(root, 'first'));
    second = await buildStore([{ n: 2, workspace: BETA, createdAtMs: Date.UTC(2026, 8, 11, 8), texts: [`Explain ${SECOND}.`, `${SECOND} is kept.`] }], path.join(root, 'second'));
    viewer = await startViewerProcess(first.dataDir, cliEnv(root, { EVERME_STATE_DIR: first.stateDir }));
  }, 120_000);

  afterAll(async () => {
    await viewer?.stop();
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it('a store deleted and rebuilt: every page shows the new one, nothing of the old', async () => {
    expect((await authed(viewer, `/search/results?q=${FIRST}`)).body).toContain(conversationIdFor(1));

    // Deleted while the viewer holds it open, then the rebuilt one put in its place.
    for (const f of DB_FILES) fs.rmSync(path.join(first.stateDir, f), { force: true });
    fs.copyFileSync(path.join(second.stateDir, 'everme.db'), path.join(first.stateDir, 'everme.db'));

    const home = (await authed(viewer, '/')).body;
    expect(home).toContain(BETA);
    expect(home).not.toContain(ALPHA);
    expect((await authed(viewer, `/search/results?q=${FIRST}`)).body).toContain('No memories match');
    expect((await authed(viewer, `/search/results?q=${SECOND}`)).body).toContain(conversationIdFor(2));
    expect((await authed(viewer, `/conversation/${conversationIdFor(1)}`)).status).toBe(404);
  });

  it('a store purged: no memories on any page, and no page creates it again', async () => {
    fs.rmSync(first.stateDir, { recursive: true, force: true });

    expect((await authed(viewer, '/')).body).toContain('No memories yet');
    expect((await authed(viewer, `/search/results?q=${SECOND}`)).body).toContain('No memories yet');
    expect((await authed(viewer, `/conversation/${conversationIdFor(2)}`)).status).toBe(404);
    for (const pathname of ['/warnings', '/health', '/forgotten', `/forget?c=${conversationIdFor(2)}`, `/project?dir=${encodeURIComponent(BETA)}`]) {
      expect((await authed(viewer, pathname)).status, pathname).toBe(200);
    }
    expect((await authed(viewer, `/forget?c=${conversationIdFor(2)}`)).body).toContain('nothing to forget');
    // A forget from a page left open: nothing to forget in a store that is gone, and none is made.
    const forget = await rawRequest({
      port: viewer.port,
      method: 'POST',
      path: `${viewer.prefix}/forget`,
      body: new URLSearchParams([['_secret', viewer.secret], ['c', conversationIdFor(2)]]).toString(),
      headers: { Origin: viewer.origin, 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expect(forget.body).not.toContain('Forgot 1 conversation');
    expect(fs.existsSync(first.stateDir)).toBe(false);
  });
});

describe('everme ui while another process holds the store’s write lock', { timeout: 120_000 }, () => {
  let root: string;
  let store: BuiltStore;
  let viewer: ViewerProcess;
  let holder: Database.Database;

  beforeAll(async () => {
    root = tempDir();
    store = await buildStore([{ n: 1, workspace: ALPHA, createdAtMs: Date.UTC(2026, 8, 10, 8), texts: [`Where is the ${FIRST} config?`, `The ${FIRST} config is in alpha.toml.`] }], root);
    viewer = await startViewerProcess(store.dataDir, cliEnv(root, { EVERME_STATE_DIR: store.stateDir }));
    // What a long import does: a write transaction held open.
    holder = new Database(path.join(store.stateDir, 'everme.db'));
    holder.exec('BEGIN IMMEDIATE');
  }, 120_000);

  afterAll(async () => {
    if (holder?.inTransaction) holder.exec('ROLLBACK');
    holder?.close();
    await viewer?.stop();
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it.each([`/conversation/${conversationIdFor(1)}`, '/warnings', '/health', '/forgotten', `/forget?c=${conversationIdFor(1)}`, '/'])('%s only reads: served at once', async (pathname) => {
    const started = Date.now();
    const r = await authed(viewer, pathname);
    expect(r.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('a forget that must wait past the busy timeout says the store is busy, not unwritable', async () => {
    const r = await rawRequest({
      port: viewer.port,
      method: 'POST',
      path: `${viewer.prefix}/forget`,
      body: new URLSearchParams([['_secret', viewer.secret], ['c', conversationIdFor(1)]]).toString(),
      headers: { Origin: viewer.origin, 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expect(r.status).toBe(503);
    expect(r.body).toContain('busy');
    expect(r.body).toContain('Try again');
    expect(r.body).not.toContain('writable');
  });

  it('everme report and status read a busy store without waiting for it', async () => {
    const env = cliEnv(root, { EVERME_STATE_DIR: store.stateDir });
    for (const command of ['report', 'status']) {
      const started = Date.now();
      const r = await runCli([command, '--json', '--data-dir', store.dataDir], env);
      expect(envelopeOf(r).ok === true || command === 'status', `${command}: ${r.stdout}${r.stderr}`).toBe(true);
      expect(r.stdout + r.stderr).not.toContain('database_busy');
      expect(Date.now() - started, command).toBeLessThan(4000);
    }
  });
});
