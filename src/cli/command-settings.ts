import { loadSettings, type Settings } from '../config/settings.js';
import { assertStateDirUsable } from '../config/state-dir.js';

/**
 * A command's settings, as every command (and `sync` without oclif) reads them: with a state dir
 * that can be one, so a file there is the same `io` answer from every command, never "no memories
 * yet" from one and "no warnings" from another.
 */
export function commandSettings(dataDir: string): Settings {
  const settings = loadSettings(dataDir);
  assertStateDirUsable(settings.stateDir);
  return settings;
}
