import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { EvermeError } from '../core/errors.js';
import { requireDataDir } from '../config/data-dir.js';
import { envFilePath, loadSettings } from '../config/settings.js';
import { assertStateDirUsable, configuredStateDir } from '../config/state-dir.js';
import { apiBaseNeedsOptIn, assertEnvFileUsable, validateApiBase, normalizeApiKey, writeEnvFile, type EnvUpdates } from './env-file-writer.js';
import { envKeysUnrecorded, evermeDir, installRecordPath, readInstallRecord, runtimeDir, TRACKED_PATHS, writeInstallRecord } from './install-record.js';
import { HOOK_EVENTS, hookCommand, hookFilePath, hooksDir, writeHookFile, type HookEvent, type HookFileResult } from './markdown-hooks.js';
import { PLUGIN_NAME, pluginDir, writeLocalPlugin } from './local-plugin.js';
import { MCP_SERVER_NAME, mcpConfigPath, upsertMcpServer, type McpServerEntry } from './mcp-config.js';
import { detectOfficialPlugin, type DetectOptions, type OfficialPluginDetection } from './official-plugin.js';
import { findPackageRoot, stageRuntime, type StepStatus } from './staging.js';
import { writeTarget } from './atomic-write.js';
import { allOrNothing, installTargets, type InstallTransaction } from './install-transaction.js';

export type InstallStepName = 'runtime' | 'env' | 'hook' | 'plugin' | 'mcp';

export interface InstallStep {
  step: InstallStepName;
  path: string;
  status: StepStatus | 'skipped';
  /** Extra facts for the human reader: never a secret. */
  note?: string;
}

export type InstallWarningCode = 'mcp_config_invalid' | 'mcp_server_conflict' | 'plugin_path_conflict' | 'hook_file_conflict' | 'official_plugin_enabled';

export interface InstallWarning {
  code: InstallWarningCode;
  message: string;
  path?: string;
}

export interface InstallResult {
  dataDir: string;
  dryRun: boolean;
  version: string;
  node: string;
  /** The markdown hooks' command; the plugin's differs only in its `--route`. */
  hookCommand: string;
  steps: InstallStep[];
  warnings: InstallWarning[];
  officialPlugin: OfficialPluginDetection;
  /**
   * Where the credential import and sync use after install comes from, as settings choose it:
   * `set` the key --api-key wrote to everme.env, `kept` one everme.env already held, `environment`
   * the process environment's. The key itself never enters a result.
   */
  apiKey: 'set' | 'kept' | 'environment' | 'none';
  /** everme.env holds a credential: what the hooks use, since MiniMax Code runs them without this environment. */
  credentialInFile: boolean;
  /**
   * Set when --api-key was given but an agent token wins over it (settings' chooseCredential: EverMe's
   * installer rotates the token, so it comes first): the key is written, not used. Names where the
   * token comes from, never the token.
   */
  apiKeyNotUsed?: { inUse: 'EVERME_AGENT_TOKEN'; source: 'everme.env' | 'environment' };
  next: string[];
}

export interface InstallOptions {
  dataDir: string;
  apiKey?: string;
  apiBase?: string;
  dryRun?: boolean;
  /** The environment whose EVERME_API_KEY or EVERME_AGENT_TOKEN counts as configured; defaults to this process's. */
  env?: NodeJS.ProcessEnv;
  /** The package to stage; defaults to the one this code runs from. */
  sourceRoot?: string;
  /** Absolute node binary the hook and MCP server run with; defaults to this process's. */
  node?: string;
  detect?: DetectOptions;
  now?: Date;
}

const HOOK_STEP_NOTE: Record<HookEvent, string> = {
  PreToolUse: 'PreToolUse hook',
  PostToolUse: 'PostToolUse hook',
};

/** Enough of a key to tell which one is configured (the CLI contract's masked form), never the key. */
export function maskKey(key: string): string {
  const match = /^(evt|emk)_([A-Za-z0-9]{4})/.exec(key);
  return match ? `${match[1]}_${match[2]}_REDACTED` : 'hidden';
}

export function importSinceDate(now: Date): string {
  return new Date(now.getTime() - 30 * 24 * 60 * 60 * 1000).toISOString().slice(0, 10);
}

export function mcpEntry(dataDir: string, node: string): McpServerEntry {
  return { command: node, args: [path.join(runtimeDir(dataDir), 'bin', 'run.js'), 'mcp'], env: { MINIMAX_DATA_DIR: dataDir } };
}

function officialPluginWarning(detection: OfficialPluginDetection): InstallWarning | undefined {
  const why =
    'MiniMax Code runs its own EverMe plugin (everme@official) beside this one: every conversation would be ' +
    'stored twice, under two identities. Keep one: disable the official plugin in MiniMax Code, or run `everme uninstall`.';
  if (detection.status === 'enabled') return { code: 'official_plugin_enabled', message: `${detection.message}. ${why}` };
  return undefined;
}

/**
 * The env file: the key and base given, mode 600; the note names a key only in its masked form. A
 * plain-http base the user opted in for gets the opt-in beside it: the hook, which MiniMax Code
 * gives a reduced environment, reads it from this file or refuses the base at every event.
 */
function envStep(envFile: string, options: InstallOptions, insecureBase: boolean, dryRun: boolean): InstallStep & { appended: string[]; keysSet: string[]; noFinalNewline: boolean } {
  const updates: EnvUpdates = {};
  if (options.apiKey !== undefined) updates.EVERME_API_KEY = options.apiKey;
  if (options.apiBase !== undefined) updates.EVERME_API_BASE = options.apiBase.trim();
  if (insecureBase) updates.EVERME_ALLOW_INSECURE_HTTP = '1';
  const env = writeEnvFile(envFile, updates, dryRun);
  const envNotes = [
    ...env.keysSet.map((key) => (key === 'EVERME_API_KEY' ? `${key} set (${maskKey(updates.EVERME_API_KEY ?? '')})` : `${key} set`)),
    ...(env.tightened ? ['permissions set to 600'] : []),
  ];
  return { step: 'env', path: envFile, status: env.status, appended: env.appended, keysSet: env.keysSet, noFinalNewline: env.noFinalNewline, ...(envNotes.length ? { note: envNotes.join(', ') } : {}) };
}

/** A step of install, and the warning it ends with when it had to leave something untouched. */
interface StepDone {
  step: InstallStep;
  warning?: InstallWarning;
}

function pluginStep(dataDir: string, version: string, command: string, dryRun: boolean): StepDone {
  const plugin = writeLocalPlugin(dataDir, { version, command, dryRun });
  if (plugin.status !== 'skipped') return { step: { step: 'plugin', path: plugin.path, status: plugin.status, note: `plugin "${PLUGIN_NAME}": every hook event` } };
  return {
    step: { step: 'plugin', path: plugin.path, status: 'skipped', note: plugin.reason },
    warning: {
      code: 'plugin_path_conflict',
      path: plugin.path,
      message: `${plugin.path} was left untouched: ${plugin.reason}. Move it away, then run \`everme install\` again to install the "${PLUGIN_NAME}" plugin (MiniMax Code builds that load hooks only from plugins capture nothing without it).`,
    },
  };
}

function hookStep(hook: HookFileResult): StepDone {
  if (hook.status !== 'skipped') return { step: { step: 'hook', path: hook.path, status: hook.status, note: HOOK_STEP_NOTE[hook.event] } };
  return {
    step: { step: 'hook', path: hook.path, status: 'skipped', note: `${HOOK_STEP_NOTE[hook.event]}: ${hook.reason}` },
    warning: {
      code: 'hook_file_conflict',
      path: hook.path,
      message: `${hook.path} was left untouched: ${hook.reason}. Move it away, then run \`everme install\` again to install everme's ${HOOK_STEP_NOTE[hook.event]} (the plugin's hooks do not reach MiniMax Code builds that read only markdown hooks).`,
    },
  };
}

function mcpStep(dataDir: string, node: string, dryRun: boolean): StepDone {
  const mcpFile = mcpConfigPath(dataDir);
  const mcp = upsertMcpServer(mcpFile, mcpEntry(dataDir, node), dryRun);
  if (mcp.status !== 'skipped') {
    const note = 'backup' in mcp && mcp.backup ? `server "${MCP_SERVER_NAME}", previous file saved as ${path.basename(mcp.backup)}` : `server "${MCP_SERVER_NAME}"`;
    return { step: { step: 'mcp', path: mcpFile, status: mcp.status, note } };
  }
  const warning: InstallWarning =
    mcp.why === 'foreign'
      ? {
          code: 'mcp_server_conflict',
          path: mcpFile,
          message: `${mcpFile} was left untouched: ${mcp.reason}. Rename that server in mcp.json (or remove it if it is an old copy), then run \`everme install\` again to register everme's "${MCP_SERVER_NAME}" MCP server.`,
        }
      : {
          code: 'mcp_config_invalid',
          path: mcpFile,
          message: `${mcpFile} was left untouched: ${mcp.reason}. Fix it, then run \`everme install\` again to register the "${MCP_SERVER_NAME}" MCP server.`,
        };
  return { step: { step: 'mcp', path: mcpFile, status: 'skipped', note: mcp.reason }, warning };
}

/** What the steps produced, before the result is assembled. */
interface StepsDone {
  version: string;
  hookCommand: string;
  steps: InstallStep[];
  warnings: InstallWarning[];
  officialPlugin: OfficialPluginDetection;
}

/** One install's settled inputs. */
interface InstallContext {
  dataDir: string;
  node: string;
  sourceRoot: string;
  dryRun: boolean;
  options: InstallOptions;
  /** `--api-base` is plain http to a host that is not loopback (and the user opted in). */
  insecureBase: boolean;
}

/** The steps themselves, in order; each write goes to a path installTargets lists (or the runtime, through `tx`). */
async function runSteps(ctx: InstallContext, tx?: InstallTransaction): Promise<StepsDone> {
  const { dataDir, node, sourceRoot, dryRun, options, insecureBase } = ctx;
  const existedBefore = new Map(TRACKED_PATHS.map((p) => [p, existsSync(path.join(dataDir, p))]));
  const steps: InstallStep[] = [];
  const warnings: InstallWarning[] = [];

  const runtime = runtimeDir(dataDir);
  tx?.at(runtime);
  const staged = stageRuntime({ sourceRoot, runtimeDir: runtime, node, dataDir, dryRun, keepPrevious: tx !== undefined });
  tx?.runtimeSwapped(staged.swap);
  steps.push({ step: 'runtime', path: runtime, status: staged.status, note: `everme ${staged.version}, ${staged.files} files, node ${node}` });

  tx?.at(envFilePath(dataDir));
  const { appended: envKeysAppended, keysSet: envKeysSet, noFinalNewline: envNoFinalNewline, ...envDone } = envStep(envFilePath(dataDir), options, insecureBase, dryRun);
  steps.push(envDone);

  const runJs = path.join(runtime, 'bin', 'run.js');
  const command = hookCommand(node, runJs, 'markdown');
  tx?.at(hooksDir(dataDir));
  if (!dryRun) mkdirSync(hooksDir(dataDir), { recursive: true });
  for (const event of HOOK_EVENTS) {
    tx?.at(hookFilePath(dataDir, event));
    const hook = hookStep(writeHookFile(dataDir, event, command, dryRun));
    steps.push(hook.step);
    if (hook.warning) warnings.push(hook.warning);
  }

  const later: Array<[string, () => StepDone]> = [
    [pluginDir(dataDir), () => pluginStep(dataDir, staged.version, hookCommand(node, runJs, 'plugin'), dryRun)],
    [mcpConfigPath(dataDir), () => mcpStep(dataDir, node, dryRun)],
  ];
  for (const [target, step] of later) {
    tx?.at(target);
    const done = step();
    steps.push(done.step);
    if (done.warning) warnings.push(done.warning);
  }

  const officialPlugin = await detectOfficialPlugin(dataDir, options.detect);
  const officialWarning = officialPluginWarning(officialPlugin);
  if (officialWarning) warnings.push(officialWarning);

  if (!dryRun) {
    const previous = readInstallRecord(dataDir);
    const createdNow = TRACKED_PATHS.filter((p) => !existedBefore.get(p) && existsSync(path.join(dataDir, p)));
    const created = [...(previous?.created ?? []), ...createdNow];
    // The lines of everme.env that are everme's, for `uninstall --purge` to take out and no more:
    // in a file install created, every key it set (EverMe's installer may append its own later); in
    // one it found, only the keys it appended (a key the user had, rewritten in place, stays theirs).
    const envKeysAdded = [...(previous?.envKeysAdded ?? []), ...(created.includes('everme.env') ? envKeysSet : envKeysAppended)];
    tx?.at(installRecordPath(dataDir));
    // An upgrade over a record that never listed the keys of the file it created keeps saying so.
    // A file that had no final newline before install appended to it gets it back without one.
    const noFinalNewline = !created.includes('everme.env') && (previous?.envNoFinalNewline === true || envNoFinalNewline);
    writeInstallRecord(dataDir, created, envKeysAdded, created.includes('everme.env') && envKeysUnrecorded(previous), noFinalNewline);
  }
  return { version: staged.version, hookCommand: command, steps, warnings, officialPlugin };
}

/**
 * EVERME_ALLOW_INSECURE_HTTP=1 as every command reads it (settings.ts): from the environment, else
 * from everme.env, where an earlier install (or the user) set it for the hooks.
 */
function insecureHttpOptedIn(dataDir: string): boolean {
  return loadSettings(dataDir).allowInsecureHttp === true;
}

/**
 * The summary's credential, read back through loadSettings after the steps, so that it names the
 * one import and sync will use (the agent token file-first, EVERME_API_KEY environment-first), never
 * a rule of its own. A dry run wrote no key: the one --api-key gives stands where the file's would.
 */
function credentialSummary(dataDir: string, options: InstallOptions, dryRun: boolean): Pick<InstallResult, 'apiKey' | 'credentialInFile' | 'apiKeyNotUsed'> {
  const given = options.apiKey !== undefined;
  const inUse = loadSettings(dataDir, {}, options.env ?? process.env).credential;
  // The file alone, as the hooks read it (no environment).
  const credentialInFile = (given && dryRun) || loadSettings(dataDir, {}, {}).credential !== undefined;
  const fileKeyInUse = inUse === undefined ? dryRun : inUse.source === 'everme.env' && inUse.variable === 'EVERME_API_KEY';
  if (given && fileKeyInUse) return { apiKey: 'set', credentialInFile };
  if (inUse === undefined) return { apiKey: 'none', credentialInFile };
  // "A credential is configured" would read as the key just given being the one in use.
  const notUsed = given && inUse.variable === 'EVERME_AGENT_TOKEN' ? { apiKeyNotUsed: { inUse: 'EVERME_AGENT_TOKEN' as const, source: inUse.source === 'env' ? ('environment' as const) : ('everme.env' as const) } } : {};
  return { apiKey: inUse.source === 'env' ? 'environment' : 'kept', credentialInFile, ...notUsed };
}

/**
 * Wires everme into MiniMax Code: staged runtime, env file, two markdown hooks (route B), the
 * `everme-memory` local plugin (route A), the MCP server entry; then warns about a competing official plugin. Every step is idempotent; an mcp.json that
 * cannot be edited safely is skipped with a warning while the other steps still run. A step that
 * fails outright undoes the ones before it (install-transaction.ts): the data dir is left as it was.
 */
export async function runInstall(given: InstallOptions): Promise<InstallResult> {
  // A pasted key's surrounding whitespace is dropped here, once; inside it, it is refused.
  const options = given.apiKey === undefined ? given : { ...given, apiKey: normalizeApiKey(given.apiKey) };
  const apiBase = options.apiBase === undefined ? undefined : validateApiBase(options.apiBase);
  const dataDir = requireDataDir(path.resolve(options.dataDir));
  const node = options.node ?? process.execPath;
  if (!path.isAbsolute(node)) throw new EvermeError('internal', `node path is not absolute: ${node}`);
  const dryRun = options.dryRun ?? false;
  const sourceRoot = options.sourceRoot ?? findPackageRoot();

  // Before anything is staged: an everme.env that is a directory, or a link to nothing at a file
  // install writes through, would stop install half way.
  for (const file of [envFilePath(dataDir), mcpConfigPath(dataDir)]) writeTarget(file);
  assertEnvFileUsable(envFilePath(dataDir));
  const insecureBase = apiBase !== undefined && apiBaseNeedsOptIn(apiBase, insecureHttpOptedIn(dataDir));
  // The hooks would fail open at every event, capturing nothing, with the store set under a file.
  // The default, <data>/everme, is install's own: a file there fails the runtime step, undone whole.
  const stateDir = configuredStateDir(dataDir);
  if (stateDir !== undefined && path.resolve(stateDir) !== path.resolve(evermeDir(dataDir))) assertStateDirUsable(stateDir);
  const ctx: InstallContext = { dataDir, node, sourceRoot, dryRun, options, insecureBase };
  const done = dryRun ? await runSteps(ctx) : await allOrNothing(installTargets(dataDir), (tx) => runSteps(ctx, tx));

  const credential = credentialSummary(dataDir, options, dryRun);
  return {
    dataDir,
    dryRun,
    version: done.version,
    node,
    hookCommand: done.hookCommand,
    steps: done.steps,
    warnings: done.warnings,
    officialPlugin: done.officialPlugin,
    ...credential,
    next: [`everme import --since ${importSinceDate(options.now ?? new Date())}`],
  };
}

/** What each conflict left out, and what to tell the user about the rest (a dry run installed nothing). */
const CONFLICTS: Record<Exclude<InstallWarningCode, 'official_plugin_enabled'>, { what: string; hint: (dryRun: boolean) => string }> = {
  plugin_path_conflict: { what: 'the plugin', hint: () => 'Everything else is in place; only the plugin directory is in the way.' },
  hook_file_conflict: { what: 'a markdown hook', hint: () => 'Everything else is in place; only a hook file that is not everme\'s is in the way, and it is never overwritten.' },
  mcp_server_conflict: {
    what: 'the MCP server',
    hint: (dryRun) => `${dryRun ? 'Nothing was written. ' : 'The hooks and runtime are in place. '}The "${MCP_SERVER_NAME}" server in mcp.json is not everme's and is never overwritten.`,
  },
  mcp_config_invalid: {
    what: 'the MCP server',
    hint: (dryRun) =>
      dryRun
        ? 'Fix mcp.json by hand first; `everme install` would stage the runtime and hooks and leave mcp.json untouched.'
        : 'The hooks and runtime are in place; only mcp.json needs fixing.',
  },
};

/**
 * The failure install ends with after finishing the other steps, when one was skipped: typed by the
 * first conflict, its message naming every one (each also names its path).
 */
export function installOutcomeError(result: InstallResult): EvermeError | undefined {
  const conflicts = result.warnings.flatMap((w) => (w.code === 'official_plugin_enabled' ? [] : [{ ...w, code: w.code, ...CONFLICTS[w.code] }]));
  const [first] = conflicts;
  if (!first) return undefined;
  // A dry run installed nothing: it says what it would do, never that something is in place.
  const except = conflicts.map((c) => `${c.what}: ${c.message}`).join(' Also except ');
  return new EvermeError('conflict', `${result.dryRun ? 'would install' : 'installed'}, except ${except}`, {
    code: first.code,
    hint: first.hint(result.dryRun),
    detail: { path: first.path, result },
  });
}
