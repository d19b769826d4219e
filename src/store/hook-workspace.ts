import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { makeDirs, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../core/private-dir.js';

const CWD_SUFFIX = '.cwd';

/**
 * The workspace a hook payload named for a session (`cwd`), as the hook wrote it down before it
 * decided anything: current sessions name their workspace nowhere else, so a session the hook kept
 * out (its workspace excluded) is known to be excluded by every later run, import and sync
 * included. A plain file next to the hook's slot files (`<state>/hook/<session>.cwd`), so the hook
 * never opens SQLite to write it; the engine copies it into the store when it reads it.
 */
export function hookWorkspaceFile(stateDir: string, sessionId: string): string {
  return path.join(hookStateDir(stateDir), `${sessionId}${CWD_SUFFIX}`);
}

/** The hook's own files in the state dir: these cwds, its slots and marks (src/hook/), its event log. */
export function hookStateDir(stateDir: string): string {
  return path.join(stateDir, 'hook');
}

/**
 * The sessions that have a recorded workspace file now, from one listing of the directory: a run
 * over thousands of sessions asks once instead of once per session. A file written after the listing
 * is not in it (see `SessionCatalog.listedHookCwd` for who may live with that).
 */
export function listHookWorkspaces(stateDir: string): Set<string> {
  let names: string[];
  try {
    names = readdirSync(hookStateDir(stateDir));
  } catch {
    // No hook ever ran (or its directory is unreadable, as a missing file would be): no workspace recorded.
    return new Set();
  }
  // Temporary files (`<session>.cwd.<pid>.tmp`) are not recorded yet.
  return new Set(names.filter((name) => name.endsWith(CWD_SUFFIX)).map((name) => name.slice(0, -CWD_SUFFIX.length)));
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

/**
 * Records `cwd` for the session unless it is already recorded; replaced atomically, so no reader
 * sees half of it. Masked like every recorded workspace (a directory can be named after a token),
 * so a later run's exclusion check sees the masked path: the hook checks the one it was given.
 */
export async function recordHookWorkspace(stateDir: string, sessionId: string, cwd: string): Promise<void> {
  const recorded = recordedHookWorkspace(stateDir, sessionId);
  // Nearly every hook call: this cwd is recorded already, and masking left it as it was.
  if (recorded === cwd) return;
  // Loaded only to write: the secret rules are milliseconds of start-up the usual call never pays.
  const { redactText } = await import('../core/redact.js');
  const masked = redactText(cwd);
  if (recorded === masked) return;
  const file = hookWorkspaceFile(stateDir, sessionId);
  makeDirs(path.dirname(file), PRIVATE_DIR_MODE);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, masked, { mode: PRIVATE_FILE_MODE });
  renameSync(tmp, file);
}
