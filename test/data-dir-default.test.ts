import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveDataDir } from '../src/config/data-dir.js';
import { cliEnv, envelopeOf, runCli } from './support/cli-process.js';
import { tempDir } from './transcript-helpers.js';

/**
 * README: every command's `--data-dir` defaults to `$MINIMAX_DATA_DIR`, then `$MAVIS_DATA_DIR`, then
 * `~/.minimax`, then `$XDG_DATA_HOME/minimax` for a new Linux install (one with neither `~/.minimax`
 * nor `~/.mavis`; `~/.local/share` when XDG_DATA_HOME is unset).
 */
const linux = process.platform === 'linux';

function home(...dirs: string[]): string {
  const h = tempDir();
  for (const d of dirs) fs.mkdirSync(path.join(h, d));
  return h;
}

describe('the default data dir', () => {
  it('takes the flag, then MINIMAX_DATA_DIR, then MAVIS_DATA_DIR, blank values skipped', () => {
    const h = home('.minimax');
    const env = { HOME: h, MINIMAX_DATA_DIR: '/m/minimax', MAVIS_DATA_DIR: '/m/mavis', XDG_DATA_HOME: '/m/xdg' };
    expect(resolveDataDir('/m/flag', env)).toBe('/m/flag');
    expect(resolveDataDir(undefined, env)).toBe('/m/minimax');
    expect(resolveDataDir(undefined, { ...env, MINIMAX_DATA_DIR: ' ' })).toBe('/m/mavis');
    expect(resolveDataDir(undefined, { ...env, MINIMAX_DATA_DIR: undefined, MAVIS_DATA_DIR: '' })).toBe(path.join(h, '.minimax'));
  });

  it.skipIf(!linux)('is ~/.minimax when it or ~/.mavis exists, else $XDG_DATA_HOME/minimax, else ~/.local/share/minimax', () => {
    const withMinimax = home('.minimax');
    expect(resolveDataDir(undefined, { HOME: withMinimax, XDG_DATA_HOME: '/x' })).toBe(path.join(withMinimax, '.minimax'));
    const withMavis = home('.mavis');
    expect(resolveDataDir(undefined, { HOME: withMavis, XDG_DATA_HOME: '/x' })).toBe(path.join(withMavis, '.minimax'));
    const fresh = home();
    expect(resolveDataDir(undefined, { HOME: fresh, XDG_DATA_HOME: '/x' })).toBe('/x/minimax');
    expect(resolveDataDir(undefined, { HOME: fresh })).toBe(path.join(fresh, '.local', 'share', 'minimax'));
  });

  it.skipIf(!linux)('is what the CLI reads: the missing-dir error names the dir the order picked', async () => {
    const missingDirOf = async (h: string, extra: Record<string, string> = {}): Promise<unknown> => {
      const r = await runCli(['import', '--since', '2026-09-01', '--json'], cliEnv(h, { EVERME_STATE_DIR: path.join(h, 'state'), ...extra }));
      expect(r.code, r.stderr).not.toBe(0);
      const error = envelopeOf(r).error as { type: string; code: string; detail?: { path?: string }; message: string };
      expect(error).toMatchObject({ type: 'io', code: 'data_dir_missing' });
      return error.message;
    };
    const fresh = home();
    const xdg = path.join(fresh, 'xdg');
    expect(await missingDirOf(fresh, { XDG_DATA_HOME: xdg })).toContain(path.join(xdg, 'minimax'));
    expect(await missingDirOf(fresh)).toContain(path.join(fresh, '.local', 'share', 'minimax'));
    expect(await missingDirOf(fresh, { XDG_DATA_HOME: xdg, MAVIS_DATA_DIR: path.join(fresh, 'mavis-data') })).toContain(path.join(fresh, 'mavis-data'));
    expect(await missingDirOf(fresh, { MAVIS_DATA_DIR: path.join(fresh, 'mavis-data'), MINIMAX_DATA_DIR: path.join(fresh, 'minimax-data') })).toContain(
      path.join(fresh, 'minimax-data'),
    );
  });
});
