import fs from 'node:fs';
import path from 'node:path';
import { EvermeError } from '../core/errors.js';

/**
 * Throws `io`/`state_dir_not_a_directory` when the state dir is a file, or lies under one (so it can
 * never be created). Not "no store yet": a reader would answer "no memories" and a writer "cannot
 * create the database" while the setting points at a file. Every command checks it once, with its
 * settings (see cli/command-settings.ts); a reader checks again when it opens the store.
 */
export function assertStateDirUsable(stateDir: string): void {
  const dir = path.resolve(stateDir);
  for (let at = dir; ; at = path.dirname(at)) {
    const stat = statOrNone(at);
    if (stat?.isDirectory()) return;
    if (stat) {
      throw new EvermeError('io', at === dir ? `The everme state directory ${dir} is not a directory` : `The everme state directory ${dir} cannot be created: ${at} is a file`, {
        code: 'state_dir_not_a_directory',
        hint: 'Point EVERME_STATE_DIR (in the environment or <data>/everme.env) at a directory, or unset it for <data>/everme.',
        detail: { path: dir, ...(at === dir ? {} : { file: at }) },
      });
    }
    if (path.dirname(at) === at) return;
  }
}

/** None for a path that does not exist, or lies under a file (ENOTDIR): the walk goes up to what does. */
function statOrNone(at: string): fs.Stats | undefined {
  try {
    return fs.statSync(at);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw err;
  }
}
