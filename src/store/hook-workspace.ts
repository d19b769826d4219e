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

/**
 * Between the masked path and the hook's verdict in a recorded file: no path holds a NUL, so a file
 * without one is a path alone (the hook admitted the session, or masking left its cwd as it was).
 */
const VERDICT_SEPARATOR = '\0';

/**
 * A recorded workspace: the path, masked, and when masking changed it and the hook kept the session
 * out, the rule it matched (masked too). A later run has only the masked path, which no pattern
 * names and under which no `.everme-ignore` lies: `excludedBy` is what the hook saw.
 */
export interface RecordedWorkspace {
  dir: string;
  excludedBy?: string;
}

/** The workspace last recorded for the session, if any. */
export function recordedHookWorkspace(stateDir: string, sessionId: string): RecordedWorkspace | undefined {
  const text = readRecord(stateDir, sessionId);
  return text === undefined ? undefined : parseRecord(text);
}

function parseRecord(text: string): RecordedWorkspace {
  const at = text.indexOf(VERDICT_SEPARATOR);
  if (at < 0) return { dir: text };
  return { dir: text.slice(0, at), excludedBy: text.slice(at + 1) };
}

function readRecord(stateDir: string, sessionId: string): string | undefined {
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
 * Records `cwd` for the session unless it is recorded already; replaced atomically, so no reader
 * sees half of it. Masked like every recorded workspace (a directory can be named after a token).
 * When masking changed it, `verdict` is asked for the rule that keeps the session out (undefined:
 * admitted), checked on the path as the host wrote it, and recorded with it: a later run cannot
 * check the masked path. Asked again at every hook call for the session, so the record follows the
 * user's patterns and ignore files as long as the hook sees the session; after that it stands.
 */
export async function recordHookWorkspace(stateDir: string, sessionId: string, cwd: string, verdict: () => Promise<string | undefined>): Promise<void> {
  const recorded = readRecord(stateDir, sessionId);
  // Nearly every hook call: this cwd is recorded already, and masking left it as it was.
  if (recorded === cwd) return;
  // Loaded only to write: the secret rules are milliseconds of start-up the usual call never pays.
  const { maskedWorkspace } = await import('./masked-workspace.js');
  const masked = maskedWorkspace(cwd);
  let record = masked;
  if (masked !== cwd) {
    let rule: string | undefined;
    try {
      rule = await verdict();
    } catch (err) {
      // No verdict (a pattern the policy refuses fails the hook): the path alone is still worth
      // keeping, but not over a verdict an earlier call recorded for it, which still stands.
      if (recorded === undefined || parseRecord(recorded).dir !== masked) writeRecord(stateDir, sessionId, recorded, masked);
      throw err;
    }
    // The rule names the directory too (a pattern for it, the ignore file in it).
    if (rule !== undefined) record = `${masked}${VERDICT_SEPARATOR}${maskedWorkspace(rule)}`;
  }
  writeRecord(stateDir, sessionId, recorded, record);
}

function writeRecord(stateDir: string, sessionId: string, recorded: string | undefined, record: string): void {
  if (recorded === record) return;
  const file = hookWorkspaceFile(stateDir, sessionId);
  makeDirs(path.dirname(file), PRIVATE_DIR_MODE);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, record, { mode: PRIVATE_FILE_MODE });
  renameSync(tmp, file);
}
