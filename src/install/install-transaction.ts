import path from 'node:path';
import { envFilePath } from '../config/settings.js';
import { EvermeError, toEvermeError } from '../core/errors.js';
import { evermeDir, installRecordPath } from './install-record.js';
import { PLUGIN_DIRS, pluginHooksPath, pluginManifestPath } from './local-plugin.js';
import { HOOK_EVENTS, hookFilePath, hooksDir } from './markdown-hooks.js';
import { mcpBackupPath, mcpConfigPath } from './mcp-config.js';
import { restorePaths, snapshotPaths } from './path-snapshot.js';
import { commitRuntime, revertRuntime, type RuntimeSwap } from './staging.js';

/**
 * Every path `everme install` may create or change in the data dir, besides the runtime (which is
 * swapped, not snapshotted). A writer that starts touching a new path must add it here, or a failure
 * would leave it behind: test/install-rollback.test.ts checks this list against a real install.
 */
export function installTargets(dataDir: string): string[] {
  const mcpFile = mcpConfigPath(dataDir);
  return [
    evermeDir(dataDir),
    installRecordPath(dataDir),
    envFilePath(dataDir),
    hooksDir(dataDir),
    ...HOOK_EVENTS.map((event) => hookFilePath(dataDir, event)),
    ...PLUGIN_DIRS.map((rel) => path.join(dataDir, rel)),
    pluginManifestPath(dataDir),
    pluginHooksPath(dataDir),
    mcpFile,
    mcpBackupPath(mcpFile),
  ];
}

export interface InstallTransaction {
  /** The path the next writes go to: a failure there is reported naming it. */
  at(target: string): void;
  /** The runtime swap staging made: kept until the end, then committed or reverted with the rest. */
  runtimeSwapped(swap: RuntimeSwap | undefined): void;
}

/**
 * The original failure, in its type and code; the hint says what became of the data dir. A file
 * system error names the path it failed on (Node's read errors name none, its writes name a temp
 * file), so the path of the step is put in front when the message lacks it.
 */
function afterRollback(err: unknown, at: string | undefined, notRestored: string[]): EvermeError {
  const original = toEvermeError(err);
  const named = err instanceof EvermeError || at === undefined || original.message.includes(at) ? original.message : `${at}: ${original.message}`;
  const undone =
    notRestored.length === 0
      ? 'Nothing was changed: install put back everything it had written before the failure.'
      : `Install could not put back ${notRestored.join(', ')}; everything else is as it was before.`;
  return new EvermeError(original.type, named, {
    code: original.code,
    hint: original.hint === undefined ? undone : `${original.hint} ${undone}`,
    detail: { ...(at === undefined ? {} : { path: at }), ...original.detail, ...(notRestored.length ? { notRestored } : {}) },
    cause: err,
  });
}

/**
 * Runs `body` (install's writes) all-or-nothing from the user's view: every target path's state is
 * read first, and on any failure the runtime swap is reverted and every path put back as it was
 * (files rewritten with their old bytes and mode, what this run created removed, anything foreign
 * left alone), then the failure is thrown. A dry run writes nothing, so it has nothing to undo.
 */
export async function allOrNothing<T>(targets: readonly string[], body: (tx: InstallTransaction) => Promise<T>): Promise<T> {
  const snapshots = snapshotPaths(targets);
  // A holder, not a `let`: TypeScript does not see the callback assign it.
  const held: { swap?: RuntimeSwap; at?: string } = {};
  let result: T;
  try {
    result = await body({ at: (target) => (held.at = target), runtimeSwapped: (swap) => (held.swap = swap) });
  } catch (err) {
    const { swap } = held;
    const notRestored: string[] = [];
    if (swap) {
      try {
        revertRuntime(swap);
      } catch {
        notRestored.push(swap.runtimeDir);
      }
    }
    notRestored.push(...restorePaths(snapshots));
    throw afterRollback(err, held.at, notRestored);
  }
  // Install succeeded: the previous runtime goes. A copy that cannot be removed is a leftover the
  // next install sweeps away (`.runtime-old-*`), never a reason to fail what is done.
  if (held.swap) {
    try {
      commitRuntime(held.swap);
    } catch {
      // see above
    }
  }
  return result;
}
