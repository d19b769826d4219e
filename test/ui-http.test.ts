import { createServer, type Server } from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, envelopeOf, runCli } from './support/cli-process.js';
import { rawRequest, startViewerProcess, viewerAddress, type RawResponse, type ViewerProcess } from './support/viewer-process.js';
import { buildStore, conversationIdFor, type BuiltStore } from './recall-store-fixture.js';
import { tempDir } from './transcript-helpers.js';
import { defaultPort } from '../src/ui/viewer.js';

/**
 * The viewer's security rules at the HTTP level, against `everme ui` spawned as a process: the
 * secret (401, no memory content), Host (403), Origin and the carried secret for changes (403),
 * methods (405), the headers (CSP, no CORS), and the process's own edges (port, signals, errors).
 */
const WORD = 'quokkaviewerword';
const OTHER = 'wombatkeptword';
const ALPHA = '/srv/projects/alpha';
const BETA = '/srv/projects/beta';

let root: string;
let store: BuiltStore;
let env: NodeJS.ProcessEnv;
let viewer: ViewerProcess;

beforeAll(async () => {
  root = tempDir();
  store = await buildStore(
    [
      { n: 1, workspace: ALPHA, createdAtMs: Date.UTC(2026, 8, 10, 8), texts: [`Where is the ${WORD} config?`, `The ${WORD} config is in alpha.toml.`] },
      { n: 2, workspace: BETA, createdAtMs: Date.UTC(2026, 8, 11, 8), texts: [`Explain ${OTHER}.`, `${OTHER} is kept.`] },
    ],
    root,
  );
  env = cliEnv(root, { EVERME_STATE_DIR: store.stateDir });
  viewer = await startViewerProcess(store.dataDir, env);
});

afterAll(async () => {
  await viewer?.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

const get = (pathname: string, headers: Record<string, string> = {}) => rawRequest({ port: viewer.port, path: pathname, headers });
/** Under the launch's secret prefix, as every address the viewer writes is. */
const authed = (pathname: string, headers: Record<string, string> = {}) => get(`${viewer.prefix}${pathname}`, headers);

function form(fields: Array<[string, string]>): string {
  return new URLSearchParams(fields).toString();
}

function post(pathname: string, body: string, headers: Record<string, string>): Promise<RawResponse> {
  return rawRequest({ port: viewer.port, method: 'POST', path: pathname, body, headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers } });
}

/** Every path that shows memory, and the script and stylesheet. */
const PATHS = [
  '/',
  `/search?q=${WORD}`,
  `/search/results?q=${WORD}`,
  `/conversation/${conversationIdFor(1)}`,
  `/project?dir=${encodeURIComponent(ALPHA)}`,
  '/warnings',
  `/agent?project=${encodeURIComponent(ALPHA)}`,
  '/health',
  '/forgotten',
  `/forget?c=${conversationIdFor(1)}`,
  '/assets/viewer.js',
  '/assets/viewer.css',
];

describe('everme ui: starting', () => {
  it('prints one URL line on stdout: 127.0.0.1, the port it bound, a secret of 256 bits', () => {
    expect(viewer.origin).toBe(`http://127.0.0.1:${viewer.port}`);
    expect(viewer.port).toBeGreaterThan(0);
    expect(Buffer.from(viewer.secret, 'base64url')).toHaveLength(32);
  });

  it('binds 127.0.0.1 only: the port does not answer on another local address', async () => {
    const other = await rawRequest({ port: viewer.port, path: '/', headers: {} }).catch(() => undefined);
    expect(other?.status).toBe(401);
    // 127.0.0.2 is loopback too, but not the address bound.
    const { request } = await import('node:http');
    const refused = await new Promise<string>((resolve) => {
      const req = request({ host: '127.0.0.2', port: viewer.port, path: '/' }, () => resolve('answered'));
      req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
      req.end();
    });
    expect(refused).toBe('ECONNREFUSED');
  });
});

describe('everme ui: the secret', () => {
  it.each(PATHS)('%s without the secret: 401 and no memory content', async (pathname) => {
    const r = await get(pathname);
    expect(r.status).toBe(401);
    expect(r.body).not.toContain(WORD);
    expect(r.body).not.toContain(OTHER);
    expect(r.body).not.toContain(conversationIdFor(1));
    expect(r.body.length).toBeLessThan(200);
  });

  it('a wrong secret (path, header, cookie or URL query) is no secret: 401', async () => {
    const wrong = 'x'.repeat(viewer.secret.length);
    expect((await get(`/${wrong}/search?q=${WORD}`)).status).toBe(401);
    expect((await get(`/${wrong}/search?q=${WORD}`, { 'x-everme-secret': wrong })).status).toBe(401);
    // Only the path opens a read: the right secret anywhere else carries nothing.
    expect((await get(`/search?q=${WORD}`, { 'x-everme-secret': viewer.secret })).status).toBe(401);
    expect((await get(`/search?q=${WORD}`, { Cookie: `everme_ui_${viewer.port}=${viewer.secret}` })).status).toBe(401);
    expect((await get(`/?token=${viewer.secret}`)).status).toBe(401);
  });

  it('the URL carries its secret in its path, and no response sets a cookie', async () => {
    expect(viewer.url).toBe(`${viewer.origin}/${viewer.secret}/`);
    const r = await get(`${new URL(viewer.url).pathname}search?q=${WORD}`);
    expect(r.status).toBe(200);
    expect(r.body).toContain('alpha.toml');
    expect(r.headers['set-cookie']).toBeUndefined();
  });

  it.each(PATHS)('%s with the secret: served, and no cookie set', async (pathname) => {
    const r = await authed(pathname);
    expect(r.status, r.body.slice(0, 300)).toBe(200);
    expect(r.headers['set-cookie']).toBeUndefined();
  });

  it('with the secret, the search shows the stored text', async () => {
    const r = await authed(`/search/results?q=${WORD}`);
    expect(r.body).toContain(`<mark>${WORD}</mark>`);
  });
});

describe('everme ui: Host (DNS rebinding)', () => {
  it.each(['localhost', 'evil.example', '127.0.0.1', '[::1]', '127.0.0.1.nip.io'])('Host %s:<port> gets 403 even with the secret', async (name) => {
    const r = await authed(`/search/results?q=${WORD}`, { Host: `${name}:${viewer.port}` });
    expect(r.status).toBe(name === '127.0.0.1' ? 200 : 403);
    if (name !== '127.0.0.1') expect(r.body).not.toContain(WORD);
  });

  it('the right name with another port gets 403', async () => {
    const r = await authed('/', { Host: `127.0.0.1:${viewer.port + 1}` });
    expect(r.status).toBe(403);
  });
});

describe('everme ui: changes (Origin, the carried secret, methods)', () => {
  const target = () => conversationIdFor(2);
  const searchOther = async () => (await authed(`/search/results?q=${OTHER}`)).body.includes(`<mark>${OTHER}</mark>`);

  it('GET never changes anything: the forget preview leaves the conversation in place', async () => {
    const r = await authed(`/forget?c=${target()}`);
    expect(r.status).toBe(200);
    expect(r.body).toContain('2 stored messages');
    expect(await searchOther()).toBe(true);
  });

  it('a POST without any secret, or with it only in the form and not the path, gets 401', async () => {
    const r = await post('/forget', form([['c', target()]]), { Origin: viewer.origin });
    expect(r.status).toBe(401);
    const fieldOnly = await post('/forget', form([['c', target()], ['_secret', viewer.secret]]), { Origin: viewer.origin, 'x-everme-secret': viewer.secret });
    expect(fieldOnly.status).toBe(401);
    expect(await searchOther()).toBe(true);
  });

  it('a POST under the prefix but with no Origin, or a cross-origin one, gets 403', async () => {
    const body = form([['c', target()], ['_secret', viewer.secret]]);
    for (const origin of [undefined, 'http://evil.example', `http://localhost:${viewer.port}`, `http://127.0.0.1:${viewer.port + 1}`, 'null']) {
      const headers: Record<string, string> = {};
      if (origin !== undefined) headers.Origin = origin;
      const r = await post(`${viewer.prefix}/forget`, body, headers);
      expect(r.status, String(origin)).toBe(403);
    }
    expect(await searchOther()).toBe(true);
  });

  it('a same-origin POST that carries the secret only in its path gets 403', async () => {
    const r = await post(`${viewer.prefix}/forget`, form([['c', target()]]), { Origin: viewer.origin });
    expect(r.status).toBe(403);
    expect(await searchOther()).toBe(true);
  });

  it.each(['PUT', 'PATCH', 'OPTIONS', 'TRACE'])('%s gets 405 and no CORS headers', async (method) => {
    const r = await rawRequest({
      port: viewer.port,
      method,
      path: `${viewer.prefix}/forget`,
      headers: { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'POST' },
    });
    expect(r.status).toBe(405);
    expect(Object.keys(r.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
  });

  it('a same-origin POST carrying the secret forgets; the undo POST lifts the tombstone', async () => {
    const r = await post(`${viewer.prefix}/forget`, form([['c', target()], ['_secret', viewer.secret]]), { Origin: viewer.origin });
    expect(r.status, r.body.slice(0, 500)).toBe(200);
    expect(r.body).toContain('2 messages removed');
    expect(await searchOther()).toBe(false);
    const undo = await post(`${viewer.prefix}/forget/undo`, form([['c', target()]]), { 'x-everme-secret': viewer.secret, Origin: viewer.origin });
    expect(undo.status).toBe(200);
    expect(undo.body).toContain('is no longer forgotten; the next <code>everme sync</code> reads session');
    expect((await authed('/forgotten')).body).toContain('Nothing is forgotten');
    // As after `everme forget --undo`, the next sync reads the conversation again: the store is as
    // the other tests expect it, whichever order they run in.
    const synced = await runCli(['sync', '--sink', 'local', '--data-dir', store.dataDir, '--json'], env);
    expect(synced.code, synced.stderr).toBe(0);
    expect(await searchOther()).toBe(true);
  });

  it('undoing a conversation that came only from an export file says a sync cannot bring it back, and what can', async () => {
    const file = path.join(root, 'only-here.jsonl');
    const line = { conversationId: 'proj/only', conversation: { sessionId: 'mvs_onlyui1', source: 'ledger', workspaceDir: '/home/u/proj' }, key: 'k1', message: { role: 'user', timestamp: Date.UTC(2026, 8, 12), content: 'numbatexportword' } };
    fs.writeFileSync(file, `${JSON.stringify(line)}\n`);
    const loaded = await runCli(['import', '--from-export', file, '--data-dir', store.dataDir, '--json'], env);
    expect(envelopeOf(loaded).data).toMatchObject({ messages: 1 });
    const carried = { 'x-everme-secret': viewer.secret, Origin: viewer.origin };
    expect((await post(`${viewer.prefix}/forget`, form([['c', 'proj/only']]), carried)).body).toContain('1 message removed');

    const undo = await post(`${viewer.prefix}/forget/undo`, form([['c', 'proj/only']]), carried);
    expect(undo.status, undo.body.slice(0, 500)).toBe(200);
    const said = /<p id="undo-done" role="status">(.*?)<\/p>/s.exec(undo.body)?.[1] ?? '';
    // No file of that session is under the data dir: the page must not promise that a sync reads it.
    expect(said).not.toContain('reads session');
    expect(said).toContain(`<code>proj/only</code> is no longer forgotten, but no file of session <code>mvs_onlyui1</code> is under <code>${store.dataDir}</code>, so a sync cannot bring it back.`);
    expect(said).toContain('<code>everme import --from-export FILE --again</code> loads that file again');
  });
});

describe('everme ui: response headers', () => {
  it.each(['/', '/assets/viewer.js', '/nope'])('%s: strict CSP, no CORS, no framing, pages never cached', async (pathname) => {
    const r = await authed(pathname, { Origin: 'http://evil.example' });
    const csp = String(r.headers['content-security-policy']);
    for (const directive of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "form-action 'self'"]) {
      expect(csp).toContain(directive);
    }
    expect(csp).not.toContain('unsafe-inline');
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.headers['cache-control']).toBe(pathname.startsWith('/assets/') ? 'private, max-age=3600' : 'no-store');
    expect(r.headers['referrer-policy']).toBe('same-origin');
    expect(Object.keys(r.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
  });

  it('a denied request has the same headers', async () => {
    const r = await get('/');
    expect(r.status).toBe(401);
    expect(String(r.headers['content-security-policy'])).toContain("default-src 'none'");
  });
});

// Each of these spawns the CLI once or more: on a loaded two-core machine that alone takes seconds.
describe('everme ui: the process', { timeout: 90_000 }, () => {
  async function withHeldPort<T>(port: number, use: () => Promise<T>): Promise<T> {
    const holder: Server = createServer();
    await new Promise<void>((resolve, reject) => {
      holder.once('error', reject);
      holder.listen(port, '127.0.0.1', () => resolve());
    });
    try {
      return await use();
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  }

  it.each(['SIGTERM', 'SIGINT'] as const)('%s stops it cleanly: exit 0, the port is free again', async (signal) => {
    const v = await startViewerProcess(store.dataDir, env);
    const result = await v.stop(signal);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).not.toMatch(/Error|at .*\.js/);
    await withHeldPort(v.port, () => Promise.resolve(undefined));
  });

  it('without --port it takes the stable per-user port, and a free one when that is taken', async () => {
    const port = defaultPort();
    const first = await startViewerProcess(store.dataDir, env, []);
    try {
      expect(first.port).toBe(port);
      const second = await startViewerProcess(store.dataDir, env, []);
      try {
        expect(second.port).not.toBe(port);
        expect((await rawRequest({ port: second.port, path: `${second.prefix}/` })).status).toBe(200);
      } finally {
        await second.stop();
      }
    } finally {
      await first.stop();
    }
  });

  it('a --port that is taken is a conflict with a hint, exit 1', async () => {
    const port = viewer.port;
    const r = await runCli(['ui', '--no-open', '--port', String(port), '--data-dir', store.dataDir, '--json'], env);
    expect(r.code).toBe(1);
    const e = envelopeOf(r);
    expect(e.error).toMatchObject({ type: 'conflict', code: 'port_in_use' });
    expect(String(e.error?.hint)).toContain('--port 0');
  });

  it.each([['-1'], ['65536'], ['abc']])('--port %s is invalid_args, exit 2', async (value) => {
    const r = await runCli(['ui', '--no-open', '--port', value, '--data-dir', store.dataDir], env);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('--port');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('a missing data dir is the io error naming the path, exit 5', async () => {
    const missing = path.join(root, 'no-such-dir');
    const r = await runCli(['ui', '--no-open', '--port', '0', '--data-dir', missing, '--json'], env);
    expect(r.code).toBe(5);
    expect(envelopeOf(r).error).toMatchObject({ type: 'io', code: 'data_dir_missing' });
    expect(String(envelopeOf(r).error?.message)).toContain(missing);
  });

  it('--json prints exactly one envelope carrying the URL, and nothing more when stopped', async () => {
    const v = await startViewerProcess(store.dataDir, env, ['--port', '0', '--json']);
    const result = await v.stop();
    expect(result.code).toBe(0);
    const envelope = envelopeOf(result);
    expect(envelope).toMatchObject({ ok: true, data: { port: v.port } });
    expect(envelope.data?.url).toBe(`http://127.0.0.1:${v.port}/${v.secret}/`);
    expect(v.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('opens $BROWSER only where there is a display, with a private launch file: the secret is never in its arguments', async () => {
    // A fake browser ($BROWSER) records being started, and its whole argv (what `ps` shows every
    // user); with no DISPLAY nothing may start it.
    const bin = path.join(root, 'fake-bin');
    const marker = path.join(root, 'browser-ran');
    fs.mkdirSync(bin, { recursive: true });
    const browser = path.join(bin, 'fake-browser');
    fs.writeFileSync(browser, `#!/bin/sh\nprintf '%s\\n' "$0" "$@" > '${marker}'\n`, { mode: 0o755 });
    const noDisplay = { ...env, BROWSER: browser };
    // Each viewer is stopped in a finally: a failed expectation must not leave it running.
    const v = await startViewerProcess(store.dataDir, noDisplay, ['--port', '0']);
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(fs.existsSync(marker)).toBe(false);
    } finally {
      await v.stop();
    }
    // With a display (and without --no-open) the same fake browser is started.
    const opened = await startViewerProcessOpening(store.dataDir, { ...noDisplay, DISPLAY: ':99' });
    let launchFile: string;
    try {
      await waitForFile(marker);
      const argv = fs.readFileSync(marker, 'utf8').trim().split('\n');
      expect(argv[0]).toBe(browser);
      expect(argv.join(' ')).not.toContain(opened.secret);
      expect(argv).toHaveLength(2);
      const launch = new URL(argv[1]!);
      expect(launch.protocol).toBe('file:');
      launchFile = fileURLToPath(launch);
      // Readable by this user only: a 0600 file in a 0700 directory of its own.
      expect(fs.statSync(launchFile).mode & 0o777).toBe(0o600);
      expect(fs.statSync(path.dirname(launchFile)).mode & 0o777).toBe(0o700);
      // Following it lands on the viewer: it refreshes to the printed URL, the home page itself.
      const target = /http-equiv="refresh" content="0;url=([^"]+)"/.exec(fs.readFileSync(launchFile, 'utf8'))?.[1];
      expect(target).toBe(opened.url);
      const home = await rawRequest({ port: opened.port, path: new URL(target!).pathname + new URL(target!).search });
      expect(home.status).toBe(200);
      expect(home.body).toContain(ALPHA);
      expect(home.headers['set-cookie']).toBeUndefined();
    } finally {
      await opened.stop();
    }
    // Stopping the viewer removes the launch file and its directory.
    expect(fs.existsSync(path.dirname(launchFile))).toBe(false);
  });
});

/** `everme ui` without --no-open. */
async function startViewerProcessOpening(dataDir: string, e: NodeJS.ProcessEnv): Promise<ViewerProcess> {
  const { startCli } = await import('./support/cli-process.js');
  const cli = startCli(['ui', '--port', '0', '--data-dir', dataDir], e);
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    cli.child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    // Exited before printing its URL: say so rather than wait for the test's timeout.
    void cli.done.then((r) => reject(new Error(`everme ui exited (${r.code}) before printing its URL:\n${r.stderr}`)));
  });
  return { ...viewerAddress(line), cli, stop: async () => (cli.child.kill('SIGTERM'), cli.done) };
}

async function waitForFile(file: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!fs.existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`${file} never appeared`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('everme ui on the README demo data', () => {
  it('after the README import, serves the demo: its project, a marked search, a conversation', async () => {
    const { repoRoot } = await import('./support/cli.js');
    const demo = path.join(root, 'demo');
    fs.cpSync(path.join(repoRoot, 'fixtures', 'demo'), demo, { recursive: true });
    const demoEnv = cliEnv(root);
    const imported = await runCli(['import', '--since', '2026-07-01', '--data-dir', demo], demoEnv);
    expect(imported.code, imported.stderr).toBe(0);
    const v = await startViewerProcess(demo, demoEnv, ['--port', '0']);
    try {
      const home = await rawRequest({ port: v.port, path: `${v.prefix}/` });
      expect(home.status).toBe(200);
      expect(home.body).toContain('/home/demo/projects/widget');
      // Conversations are named by the titles in the demo's session index (#30), on their project's
      // page and on their own.
      const project = await rawRequest({ port: v.port, path: `${v.prefix}/project?dir=%2Fhome%2Fdemo%2Fprojects%2Fwidget` });
      expect(project.body).toContain('What src/widget.ts exports');
      expect(project.body).toContain('Retry, then clear the conversation');
      const titled = /href="(\/[^/"]+\/conversation\/[^"?]+)">What src\/widget\.ts exports</.exec(project.body);
      expect(titled).not.toBeNull();
      expect(titled![1]!.startsWith(`${v.prefix}/`)).toBe(true);
      const opened = await rawRequest({ port: v.port, path: titled![1]! });
      expect(opened.body).toContain('<h1>What src/widget.ts exports</h1>');
      const search = await rawRequest({ port: v.port, path: `${v.prefix}/search?q=widget` });
      expect(search.body).toMatch(/<mark>widget<\/mark>/i);
      const link = /href="(\/[^/"]+\/conversation\/[^"?]+)\?m=(\d+)/.exec(search.body);
      expect(link).not.toBeNull();
      expect(link![1]!.startsWith(`${v.prefix}/`)).toBe(true);
      const conversation = await rawRequest({ port: v.port, path: `${link![1]}?m=${link![2]}` });
      expect(conversation.status).toBe(200);
      expect(conversation.body).toContain(`id="m${link![2]}"`);
    } finally {
      await v.stop();
    }
  });
});
