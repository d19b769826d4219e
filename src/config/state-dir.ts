import path from 'node:path';
import { blockingFile } from '../core/private-dir.js';
import { EvermeError } from '../core/errors.js';
import { loadSettings } from './settings.js';

/**
 * Throws `io`/`state_dir_not_a_directory` when the state dir is a file, or lies under one (so it can
 * never be created). Not "no store yet": a reader would answer "no memories" and a writer "cannot
 * create the database" while the setting points at a file. Every command checks it once, with its
 * settings (see cli/command-settings.ts); a reader checks again when it opens the store.
 */
export function assertStateDirUsable(stateDir: string): void {
  const file = blockingFile(stateDir);
  if (file === undefined) return;
  const dir = path.resolve(stateDir);
  throw new EvermeError('io', file === dir ? `The everme state directory ${dir} is not a directory` : `The everme state directory ${dir} cannot be created: ${file} is a file`, {
    code: 'state_dir_not_a_directory',
    hint: 'Point EVERME_STATE_DIR (in the environment or <data>/everme.env) at a directory, or unset it for <data>/everme.',
    detail: { path: dir, ...(file === dir ? {} : { file }) },
  });
}

/**
 * Where the settings put the store (`EVERME_STATE_DIR`, from the environment or everme.env);
 * undefined when they cannot be read (install and uninstall answer a bad setting elsewhere, or not
 * at all: a bad API base must not stop an uninstall).
 */
export function configuredStateDir(dataDir: string): string | undefined {
  try {
    return loadSettings(dataDir).stateDir;
  } catch {
    return undefined;
  }
}
