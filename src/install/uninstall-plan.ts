import { existsSync, lstatSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { EvermeError, toEvermeError } from '../core/errors.js';
import { requireDataDir } from '../config/data-dir.js';
import { envFilePath } from '../config/settings.js';
import { assertStateDirUsable, configuredStateDir } from '../config/state-dir.js';
import { envFileProblem, parseEnvText } from '../config/env-file.js';
import { databasePath } from '../store/database.js';
import { hookStateDir } from '../store/hook-workspace.js';
import { existingMode, writeFileAtomic } from './atomic-write.js';
import { ENV_FILE_MODE, isHeaderLine, isHeaderOnly, stripInstallAdditions } from './env-file-writer.js';
import { envKeysUnrecorded, evermeDir, installRecordPath, readInstallRecord, runtimeDir, UNRECORDED_INSTALL_KEYS, writeInstallRecord } from './install-record.js';
import { foreignHookFile, HOOK_EVENTS, hookFilePath, hooksDir } from './markdown-hooks.js';
import { MCP_SERVER_NAME, mcpConfigPath, removeMcpServer } from './mcp-config.js';
import { removeLocalPlugin } from './local-plugin.js';

export type UninstallStepName = 'hook' | 'hooks-dir' | 'plugin' | 'mcp' | 'runtime' | 'env' | 'store';

export interface UninstallStep {
  step: UninstallStepName;
  path: string;
  /** `absent`: nothing of ours was there; `kept`: left in place on purpose (see note). */
  status: 'removed' | 'restored' | 'absent' | 'kept' | 'skipped';
  note?: string;
}

export interface UninstallWarning {
  code: 'mcp_config_invalid';
  message: string;
  path: string;
}

export interface UninstallResult {
  dataDir: string;
  purge: boolean;
  dryRun: boolean;
  steps: UninstallStep[];
  warnings: UninstallWarning[];
}

export interface UninstallOptions {
  dataDir: string;
  purge?: boolean;
  dryRun?: boolean;
  /** The store's directory when settings put it elsewhere (`EVERME_STATE_DIR`); default: as configured now. */
  stateDir?: string;
}


/** The hook's state is flat files: a `hook` directory holding directories is not everme's to delete. */
function holdsFilesOnly(dir: string): boolean {
  try {
    return readdirSync(dir, { withFileTypes: true }).every((entry) => entry.isFile());
  } catch {
    return false;
  }
}

/** What everme keeps in a state directory: the database with its WAL and journal, and the hook's state (flat files only). */
function stateEntries(stateDir: string): string[] {
  const database = databasePath(stateDir);
  const files = [database, `${database}-wal`, `${database}-shm`, `${database}-journal`].filter((file) => existsSync(file));
  const hook = hookStateDir(stateDir);
  return existsSync(hook) && holdsFilesOnly(hook) ? [...files, hook] : files;
}

/**
 * A store `EVERME_STATE_DIR` put outside the data dir. That directory was the user's choice and may
 * hold other files: --purge deletes only what everme keeps in it, and the directory once empty.
 */
function removeOutsideStore(run: UninstallRun, stateDir: string): void {
  const entries = stateEntries(stateDir);
  if (!run.purge) {
    if (entries.length > 0) run.steps.push({ step: 'store', path: stateDir, status: 'kept', note: 'memory store and hook state (EVERME_STATE_DIR); `everme uninstall --purge` removes them' });
    return;
  }
  for (const entry of entries) run.remove(entry);
  const emptied = !run.dryRun && isEmptyDir(stateDir);
  if (emptied) rmdirSync(stateDir);
  const note = `memory store and hook state (EVERME_STATE_DIR)${emptied ? '' : '; the directory itself kept'}`;
  run.steps.push({ step: 'store', path: stateDir, status: entries.length > 0 ? 'removed' : 'absent', note });
}

function isEmptyDir(dir: string): boolean {
  try {
    return readdirSync(dir).length === 0;
  } catch {
    return false;
  }
}

/** One uninstall as it goes: what install recorded it created, and the steps and warnings so far. */
interface UninstallRun {
  dataDir: string;
  purge: boolean;
  dryRun: boolean;
  created: Set<string>;
  /** Keys install appended to an env file it did not create. */
  envKeysAdded: string[];
  /**
   * What install added to an env file that stays (a key the user gave): kept in the install record,
   * so a later `--purge` still knows which file or lines are everme's.
   */
  envRemembered?: { created: string[]; envKeysAdded: string[] };
  /** The record predates listing the keys of an everme.env install created (`envKeysUnrecorded`). */
  envKeysUnrecorded: boolean;
  /** The env file install appended to had no final newline (`envNoFinalNewline`). */
  envNoFinalNewline: boolean;
  steps: UninstallStep[];
  warnings: UninstallWarning[];
  /** Removes a file or directory (nothing under --dry-run). */
  remove(target: string): void;
}

/** What stands at `file`: a link counts as a file (removing it never follows it). */
function pathKind(file: string): 'file' | 'directory' | 'absent' {
  try {
    return lstatSync(file).isDirectory() ? 'directory' : 'file';
  } catch {
    return 'absent';
  }
}

function removeHooks(run: UninstallRun): void {
  const { dataDir, dryRun, steps } = run;
  const removed = new Set<string>();
  for (const event of HOOK_EVENTS) {
    const file = hookFilePath(dataDir, event);
    const kind = pathKind(file);
    // Install writes a file here; a directory under the same name is not everme's to delete (remove is recursive).
    if (kind === 'directory') {
      steps.push({ step: 'hook', path: file, status: 'kept', note: `${event} hook: a directory, not the file install writes` });
      continue;
    }
    const foreign = kind === 'file' ? foreignHookFile(file) : undefined;
    if (foreign) {
      steps.push({ step: 'hook', path: file, status: 'kept', note: `${event} hook: ${foreign}, left as it is` });
      continue;
    }
    if (kind === 'file') run.remove(file);
    if (kind === 'file') removed.add(path.basename(file));
    steps.push({ step: 'hook', path: file, status: kind === 'file' ? 'removed' : 'absent', note: `${event} hook` });
  }
  const hooks = hooksDir(dataDir);
  if (run.created.has('hooks') && existsSync(hooks)) {
    const empty = dryRun ? readdirSync(hooks).every((name) => removed.has(name)) : isEmptyDir(hooks);
    if (empty) {
      if (!dryRun) rmdirSync(hooks);
      steps.push({ step: 'hooks-dir', path: hooks, status: 'removed' });
    } else {
      steps.push({ step: 'hooks-dir', path: hooks, status: 'kept', note: 'holds other hooks' });
    }
  }
}

function removeMcpEntry(run: UninstallRun): void {
  const mcpFile = mcpConfigPath(run.dataDir);
  const mcp = removeMcpServer(mcpFile, {
    fileCreatedByInstall: run.created.has('mcp.json'),
    backupCreatedByInstall: run.created.has('mcp.json.everme-backup'),
    dryRun: run.dryRun,
  });
  // Install adds its entry by creating the file, or by rewriting it after saving the backup.
  const wroteMcp = run.created.has('mcp.json') || run.created.has('mcp.json.everme-backup');
  if (mcp.status === 'skipped' && !wroteMcp) {
    run.steps.push({ step: 'mcp', path: mcpFile, status: 'kept', note: `${mcp.reason}; install never wrote to it, so it is left as it is` });
  } else if (mcp.status === 'skipped') {
    run.steps.push({ step: 'mcp', path: mcpFile, status: 'skipped', note: mcp.reason });
    run.warnings.push({
      code: 'mcp_config_invalid',
      path: mcpFile,
      message: `${mcpFile} was left untouched: ${mcp.reason}. Remove the "${MCP_SERVER_NAME}" entry by hand once it is fixed.`,
    });
  } else if (mcp.status === 'foreign') {
    run.steps.push({ step: 'mcp', path: mcpFile, status: 'kept', note: `${mcp.reason}: left as it is` });
  } else if (mcp.status === 'absent') {
    run.steps.push({ step: 'mcp', path: mcpFile, status: 'absent' });
  } else if (mcp.status === 'file_removed') {
    run.steps.push({ step: 'mcp', path: mcpFile, status: 'removed', note: 'install had created it; nothing else was in it' });
  } else {
    run.steps.push({
      step: 'mcp',
      path: mcpFile,
      status: mcp.restoredFromBackup ? 'restored' : 'removed',
      note: mcp.restoredFromBackup ? `server "${MCP_SERVER_NAME}" removed, file restored from its backup` : `server "${MCP_SERVER_NAME}" removed`,
    });
  }
}

function removeRuntime(run: UninstallRun): void {
  const runtime = runtimeDir(run.dataDir);
  const runtimePresent = existsSync(runtime);
  if (runtimePresent) run.remove(runtime);
  const state = evermeDir(run.dataDir);
  if (!run.dryRun && existsSync(state)) {
    for (const entry of readdirSync(state)) if (/^\.runtime-(staging|old)-/.test(entry)) run.remove(path.join(state, entry));
  }
  run.steps.push({ step: 'runtime', path: runtime, status: runtimePresent ? 'removed' : 'absent' });
}

function removeEnvFile(run: UninstallRun): void {
  const envFile = envFilePath(run.dataDir);
  if (!existsSync(envFile)) {
    run.steps.push({ step: 'env', path: envFile, status: 'absent' });
    return;
  }
  const problem = envFileProblem(envFile);
  if (problem !== undefined) {
    // Never everme's: install writes a file there, and refuses when something else is in the way.
    run.steps.push({ step: 'env', path: envFile, status: 'kept', note: `${problem}: not everme's, left alone` });
    return;
  }
  if (!run.created.has('everme.env')) {
    restoreForeignEnvFile(run, envFile);
    return;
  }
  const text = readFileSync(envFile, 'utf8');
  if (run.purge) {
    purgeCreatedEnvFile(run, envFile, text);
  } else if (isHeaderOnly(text)) {
    run.remove(envFile);
    run.steps.push({ step: 'env', path: envFile, status: 'removed' });
  } else {
    run.envRemembered = { created: ['everme.env'], envKeysAdded: run.envKeysAdded };
    run.steps.push({ step: 'env', path: envFile, status: 'kept', note: 'holds your settings; `everme uninstall --purge` removes what install wrote there' });
  }
}

/**
 * --purge of an env file install created: what install wrote (its header, the keys it set) comes
 * out, and the file goes only when nothing else is left. EverMe's installer appends its agent
 * token to the file it finds there, which must survive everme's purge.
 */
function purgeCreatedEnvFile(run: UninstallRun, envFile: string, text: string): void {
  const keys = [...parseEnvText(text).keys()];
  // An older install listed nothing for the file it created: the key only install sets was its.
  const present = (run.envKeysUnrecorded ? [...new Set([...run.envKeysAdded, ...UNRECORDED_INSTALL_KEYS])] : run.envKeysAdded).filter((key) => keys.includes(key));
  const next = stripInstallAdditions(text, present);
  if (isHeaderOnly(next)) {
    run.remove(envFile);
    run.steps.push({ step: 'env', path: envFile, status: 'removed' });
    return;
  }
  if (!run.dryRun) writeFileAtomic(envFile, next, { mode: existingMode(envFile) ?? ENV_FILE_MODE });
  const others = [...parseEnvText(next).keys()];
  const what = others.length ? others.join(', ') : 'lines';
  const removed = ['the everme header', ...present].join(', ');
  run.steps.push({ step: 'env', path: envFile, status: 'kept', note: `holds ${what} that install did not write, so kept: removed only what install wrote (${removed})` });
}

/**
 * An env file everme did not create (EverMe's installer writes one with its agent token) is never
 * deleted, not even by --purge: only what install put into it comes out again. The keys install
 * appended are settings the user gave, so they stay unless --purge.
 */
function restoreForeignEnvFile(run: UninstallRun, envFile: string): void {
  let text: string;
  try {
    text = readFileSync(envFile, 'utf8');
  } catch (err) {
    // Install records each key it appends: with none recorded there is nothing of everme's to take
    // out, so a file uninstall cannot read is no reason to fail.
    if (run.envKeysAdded.length > 0) throw err;
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    run.steps.push({ step: 'env', path: envFile, status: 'kept', note: `not created by \`everme install\` and it wrote nothing there; unreadable (${why}), left as it is` });
    return;
  }
  const present = run.envKeysAdded.filter((key) => parseEnvText(text).has(key));
  const next = stripInstallAdditions(text, run.purge ? present : [], { finalNewline: !run.envNoFinalNewline });
  const foreign = 'not created by `everme install`';
  if (!run.purge && present.length) run.envRemembered = { created: [], envKeysAdded: present };
  if (next === text) {
    const kept = present.length ? `; ${present.join(', ')} (set by install) kept: \`everme uninstall --purge\` takes out just that` : ': left as it was';
    run.steps.push({ step: 'env', path: envFile, status: 'kept', note: `${foreign}, so never deleted${kept}` });
    return;
  }
  if (!run.dryRun) writeFileAtomic(envFile, next, { mode: existingMode(envFile) ?? ENV_FILE_MODE });
  const header = text.split(/\r?\n/).some(isHeaderLine) ? ['the everme header'] : [];
  const removed = [...header, ...(run.purge ? present : [])];
  run.steps.push({ step: 'env', path: envFile, status: 'restored', note: `${foreign}, so never deleted: removed only what install added (${removed.join(', ')})` });
}

/** The store and sync state: deleted with --purge, else kept (and the directory removed only when empty). */
function removeStore(run: UninstallRun): void {
  const { dataDir, dryRun } = run;
  const state = evermeDir(dataDir);
  if (run.purge) {
    const present = existsSync(state);
    if (present) run.remove(state);
    run.steps.push({ step: 'store', path: state, status: present ? 'removed' : 'absent', note: 'memory store and sync state' });
    return;
  }
  const remembered = run.envRemembered;
  if (!dryRun && remembered) writeInstallRecord(dataDir, remembered.created, remembered.envKeysAdded, run.envKeysUnrecorded && remembered.created.includes('everme.env'), run.envNoFinalNewline && !remembered.created.includes('everme.env'));
  else if (!dryRun) rmSync(installRecordPath(dataDir), { force: true });
  if (!existsSync(state)) return;
  const leftovers = readdirSync(state).filter((name) => name !== 'install.json' && !(dryRun && name === 'runtime'));
  if (leftovers.length === 0 && !remembered) {
    if (!dryRun) rmdirSync(state);
    run.steps.push({ step: 'store', path: state, status: 'removed', note: 'it was empty' });
  } else if (leftovers.length === 0) {
    run.steps.push({ step: 'store', path: state, status: 'kept', note: 'only install.json: what install put into everme.env, for `everme uninstall --purge`' });
  } else {
    run.steps.push({ step: 'store', path: state, status: 'kept', note: 'memory store and sync state; `everme uninstall --purge` removes it' });
  }
}

/**
 * Removes what `everme install` added and nothing else: the two hook files, the local plugin, the MCP entry (the
 * file itself when install created it and nothing else is left), the staged runtime, and the
 * directories install created once they are empty. `purge` also deletes the store, and the env file
 * when install created it (from one it did not, only the lines install added).
 */
export function runUninstall(options: UninstallOptions): UninstallResult {
  const dataDir = requireDataDir(path.resolve(options.dataDir));
  const dryRun = options.dryRun ?? false;
  // --purge removes the store where the settings put it: a setting that points under a file names
  // no store at all, and "absent" would hide that the real one is elsewhere. Without --purge the
  // store is not touched, so a bad setting does not stop the hooks' removal.
  if (options.purge === true && options.stateDir === undefined) {
    const configured = configuredStateDir(dataDir);
    if (configured !== undefined && path.resolve(configured) !== path.resolve(evermeDir(dataDir))) assertStateDirUsable(configured);
  }
  const record = readInstallRecord(dataDir);
  const run: UninstallRun = {
    dataDir,
    purge: options.purge ?? false,
    dryRun,
    created: new Set(record?.created ?? []),
    envKeysAdded: record?.envKeysAdded ?? [],
    envKeysUnrecorded: envKeysUnrecorded(record),
    envNoFinalNewline: record?.envNoFinalNewline === true,
    steps: [],
    warnings: [],
    remove: (target) => {
      if (!dryRun) rmSync(target, { recursive: true, force: true });
    },
  };
  try {
    removeHooks(run);
    const plugin = removeLocalPlugin(dataDir, run.created, dryRun);
    run.steps.push({ step: 'plugin', path: plugin.path, status: plugin.status, ...('note' in plugin ? { note: plugin.note } : {}) });
    removeMcpEntry(run);
    removeRuntime(run);
    // The env file can be what names the store's directory: it goes after that store, so an
    // uninstall that fails in between still finds the store when it is run again.
    const stateDir = path.resolve(options.stateDir ?? configuredStateDir(dataDir) ?? evermeDir(dataDir));
    if (stateDir !== path.resolve(evermeDir(dataDir))) removeOutsideStore(run, stateDir);
    removeEnvFile(run);
    removeStore(run);
  } catch (err) {
    throw dryRun ? err : stoppedPartWay(err);
  }
  return { dataDir, purge: run.purge, dryRun, steps: run.steps, warnings: run.warnings };
}

/**
 * Uninstall is not undone on failure, but resumable: it removes the hooks first (so nothing runs a
 * half-removed everme) and rewrites install.json last, so a second run still knows what is
 * everme's and finishes the job. The failure keeps its type, code and message; the hint says so.
 */
function stoppedPartWay(err: unknown): EvermeError {
  const original = toEvermeError(err);
  const resume = 'Uninstall stopped part way: what it removed stays removed. Run `everme uninstall` again once this is fixed; it finishes the rest.';
  return new EvermeError(original.type, original.message, {
    code: original.code,
    hint: original.hint === undefined ? resume : `${original.hint} ${resume}`,
    ...(original.detail === undefined ? {} : { detail: original.detail }),
    cause: err,
  });
}

export function uninstallOutcomeError(result: UninstallResult): EvermeError | undefined {
  const invalid = result.warnings.find((w) => w.code === 'mcp_config_invalid');
  if (!invalid) return undefined;
  return new EvermeError('conflict', `${result.dryRun ? 'would uninstall' : 'uninstalled'}, except the MCP server entry: ${invalid.message}`, {
    code: 'mcp_config_invalid',
    hint: 'Remove the "everme-memory" entry from mcp.json by hand; everme never rewrites a file it cannot parse.',
    detail: { path: invalid.path, result },
  });
}
