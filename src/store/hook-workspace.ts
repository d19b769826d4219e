import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { makeDirs, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../core/private-dir.js';

/**
 * The workspace a hook payload named for a session (`cwd`), as the hook wrote it down before it
 * decided anything: current sessions name their workspace nowhere else, so a session the hook kept
 * out (its workspace excluded) is known to be excluded by every later run, import and sync
 * included. A plain file next to the hook's slot files (`<state>/hook/<session>.cwd`), so the hook
 * never opens SQLite to write it; the engine copies it into the store when it reads it.
 */
export function hookWorkspaceFile(stateDir: string, sessionId: string): string {
  return path.join(stateDir, 'hook', `${sessionId}.cwd`);
}

/** The workspace last recorded for the session, if any. */
export function recordedHookWorkspace(stateDir: string, sessionId: string): string | undefined {
  const file = hookWorkspaceFile(stateDir, sessionId);
  // Most sessions have no file (the hook never saw them): asking first costs a few microseconds,
  // a failed read throws, and a run asks this of every session it passes (50 ms per 3,000).
  if (!existsSync(file)) return undefined;
  try {
    return readFileSync(file, 'utf8') || undefined;
  } catch {
    return undefined;
  }
}

/** Records `cwd` for the session unless it is already recorded; replaced atomically, so no reader sees half of it. */
export function recordHookWorkspace(stateDir: string, sessionId: string, cwd: string): void {
  if (recordedHookWorkspace(stateDir, sessionId) === cwd) return;
  const file = hookWorkspaceFile(stateDir, sessionId);
  makeDirs(path.dirname(file), PRIVATE_DIR_MODE);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, cwd, { mode: PRIVATE_FILE_MODE });
  renameSync(tmp, file);
}
