import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import os from 'node:os';
import { getRequestListener } from '@hono/node-server';
import type { Settings } from '../config/settings.js';
import { EvermeError } from '../core/errors.js';
import { createViewerApp } from './app.js';
import { openBrowser, shouldOpenBrowser } from './open-browser.js';
import { viewerPaths } from './paths.js';
import { ViewerData } from './viewer-data.js';

/** The only address the viewer binds. */
export const VIEWER_HOST = '127.0.0.1';
/** Stable per-user ports live in [BASE, BASE + SPAN). */
const DEFAULT_PORT_BASE = 47_000;
const DEFAULT_PORT_SPAN = 1000;

/**
 * The same port for a user every time (a bookmark of the origin keeps working; two users of one
 * machine get different ones): from the uid, or where there is none (Windows) from the user name.
 */
export function defaultPort(user: { uid: number; username: string } = os.userInfo()): number {
  let n = user.uid;
  if (!(n >= 0)) {
    n = 0;
    for (const ch of user.username) n = (n * 31 + ch.charCodeAt(0)) >>> 0;
  }
  return DEFAULT_PORT_BASE + (n % DEFAULT_PORT_SPAN);
}

export interface ViewerOptions {
  settings: Settings;
  /** A port to bind (0: any free one); undefined: the stable per-user port, else any free one. */
  port?: number;
  now?: () => number;
}

export interface RunningViewer {
  /** The address to open: its path carries the per-launch secret (`/<secret>/`). */
  url: string;
  origin: string;
  port: number;
  close(): Promise<void>;
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => {
      server.off('listening', onListening);
      reject(err);
    };
    const onListening = () => {
      server.off('error', onError);
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : port);
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, VIEWER_HOST);
  });
}

function isAddressInUse(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === 'EADDRINUSE';
}

/** Binds 127.0.0.1, then serves the viewer there; `close()` stops it and lets go of the store. */
export async function startViewer(opts: ViewerOptions): Promise<RunningViewer> {
  const server = createServer();
  let port: number;
  try {
    if (opts.port !== undefined) port = await listen(server, opts.port);
    else {
      try {
        port = await listen(server, defaultPort());
      } catch (err) {
        if (!isAddressInUse(err)) throw err;
        port = await listen(server, 0);
      }
    }
  } catch (err) {
    if (isAddressInUse(err)) {
      throw new EvermeError('conflict', `Port ${opts.port ?? ''} on ${VIEWER_HOST} is already in use`, {
        code: 'port_in_use',
        hint: 'Pass another --port, or --port 0 for any free one.',
      });
    }
    throw new EvermeError('io', `Could not listen on ${VIEWER_HOST}: ${(err as Error).message}`, { cause: err });
  }
  const secret = randomBytes(32).toString('base64url');
  const data = new ViewerData(opts.settings);
  data.warm();
  const app = createViewerApp({ data, secret, port, ...(opts.now ? { now: opts.now } : {}) });
  const listener = getRequestListener(app.fetch);
  // The listener answers every request itself (errors included); nothing awaits it.
  server.on('request', (req, res) => void listener(req, res));
  const origin = `http://${VIEWER_HOST}:${port}`;
  return {
    url: `${origin}${viewerPaths(secret).to('/')}`,
    origin,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          data.close();
          resolve();
        });
        // Browsers keep connections open; they must not hold the process.
        server.closeAllConnections();
      }),
  };
}

export interface ServeOptions extends ViewerOptions {
  /** Open a browser at the URL (when there is a display). */
  open: boolean;
  signal: AbortSignal;
  /** Called once, as soon as the viewer serves: the command prints the URL (or its envelope). */
  announce: (served: { url: string; port: number }) => void;
  log: (line: string) => void;
}

/** `everme ui`: serves the viewer until the signal aborts (Ctrl-C, SIGTERM), then stops it cleanly. */
export async function serveViewer(opts: ServeOptions): Promise<{ url: string; port: number }> {
  const viewer = await startViewer(opts);
  let removeLaunchFile: (() => void) | undefined;
  try {
    opts.announce({ url: viewer.url, port: viewer.port });
    opts.log(`everme ui: serving ${opts.settings.stateDir} at ${viewer.origin} (Ctrl-C to stop)`);
    if (shouldOpenBrowser(opts.open)) removeLaunchFile = await openBrowser(viewer.url, opts.log);
    await new Promise<void>((resolve) => {
      if (opts.signal.aborted) resolve();
      else opts.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  } finally {
    removeLaunchFile?.();
    await viewer.close();
  }
  return { url: viewer.url, port: viewer.port };
}
