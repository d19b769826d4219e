import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExclusionPolicy, IGNORE_FILE, parseExcludeList, resolveUserPath } from '../src/config/exclude.js';
import { exclusionSource, loadSettings } from '../src/config/settings.js';
import { fromSessionFiles, PrivacyGate } from '../src/engine/privacy-gate.js';
import { openMemoryDatabase } from '../src/store/database.js';
import { SessionScopeStore } from '../src/store/session-scope.js';
import { workspaceFromFiles } from '../src/transcript/session-workspace.js';
import type { SessionRef } from '../src/transcript/types.js';
import { jsonlOf, ledgerEvent } from './support/delivery-trees.js';
import { makeSession, tempDir } from './transcript-helpers.js';

const HOME = '/home/u';

describe('EVERME_EXCLUDE', () => {
  it('is a list separated by commas or newlines, a comma inside {…} belonging to its glob', () => {
    expect(parseExcludeList(undefined)).toEqual([]);
    expect(parseExcludeList(' ~/work/client-* , /srv/secret\n~/{a,b}/x ,, ')).toEqual(['~/work/client-*', '/srv/secret', '~/{a,b}/x']);
  });

  it('is read from the environment or <data>/everme.env, the environment first', () => {
    const dataDir = tempDir();
    fs.writeFileSync(path.join(dataDir, 'everme.env'), 'EVERME_EXCLUDE=~/from-file,/x\n');
    expect(loadSettings(dataDir, {}, {}).exclude).toEqual(['~/from-file', '/x']);
    expect(loadSettings(dataDir, {}, { EVERME_EXCLUDE: '/from-env' }).exclude).toEqual(['/from-env']);
  });
});

describe('ExclusionPolicy', () => {
  it('matches a ~ glob against the workspace and its parents, never a sibling sharing a prefix', async () => {
    const policy = await ExclusionPolicy.load(['~/work/client-*'], HOME);
    expect(policy.ruleFor('/home/u/work/client-acme')).toEqual({ kind: 'pattern', pattern: '~/work/client-*' });
    expect(policy.ruleFor('/home/u/work/client-acme/api/')).toEqual({ kind: 'pattern', pattern: '~/work/client-*' });
    expect(policy.ruleFor('/home/u/work/clientele')).toBeUndefined();
    expect(policy.ruleFor('/home/u/work/other/client-acme-notes')).toBeUndefined();
    expect(policy.ruleFor('/home/v/work/client-acme')).toBeUndefined();
  });

  it('understands ?, […] and {a,b} in a glob (README), each matching only what it says', async () => {
    const policy = await ExclusionPolicy.load(['~/q/app?', '~/r/v[0-9]', '~/s/{alpha,beta}-svc'], HOME);
    expect(policy.ruleFor('/home/u/q/app1')).toEqual({ kind: 'pattern', pattern: '~/q/app?' });
    expect(policy.ruleFor('/home/u/q/appX/src')).toEqual({ kind: 'pattern', pattern: '~/q/app?' });
    expect(policy.ruleFor('/home/u/q/app')).toBeUndefined();
    expect(policy.ruleFor('/home/u/q/app12')).toBeUndefined();
    expect(policy.ruleFor('/home/u/r/v7')).toEqual({ kind: 'pattern', pattern: '~/r/v[0-9]' });
    expect(policy.ruleFor('/home/u/r/vx')).toBeUndefined();
    expect(policy.ruleFor('/home/u/r/v10')).toBeUndefined();
    expect(policy.ruleFor('/home/u/s/alpha-svc')).toEqual({ kind: 'pattern', pattern: '~/s/{alpha,beta}-svc' });
    expect(policy.ruleFor('/home/u/s/beta-svc/lib')).toEqual({ kind: 'pattern', pattern: '~/s/{alpha,beta}-svc' });
    expect(policy.ruleFor('/home/u/s/gamma-svc')).toBeUndefined();
  });

  it('takes plain paths literally and a bare name as a directory name anywhere in the path', async () => {
    const policy = await ExclusionPolicy.load(['/srv/p(1)/', 'secret-*'], HOME);
    expect(policy.ruleFor('/srv/p(1)')?.kind).toBe('pattern');
    expect(policy.ruleFor('/srv/p1')).toBeUndefined();
    expect(policy.ruleFor('/home/u/secret-stuff/app')).toEqual({ kind: 'pattern', pattern: 'secret-*' });
    expect(policy.ruleFor('/home/u/not-secret')).toBeUndefined();
  });

  it('excludes a workspace with an .everme-ignore at its root, with or without patterns', async () => {
    const workspace = tempDir();
    const policy = await ExclusionPolicy.load([]);
    expect(policy.ruleFor(workspace)).toBeUndefined();
    fs.writeFileSync(path.join(workspace, IGNORE_FILE), '');
    expect(policy.ruleFor(workspace)).toEqual({ kind: 'ignore_file', file: path.join(workspace, IGNORE_FILE) });
  });

  it('compares real paths: a workspace reached through a symlink is excluded, and so is one a pattern names through a symlink', async () => {
    const root = fs.realpathSync(tempDir());
    const secret = path.join(root, 'secret');
    fs.mkdirSync(path.join(secret, 'sub'), { recursive: true });
    fs.symlinkSync(secret, path.join(root, 'alias'));
    const byTarget = await ExclusionPolicy.load([secret], HOME);
    expect(byTarget.ruleFor(path.join(root, 'alias'))).toEqual({ kind: 'pattern', pattern: secret });
    expect(byTarget.ruleFor(path.join(root, 'alias', 'sub'))).toEqual({ kind: 'pattern', pattern: secret });
    const byLink = await ExclusionPolicy.load([path.join(root, 'alias')], HOME);
    expect(byLink.ruleFor(secret)?.kind).toBe('pattern');
    const byGlobThroughLink = await ExclusionPolicy.load([path.join(root, 'ali*')], HOME);
    expect(byGlobThroughLink.ruleFor(path.join(root, 'alias'))?.kind).toBe('pattern');
    const globOverLink = await ExclusionPolicy.load([`${path.join(root, 'alias')}/*`], HOME);
    expect(globOverLink.ruleFor(path.join(secret, 'sub'))?.kind).toBe('pattern');
    expect((await ExclusionPolicy.load([path.join(root, 'other')], HOME)).ruleFor(path.join(root, 'alias'))).toBeUndefined();
  });

  it('finds an .everme-ignore in the workspace or any directory above it, also above its real path', async () => {
    const root = fs.realpathSync(tempDir());
    const project = path.join(root, 'project');
    const deep = path.join(project, 'packages', 'api');
    fs.mkdirSync(deep, { recursive: true });
    const policy = await ExclusionPolicy.load([]);
    expect(policy.ruleFor(deep)).toBeUndefined();
    fs.writeFileSync(path.join(project, IGNORE_FILE), '');
    expect(policy.ruleFor(deep)).toEqual({ kind: 'ignore_file', file: path.join(project, IGNORE_FILE) });
    const elsewhere = path.join(fs.realpathSync(tempDir()), 'api-link');
    fs.symlinkSync(deep, elsewhere);
    expect(policy.ruleFor(elsewhere)).toEqual({ kind: 'ignore_file', file: path.join(project, IGNORE_FILE) });
  });

  it('resolves a relative pattern against the file that declared it, and refuses one the environment declared', async () => {
    const dataDir = fs.realpathSync(tempDir());
    const envFile = path.join(dataDir, 'everme.env');
    fs.writeFileSync(envFile, 'EVERME_EXCLUDE=work/secret,./notes,client-*\n');
    const settings = loadSettings(dataDir, {}, {});
    expect(settings.excludeDeclaredIn).toBe(envFile);
    const policy = await ExclusionPolicy.load(settings.exclude, HOME, exclusionSource(settings));
    expect(policy.ruleFor(path.join(dataDir, 'work', 'secret', 'x'))).toEqual({ kind: 'pattern', pattern: 'work/secret' });
    expect(policy.ruleFor(path.join(dataDir, 'notes'))).toEqual({ kind: 'pattern', pattern: './notes' });
    // Whatever the process's own directory: the pattern means the same.
    expect(policy.ruleFor(path.join(process.cwd(), 'work', 'secret'))).toBeUndefined();

    const fromEnv = loadSettings(dataDir, {}, { EVERME_EXCLUDE: 'work/secret' });
    expect(fromEnv.excludeDeclaredIn).toBeUndefined();
    await expect(ExclusionPolicy.load(fromEnv.exclude, HOME, exclusionSource(fromEnv))).rejects.toMatchObject({
      type: 'invalid_args',
      code: 'exclude_pattern_relative',
    });
    // Absolute, ~ and bare names are not relative; **/name means anywhere.
    const fine = await ExclusionPolicy.load(['/abs', '~/x', 'name-*', '**/vault'], HOME, {});
    expect(fine.ruleFor('/srv/a/vault/b')).toEqual({ kind: 'pattern', pattern: '**/vault' });
  });

  it('expands ~ in paths the user types', () => {
    expect(resolveUserPath('~/work/x', HOME)).toBe('/home/u/work/x');
    expect(resolveUserPath('/abs/y/', HOME)).toBe('/abs/y');
  });
});

describe('the workspace of a session', () => {
  const T = Date.UTC(2026, 8, 1);

  it('comes from the ledger metadata; a messages.jsonl session does not name one', async () => {
    const dataDir = tempDir();
    const id = 'mvs_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
    const ledgerDir = makeSession(dataDir, '2026/09/01', id, {
      createdAtMs: T,
      files: { 'ledger.jsonl': jsonlOf([ledgerEvent(id, 1, 'session.created', { record: { sessionId: id, workspaceDir: '/home/dev/p' } })]) },
    });
    // With when the record said it (its updatedAtMs, else the event's createdAtMs): a claim the index can be weighed against.
    expect(await workspaceFromFiles({ sessionId: id, dir: ledgerDir, createdAtMs: T })).toEqual({
      workspaceDir: '/home/dev/p',
      from: 'ledger.jsonl',
      updatedAtMs: expect.any(Number) as number,
    });
    const other = 'mvs_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
    const messagesDir = makeSession(dataDir, '2026/09/01', other, { createdAtMs: T, files: { 'messages.jsonl': '{"message_id":"m","turn_id":"t","message":{}}\n' } });
    expect(await workspaceFromFiles({ sessionId: other, dir: messagesDir, createdAtMs: T })).toEqual({});
  });

  it('is the one the latest metadata record names: a session.metadata_updated after the history moves it', async () => {
    const dataDir = tempDir();
    const id = 'mvs_cccccccccccccccccccccccccccccccc';
    const dir = makeSession(dataDir, '2026/09/01', id, {
      createdAtMs: T,
      files: {
        'ledger.jsonl': jsonlOf([
          ledgerEvent(id, 1, 'session.created', { record: { sessionId: id, workspaceDir: '/home/dev/old-name' } }),
          ledgerEvent(id, 2, 'message.pi_history_appended', { messages: [{ role: 'user', content: 'client work', timestamp: T + 2 }] }),
          ledgerEvent(id, 3, 'session.metadata_updated', { record: { sessionId: id, workspaceDir: '/home/dev/client-acme', updatedAtMs: T + 60_000 } }),
          // Another session's record in the file is not this one's.
          ledgerEvent('mvs_dddddddddddddddddddddddddddddddd', 4, 'session.metadata_updated', { record: { sessionId: 'x', workspaceDir: '/elsewhere', updatedAtMs: T + 90_000 } }),
        ]),
      },
    });
    expect(await workspaceFromFiles({ sessionId: id, dir, createdAtMs: T })).toEqual({
      workspaceDir: '/home/dev/client-acme',
      from: 'ledger.jsonl',
      updatedAtMs: T + 60_000,
      earlierDirs: ['/home/dev/old-name'],
    });
  });

  it('excludes a moved session when any directory its ledger named is excluded, before or after the move', async () => {
    const T0 = Date.UTC(2026, 7, 12);
    for (const [before, after] of [
      ['/srv/client-secret', '/home/dev/other'],
      ['/home/dev/other', '/srv/client-secret'],
    ] as const) {
      const dataDir = tempDir();
      const id = 'mvs_eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee';
      const dir = makeSession(dataDir, '2026/08/12', id, {
        createdAtMs: T0,
        files: {
          'ledger.jsonl': jsonlOf([
            ledgerEvent(id, 1, 'session.created', { record: { sessionId: id, workspaceDir: before } }),
            ledgerEvent(id, 2, 'session.metadata_updated', { record: { sessionId: id, workspaceDir: after, updatedAtMs: T0 + 60_000 } }),
          ]),
        },
      });
      const db = openMemoryDatabase();
      const gate = new PrivacyGate(db, ['/srv/client-secret'], [fromSessionFiles], false);
      expect(await gate.scope({ sessionId: id, dir, createdAtMs: T0 })).toMatchObject({ status: 'excluded', workspaceDir: '/srv/client-secret' });
      db.close();
    }
  });

  it('is asked of pluggable sources in order: a recorded cwd answers when the files do not, and unknown stays unknown', async () => {
    const db = openMemoryDatabase();
    const session: SessionRef = { sessionId: 'mvs_cccccccccccccccccccccccccccccccc', dir: tempDir(), createdAtMs: T };
    const recorded = new Map<string, string>([[session.sessionId, '/home/u/work/client-zeta']]);
    const gate = new PrivacyGate(db, ['/home/u/work/client-*'], [
      () => undefined,
      (s) => {
        const dir = recorded.get(s.sessionId);
        return dir === undefined ? undefined : { from: 'cwd' as const, dir };
      },
    ]);
    expect(await gate.scope(session)).toEqual({ status: 'excluded', workspaceDir: '/home/u/work/client-zeta', rule: 'EVERME_EXCLUDE /home/u/work/client-*' });
    // Decisions are written when the run ends, in one transaction.
    expect(new SessionScopeStore(db).list()).toEqual([]);
    gate.commit();
    expect(new SessionScopeStore(db).list()).toMatchObject([{ sessionId: session.sessionId, status: 'excluded' }]);

    recorded.clear();
    expect(await gate.scope(session)).toEqual({ status: 'unknown' });
    gate.commit();
    expect(new SessionScopeStore(db).list()).toMatchObject([{ sessionId: session.sessionId, status: 'workspace_unknown' }]);

    recorded.set(session.sessionId, '/home/u/work/mine');
    expect(await gate.scope(session)).toEqual({ status: 'included', workspaceDir: '/home/u/work/mine' });
    gate.commit();
    expect(new SessionScopeStore(db).list()).toEqual([]);
    db.close();
  });
});
