/**
 * A date directory the walk cannot list (EACCES, EIO, …) is reported once, by path, and the walk
 * still finds every session it can read; a directory that vanished is no news. The failures are
 * injected into `readdirSync`, since chmod 000 does not stop root (the end-to-end test with a real
 * permission is in unreadable-dir-cli.test.ts).
 */
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EvermeError } from '../src/core/errors.js';
import { discoverSessions, sessionsRoot } from '../src/transcript/discover.js';
import { locateNamedSession } from '../src/transcript/session-locate.js';
import { runHook } from '../src/hook/hook-entry.js';
import { collect, makeSession, tempDir } from './transcript-helpers.js';

/** Directory → the error code its listing fails with. */
const failing = new Map<string, string>();

vi.mock('node:fs', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs')>();
  const readdirSync = ((dir: string, ...rest: unknown[]) => {
    const code = failing.get(String(dir));
    if (code !== undefined) throw Object.assign(new Error(`${code}: injected, scandir '${String(dir)}'`), { code });
    return (actual.readdirSync as (...args: unknown[]) => unknown)(dir, ...rest);
  }) as typeof actual.readdirSync;
  return { ...actual, readdirSync, default: { ...actual, readdirSync } };
});

afterEach(() => failing.clear());

const A = 'mvs_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
const B = 'mvs_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
const C = 'mvs_cccccccccccccccccccccccccccccccc';

function tree(): string {
  const data = tempDir();
  makeSession(data, '2026/08/01', A);
  makeSession(data, '2026/09/14', B);
  makeSession(data, '2026/09/15', C);
  return data;
}

async function walk(data: string) {
  const unreadable: Array<[string, string]> = [];
  const refs = await collect(discoverSessions(data, { onInvalidManifest: () => undefined, onUnreadableDir: (dir, reason) => unreadable.push([dir, reason]) }));
  return { ids: refs.map((r) => r.sessionId), unreadable };
}

describe('the walk over v2/sessions names each directory it cannot list', () => {
  it('an unreadable month directory: one report with its path and code, the other sessions still found', async () => {
    const data = tree();
    const month = path.join(sessionsRoot(data), '2026', '09');
    failing.set(month, 'EACCES');
    expect(await walk(data)).toEqual({ ids: [A], unreadable: [[month, 'EACCES']] });
  });

  it('a day directory failing with another error (EIO) is reported too; a vanished one (ENOENT) is not', async () => {
    const data = tree();
    const day = path.join(sessionsRoot(data), '2026', '09', '14');
    const gone = path.join(sessionsRoot(data), '2026', '09', '15');
    failing.set(day, 'EIO');
    failing.set(gone, 'ENOENT');
    expect(await walk(data)).toEqual({ ids: [A], unreadable: [[day, 'EIO']] });
  });

  it('an unreadable year directory is reported once; an unreadable root is still the error it was', async () => {
    const data = tree();
    failing.set(path.join(sessionsRoot(data), '2026'), 'EPERM');
    expect(await walk(data)).toEqual({ ids: [], unreadable: [[path.join(sessionsRoot(data), '2026'), 'EPERM']] });
    failing.set(sessionsRoot(data), 'EACCES');
    await expect(walk(data)).rejects.toMatchObject({ type: 'permission', code: 'sessions_dir_unreadable' });
  });

  it('`show` of a session that may be under an unreadable directory names that directory, not "No session"', async () => {
    const data = tree();
    const month = path.join(sessionsRoot(data), '2026', '09');
    failing.set(month, 'EACCES');
    const err = await locateNamedSession(data, B, { hint: 'h' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EvermeError);
    expect(err).toMatchObject({ type: 'permission', code: 'sessions_dir_unreadable', detail: { path: month } });
    expect((err as Error).message).toContain(`${month} could not be read (EACCES)`);
    // A session in a readable part of the tree is found as before.
    await expect(locateNamedSession(data, A, { hint: 'h' })).resolves.toMatchObject({ sessionId: A });
    failing.clear();
    await expect(locateNamedSession(data, 'mvs_dddddddddddddddddddddddddddddddd', { hint: 'h' })).rejects.toMatchObject({ type: 'not_found' });
  });
});

describe("the hook's own lookup of a session's directory", () => {
  const hookInput = (sessionId: string): Readable =>
    Readable.from([JSON.stringify({ hook_event_name: 'PostToolUse', session_id: sessionId, tool_name: 'bash', tool_input: { command: 'ls' } })]);
  const hookEnv = (data: string): NodeJS.ProcessEnv => ({ MINIMAX_DATA_DIR: data, EVERME_STATE_DIR: path.join(data, 'state'), HOME: data });

  it('names the directory it could not list when the session may be under it, instead of calling the session unknown', async () => {
    const data = tree();
    const month = path.join(sessionsRoot(data), '2026', '09');
    failing.set(month, 'EACCES');
    const result = await runHook(hookInput(B), hookEnv(data));
    expect(result).toMatchObject({ outcome: 'ignored', reason: `unreadable_dir: ${month} (EACCES)` });
  });

  it('still calls a session unknown when every directory could be listed', async () => {
    const data = tree();
    failing.set(path.join(sessionsRoot(data), '2026', '07'), 'ENOENT');
    const result = await runHook(hookInput('mvs_dddddddddddddddddddddddddddddddd'), hookEnv(data));
    expect(result).toMatchObject({ outcome: 'ignored', reason: 'unknown_session' });
  });
});
