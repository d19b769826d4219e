/**
 * `everme ui` as a user runs it: the built CLI spawned as a process on a free port, its URL read
 * from the one line it prints on stdout; and raw HTTP requests to it with whatever headers a test
 * needs (fetch will not send a forged Host).
 */
import { request } from 'node:http';
import { startCli, type CliProcess, type CliResult } from './cli-process.js';

export interface ViewerProcess {
  url: string;
  origin: string;
  port: number;
  /** The launch's secret: the first segment of the printed URL's path. */
  secret: string;
  /** `/<secret>`: every path of the viewer starts with it (`${prefix}/search`). */
  prefix: string;
  /** `http://127.0.0.1:<port>/<secret>`: the origin and the prefix, for a browser's addresses. */
  root: string;
  cli: CliProcess;
  /** SIGTERM, then the process's result. */
  stop(signal?: NodeJS.Signals): Promise<CliResult>;
}

export async function startViewerProcess(dataDir: string, env: NodeJS.ProcessEnv, extra: string[] = ['--port', '0']): Promise<ViewerProcess> {
  const cli = startCli(['ui', '--no-open', '--data-dir', dataDir, ...extra], env);
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer | string) => {
      out += chunk.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        cli.child.stdout?.off('data', onData);
        resolve(out.slice(0, nl));
      }
    };
    cli.child.stdout?.on('data', onData);
    void cli.done.then((r) => reject(new Error(`everme ui exited (${r.code}) before printing its URL:\n${r.stderr}`)));
  });
  return {
    ...viewerAddress(line.startsWith('{') ? (JSON.parse(line) as { data: { url: string } }).data.url : line),
    cli,
    stop: async (signal = 'SIGTERM') => {
      if (cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill(signal);
      return cli.done;
    },
  };
}

/** What the printed URL (`http://127.0.0.1:<port>/<secret>/`) says of the viewer. */
export function viewerAddress(printed: string): Pick<ViewerProcess, 'url' | 'origin' | 'port' | 'secret' | 'prefix' | 'root'> {
  const url = new URL(printed);
  const secret = url.pathname.split('/')[1] ?? '';
  return { url: url.toString(), origin: url.origin, port: Number(url.port), secret, prefix: `/${secret}`, root: `${url.origin}/${secret}` };
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface RawRequest {
  port: number;
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

/** One request exactly as given: Host included (defaults to the viewer's own address). */
export function rawRequest(r: RawRequest): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const headers = { Host: `127.0.0.1:${r.port}`, ...r.headers };
    const req = request({ host: '127.0.0.1', port: r.port, method: r.method ?? 'GET', path: r.path, headers, setHost: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    if (r.body !== undefined) req.write(r.body);
    req.end();
  });
}
