import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { EvermeError } from '../core/errors.js';
import { requireDataDir } from '../config/data-dir.js';
import { envFilePath } from '../config/settings.js';
import { isHeaderOnly } from './env-file-writer.js';
import { evermeDir, installRecordPath, readInstallRecord, runtimeDir } from './install-record.js';
import { HOOK_EVENTS, hookFilePath, hooksDir } from './markdown-hooks.js';
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
}

function isEmptyDir(dir: string): boolean {
  try {
    return readdirSync(dir).length === 0;
  } catch {
    return false;
  }
}

/**
 * Removes what `everme install` added and nothing else: the two hook files, the local plugin, the MCP entry (the
 * file itself when install created it and nothing else is left), the staged runtime, and the
 * directories install created once they are empty. `purge` also deletes the store and the env file.
 */
export function runUninstall(options: UninstallOptions): UninstallResult {
  const dataDir = requireDataDir(path.resolve(options.dataDir));
  const purge = options.purge ?? false;
  const dryRun = options.dryRun ?? false;
  const created = new Set(readInstallRecord(dataDir)?.created ?? []);
  const steps: UninstallStep[] = [];
  const warnings: UninstallWarning[] = [];
  const remove = (target: string): void => {
    if (!dryRun) rmSync(target, { recursive: true, force: true });
  };

  for (const event of HOOK_EVENTS) {
    const file = hookFilePath(dataDir, event);
    const present = existsSync(file);
    if (present) remove(file);
    steps.push({ step: 'hook', path: file, status: present ? 'removed' : 'absent', note: `${event} hook` });
  }
  const hooks = hooksDir(dataDir);
  if (created.has('hooks') && existsSync(hooks)) {
    const empty = dryRun
      ? readdirSync(hooks).every((name) => HOOK_EVENTS.some((event) => hookFilePath(dataDir, event) === path.join(hooks, name)))
      : isEmptyDir(hooks);
    if (empty) {
      if (!dryRun) rmdirSync(hooks);
      steps.push({ step: 'hooks-dir', path: hooks, status: 'removed' });
    } else {
      steps.push({ step: 'hooks-dir', path: hooks, status: 'kept', note: 'holds other hooks' });
    }
  }

  const plugin = removeLocalPlugin(dataDir, created, dryRun);
  steps.push({ step: 'plugin', path: plugin.path, status: plugin.status, ...('note' in plugin ? { note: plugin.note } : {}) });

  const mcpFile = mcpConfigPath(dataDir);
  const mcp = removeMcpServer(mcpFile, {
    fileCreatedByInstall: created.has('mcp.json'),
    backupCreatedByInstall: created.has('mcp.json.everme-backup'),
    dryRun,
  });
  if (mcp.status === 'skipped') {
    steps.push({ step: 'mcp', path: mcpFile, status: 'skipped', note: mcp.reason });
    warnings.push({
      code: 'mcp_config_invalid',
      path: mcpFile,
      message: `${mcpFile} was left untouched: ${mcp.reason}. Remove the "${MCP_SERVER_NAME}" entry by hand once it is fixed.`,
    });
  } else if (mcp.status === 'absent') {
    steps.push({ step: 'mcp', path: mcpFile, status: 'absent' });
  } else if (mcp.status === 'file_removed') {
    steps.push({ step: 'mcp', path: mcpFile, status: 'removed', note: 'install had created it; nothing else was in it' });
  } else {
    steps.push({
      step: 'mcp',
      path: mcpFile,
      status: mcp.restoredFromBackup ? 'restored' : 'removed',
      note: mcp.restoredFromBackup ? `server "${MCP_SERVER_NAME}" removed, file restored from its backup` : `server "${MCP_SERVER_NAME}" removed`,
    });
  }

  const runtime = runtimeDir(dataDir);
  const runtimePresent = existsSync(runtime);
  if (runtimePresent) remove(runtime);
  const state = evermeDir(dataDir);
  if (!dryRun && existsSync(state)) {
    for (const entry of readdirSync(state)) if (/^\.runtime-(staging|old)-/.test(entry)) remove(path.join(state, entry));
  }
  steps.push({ step: 'runtime', path: runtime, status: runtimePresent ? 'removed' : 'absent' });

  const envFile = envFilePath(dataDir);
  if (existsSync(envFile)) {
    const headerOnly = created.has('everme.env') && isHeaderOnly(readFileSync(envFile, 'utf8'));
    if (purge || headerOnly) {
      remove(envFile);
      steps.push({ step: 'env', path: envFile, status: 'removed' });
    } else {
      steps.push({ step: 'env', path: envFile, status: 'kept', note: 'holds your settings; `everme uninstall --purge` removes it' });
    }
  } else {
    steps.push({ step: 'env', path: envFile, status: 'absent' });
  }

  if (purge) {
    const present = existsSync(state);
    if (present) remove(state);
    steps.push({ step: 'store', path: state, status: present ? 'removed' : 'absent', note: 'memory store and sync state' });
  } else {
    if (!dryRun) rmSync(installRecordPath(dataDir), { force: true });
    if (existsSync(state)) {
      const leftovers = dryRun
        ? readdirSync(state).filter((name) => name !== 'runtime' && name !== 'install.json')
        : readdirSync(state);
      if (leftovers.length === 0) {
        if (!dryRun) rmdirSync(state);
        steps.push({ step: 'store', path: state, status: 'removed', note: 'it was empty' });
      } else {
        steps.push({ step: 'store', path: state, status: 'kept', note: 'memory store and sync state; `everme uninstall --purge` removes it' });
      }
    }
  }

  return { dataDir, purge, dryRun, steps, warnings };
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
