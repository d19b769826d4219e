import { existsSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { EvermeError } from '../core/errors.js';
import { resolveUserPath } from './exclude.js';

type Env = Record<string, string | undefined>;

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

/**
 * Where MiniMax Code keeps its data, in the runtime's own order: the flag, MINIMAX_DATA_DIR,
 * MAVIS_DATA_DIR, ~/.minimax, and for a new Linux install that has neither ~/.minimax nor ~/.mavis,
 * $XDG_DATA_HOME/minimax.
 */
export function resolveDataDir(flag: string | undefined, env: Env = process.env): string {
  const home = nonEmpty(env.HOME) ?? homedir();
  // Typed by the user: `--data-dir=~/x` reaches us with its `~` (the shell expands it only at a word's start).
  const typed = nonEmpty(flag);
  if (typed) return resolveUserPath(typed, home);
  // A variable is taken as set: a shell already expanded the `~` of `MINIMAX_DATA_DIR=~/x`.
  const explicit = nonEmpty(env.MINIMAX_DATA_DIR) ?? nonEmpty(env.MAVIS_DATA_DIR);
  if (explicit) return path.resolve(explicit);
  const classic = path.join(home, '.minimax');
  if (existsSync(classic) || existsSync(path.join(home, '.mavis')) || process.platform !== 'linux') return classic;
  const xdg = nonEmpty(env.XDG_DATA_HOME) ?? path.join(home, '.local', 'share');
  return path.join(xdg, 'minimax');
}

/** The data dir must exist for anything that reads sessions; say which path was tried. */
export function requireDataDir(dir: string): string {
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) {
    throw new EvermeError('io', `MiniMax Code data directory not found: ${dir}`, {
      code: 'data_dir_missing',
      hint: 'Pass --data-dir, or set MINIMAX_DATA_DIR to the directory that holds v2/sessions.',
      detail: { path: dir },
    });
  }
  return dir;
}
