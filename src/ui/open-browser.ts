import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import open from 'open';
import { h } from './html.js';

type Env = Record<string, string | undefined>;

/**
 * Whether to start a browser: not when told not to, and not where there is no display to show it
 * on (a Linux or BSD session without X11 or Wayland: SSH, a container, CI). macOS and Windows
 * always have one.
 */
export function shouldOpenBrowser(wanted: boolean, env: Env = process.env, platform: NodeJS.Platform = process.platform): boolean {
  if (!wanted) return false;
  if (platform === 'darwin' || platform === 'win32') return true;
  return Boolean(env.DISPLAY?.trim() || env.WAYLAND_DISPLAY?.trim());
}

export interface LaunchFile {
  /** The file's own path (a browser is given its file:// URL). */
  file: string;
  /** Removes the file and its directory (when the viewer stops). */
  remove(): void;
}

/**
 * A page that sends the browser on to `url`, readable by this user only: a fresh directory of its
 * own (mkdtemp: 0700) holding one 0600 file. A browser is started with this file's path, not with
 * the URL: a process's arguments are visible to every user of the machine (`ps`), and the URL
 * carries the launch's secret. Jupyter opens its server the same way.
 */
export function writeLaunchFile(url: string, dir: string = os.tmpdir()): LaunchFile {
  const home = mkdtempSync(path.join(dir, 'everme-ui-'));
  const file = path.join(home, 'open.html');
  const page = h`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${url}"><title>everme ui</title></head><body><p><a href="${url}">Open everme ui</a></p></body></html>`;
  writeFileSync(file, String(page), { mode: 0o600, flag: 'wx' });
  return { file, remove: () => rmSync(home, { recursive: true, force: true }) };
}

/**
 * Opens the URL in the user's browser, by way of a launch file (see `writeLaunchFile`): `$BROWSER`
 * when set (one command, as the usual convention has it), else the system's default. A failure is
 * said, not thrown (the URL was printed anyway). Returns what removes the launch file.
 */
export async function openBrowser(url: string, log: (line: string) => void, env: Env = process.env): Promise<() => void> {
  const browser = env.BROWSER?.trim();
  const failed = () => log('everme ui: could not start a browser; open the URL above yourself.');
  let launch: LaunchFile;
  try {
    launch = writeLaunchFile(url);
  } catch {
    failed();
    return () => undefined;
  }
  try {
    const child = await open(pathToFileURL(launch.file).href, browser ? { app: { name: browser } } : {});
    child.on('error', failed);
    child.unref();
  } catch {
    failed();
  }
  return () => launch.remove();
}
