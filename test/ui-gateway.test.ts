import { describe, expect, it } from 'vitest';
import { runCli } from './support/cli-process.js';
import { useCliTree, type CliTree } from './support/cli-tree.js';
import { conversationFor, sessionIdFor, turnsEnvelopes, writeMessagesSession } from './support/delivery-trees.js';
import { openDatabase } from '../src/store/database.js';
import { SessionStore } from '../src/store/session-store.js';
import { rawRequest, startViewerProcess } from './support/viewer-process.js';

/**
 * `everme ui` with a gateway key, against the loopback server that implements EverMe's contract:
 * search asks the gateway (as `everme search` and `mem_search` do with a key), and the viewer says
 * what the gateway received and that forgetting cannot reach it.
 */
let tree: CliTree;
useCliTree((t) => {
  tree = t;
});

const WORD = 'narwhalgatewayword';

describe('everme ui with a gateway key', () => {
  it('searches through the gateway, says what it received, and that forgetting cannot reach it', async () => {
    writeMessagesSession(tree.dataDir, 1, turnsEnvelopes('s1', [1], { question: WORD }));
    const imported = await runCli(['import', '--since', '2026-09-01', '--data-dir', tree.dataDir, '--json'], tree.env);
    expect(imported.code, imported.stderr).toBe(0);
    expect(tree.gateway.messagesFor(conversationFor(1)).length).toBeGreaterThan(0);

    const v = await startViewerProcess(tree.dataDir, tree.env);
    const get = (p: string) => rawRequest({ port: v.port, path: `${v.prefix}${p}` });
    try {
      const home = await get('/');
      expect(home.body).toContain(`Memories are also sent to the EverMe gateway (${tree.gateway.url})`);
      expect(home.body).toContain('forgetting here cannot reach what the gateway already received');

      // The embedded store is kept beside the gateway (#28): the conversation opens from it.
      const opened = await get(`/conversation/${conversationFor(1)}`);
      expect(opened.status).toBe(200);
      expect(opened.body).toContain(WORD);
      expect(opened.body).toContain('Sent to the EverMe gateway.');

      const before = tree.gateway.requestsTo('/mem/search').length;
      const search = await get(`/search/results?q=${WORD}`);
      expect(tree.gateway.requestsTo('/mem/search').length).toBe(before + 1);
      expect(search.body).toContain(`<mark>${WORD}</mark>`);
      expect(search.body).toContain(conversationFor(1));
      // The gateway's key never reaches the page.
      expect(home.body + search.body).not.toContain(tree.gateway.token);

      const preview = await get(`/forget?c=${conversationFor(1)}`);
      expect(preview.body).toContain('yes: stays there');
      expect(preview.body).toContain('was NOT deleted');

      const done = await rawRequest({
        port: v.port,
        method: 'POST',
        path: `${v.prefix}/forget`,
        body: new URLSearchParams([['c', conversationFor(1)], ['_secret', v.secret]]).toString(),
        headers: { Origin: v.origin, 'Content-Type': 'application/x-www-form-urlencoded' },
      });
      expect(done.status).toBe(200);
      expect(done.body).toContain('was NOT deleted');
      // Nothing was asked of the gateway to delete (it has no delete), and it still holds the messages.
      expect(tree.gateway.requests.filter((r) => !['/mem/agent-memory', '/mem/search', '/mem/context'].some((e) => r.path.endsWith(e)))).toEqual([]);
      expect(tree.gateway.messagesFor(conversationFor(1)).length).toBeGreaterThan(0);
    } finally {
      await v.stop();
    }
  });

  it('search says when the gateway failed and the results are this machine’s alone, and nothing when it did not', async () => {
    writeMessagesSession(tree.dataDir, 1, turnsEnvelopes('s1', [1], { question: WORD }));
    const imported = await runCli(['import', '--since', '2026-09-01', '--data-dir', tree.dataDir, '--json'], tree.env);
    expect(imported.code, imported.stderr).toBe(0);

    const v = await startViewerProcess(tree.dataDir, tree.env);
    const get = (p: string) => rawRequest({ port: v.port, path: `${v.prefix}${p}` });
    const notice = /<div id="gateway-failure"[^>]*>[\s\S]*?<\/div>/;
    try {
      // Answered: no notice.
      const fine = await get(`/search/results?q=${WORD}`);
      expect(fine.body).toContain(`<mark>${WORD}</mark>`);
      expect(fine.body).not.toContain('gateway-failure');

      // A refused key: the store's hits, and the notice saying what failed, polite, not an alert.
      tree.gateway.failNext({ kind: 'http', status: 401, path: '/mem/search' });
      const refused = await get(`/search/results?q=${WORD}`);
      expect(refused.status).toBe(200);
      expect(refused.body).toContain(`<mark>${WORD}</mark>`);
      const said = notice.exec(refused.body)?.[0] ?? '';
      expect(said).toContain('role="status"');
      expect(said).toContain('data-failure="auth"');
      expect(said).toContain('These results are from this machine only.');
      expect(said).toContain('What failed: The EverMe gateway rejected the API key (HTTP 401');

      // A 5xx, on the whole page (not only the fragment typing fetches), and with no local match either.
      tree.gateway.failNext({ kind: 'http', status: 503, path: '/mem/search' });
      const failed = await get('/search?q=nothingmatchesthisword');
      expect(failed.body).toContain('No memories match');
      expect(notice.exec(failed.body)?.[0]).toContain('What failed: The EverMe gateway failed (HTTP 503');

      // Unreachable.
      await tree.gateway.setDown(true);
      const down = await get(`/search/results?q=${WORD}`);
      await tree.gateway.setDown(false);
      expect(down.body).toContain(`<mark>${WORD}</mark>`);
      expect(notice.exec(down.body)?.[0]).toContain('data-failure="network"');

      // Back: the notice goes with the failure.
      const again = await get(`/search/results?q=${WORD}`);
      expect(again.body).not.toContain('gateway-failure');
      for (const body of [refused.body, failed.body, down.body]) expect(body).not.toContain(tree.gateway.token);
    } finally {
      await v.stop();
    }
  });

  it('what the agent sees says when the gateway’s context could not be fetched and the block is this machine’s part alone', async () => {
    const project = '/srv/projects/gatewayless';
    writeMessagesSession(tree.dataDir, 1, turnsEnvelopes('s1', [1], { question: WORD }));
    // The hook records the session's cwd; the block lists the project's conversations from it.
    const db = openDatabase(tree.stateDir);
    try {
      new SessionStore(db).rememberWorkspace(sessionIdFor(1), project);
    } finally {
      db.close();
    }
    const imported = await runCli(['import', '--since', '2026-09-01', '--data-dir', tree.dataDir, '--json'], tree.env);
    expect(imported.code, imported.stderr).toBe(0);

    const v = await startViewerProcess(tree.dataDir, tree.env);
    const agent = () => rawRequest({ port: v.port, path: `${v.prefix}/agent?project=${encodeURIComponent(project)}` });
    try {
      const fine = await agent();
      expect(fine.body).toContain('id="agent-context"');
      expect(fine.body).not.toContain('gateway-failure');

      tree.gateway.failNext({ kind: 'http', status: 401, path: '/mem/context' });
      const refused = await agent();
      expect(refused.status).toBe(200);
      // Still the block the hook would print (the project's conversations), now said to be partial.
      expect(refused.body).toContain('id="agent-context"');
      const said = /<div id="gateway-failure"[^>]*>[\s\S]*?<\/div>/.exec(refused.body)?.[0] ?? '';
      expect(said).toContain('role="status"');
      expect(said).toContain('This is this machine’s part alone.');
      expect(said).toContain('What failed: The EverMe gateway rejected the API key (HTTP 401');
      expect(refused.body).not.toContain(tree.gateway.token);
    } finally {
      await v.stop();
    }
  });

  it('with EVERME_LOCAL_STORE=0 holds nothing on this machine: the conversation is not in the store', async () => {
    writeMessagesSession(tree.dataDir, 1, turnsEnvelopes('s1', [1], { question: WORD }));
    const env = { ...tree.env, EVERME_LOCAL_STORE: '0' };
    const imported = await runCli(['import', '--since', '2026-09-01', '--data-dir', tree.dataDir, '--json'], env);
    expect(imported.code, imported.stderr).toBe(0);
    expect(tree.gateway.messagesFor(conversationFor(1)).length).toBeGreaterThan(0);

    const v = await startViewerProcess(tree.dataDir, env);
    try {
      const opened = await rawRequest({ port: v.port, path: `${v.prefix}/conversation/${conversationFor(1)}` });
      expect(opened.status).toBe(404);
      expect(opened.body).toContain('Not in the store');
    } finally {
      await v.stop();
    }
  });

  /** Everywhere the API base is shown with `env`: status (text and JSON), the MCP log, and the viewer's home, health and a search. */
  async function whereTheBaseIsShown(env: NodeJS.ProcessEnv) {
    const status = await runCli(['status', '--data-dir', tree.dataDir], env);
    const statusJson = await runCli(['status', '--json', '--data-dir', tree.dataDir], env);
    const mcp = await runCli(['mcp', '--data-dir', tree.dataDir], env);
    const v = await startViewerProcess(tree.dataDir, env);
    try {
      const get = (p: string) => rawRequest({ port: v.port, path: `${v.prefix}${p}` });
      const [home, health, search] = [await get('/'), await get('/health'), await get(`/search/results?q=${WORD}`)];
      const texts = [status.stdout, status.stderr, statusJson.stdout, statusJson.stderr, mcp.stdout, mcp.stderr, home.body, health.body, search.body];
      return { status: status.stdout + status.stderr, statusJson: statusJson.stdout, mcpLog: mcp.stderr, home: home.body, health: health.body, search: search.body, texts };
    } finally {
      await v.stop();
    }
  }

  it('masks a password in EVERME_API_BASE wherever the base is shown: status, the MCP log, the viewer', async () => {
    const password = 'Pa55w0rdQx7Zk';
    const shown = await whereTheBaseIsShown({ ...tree.env, EVERME_API_BASE: tree.gateway.url.replace('://', `://gwuser:${password}@`) });
    const masked = tree.gateway.url.replace('://', '://gwuser:REDACTED@');
    expect(shown.status).toContain(masked);
    expect(shown.statusJson).toContain(masked);
    expect(shown.mcpLog).toContain(`serving ${masked}`);
    expect(shown.home).toContain(`Memories are also sent to the EverMe gateway (${masked})`);
    expect(shown.health).toContain(masked);
    for (const text of shown.texts) expect(text).not.toContain(password);
  });

  it('masks a password holding a raw @ and a query credential in EVERME_API_BASE: status, its JSON, the MCP log, the viewer', async () => {
    const password = 'Pa55@w0rd@Qx7Zk';
    const token = 'QtOk3nS3cr3tVal9';
    const base = `${tree.gateway.url.replace('://', `://gwuser:${password}@`)}/?region=eu&access_token=${token}`;
    const shown = await whereTheBaseIsShown({ ...tree.env, EVERME_API_BASE: base });
    const masked = `${tree.gateway.url.replace('://', '://gwuser:REDACTED@')}/?region=eu&access_token=REDACTED`;
    expect(shown.status).toContain(masked);
    expect(shown.statusJson).toContain(masked);
    expect(shown.mcpLog).toContain(`serving ${masked}`);
    expect(shown.home).toContain(`Memories are also sent to the EverMe gateway (${masked.replaceAll('&', '&amp;')})`);
    // The gateway cannot be searched through that base: what the page says of it holds no secret either.
    expect(shown.search).toContain('The EverMe gateway');
    for (const text of shown.texts) for (const secret of [password, 'w0rd@Qx7Zk', 'Qx7Zk', token]) expect(text).not.toContain(secret);
  });
});
