import open from 'open';

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

/**
 * Opens the URL in the user's browser: `$BROWSER` when set (one command, as the usual convention
 * has it), else the system's default. A failure is said, not thrown (the URL was printed anyway).
 */
export async function openBrowser(url: string, log: (line: string) => void, env: Env = process.env): Promise<void> {
  const browser = env.BROWSER?.trim();
  try {
    const child = await open(url, browser ? { app: { name: browser } } : {});
    child.on('error', () => log('everme ui: could not start a browser; open the URL above yourself.'));
    child.unref();
  } catch {
    log('everme ui: could not start a browser; open the URL above yourself.');
  }
}
