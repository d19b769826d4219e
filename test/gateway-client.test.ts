import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EvermeError } from '../src/core/errors.js';
import { WarningCollector } from '../src/core/warnings.js';
import type { AgentMessage } from '../src/core/agent-message.js';
import { emptyRequest, encodeRequest } from '../src/memory/encoded-request.js';
import { planRequests } from '../src/memory/task-batcher.js';
import { defaultSleep, GatewayClient, type GatewayClientOptions } from '../src/sinks/gateway/gateway-client.js';
import { waitFor } from './support/cli-process.js';
import { startFakeGateway, type FakeGateway } from './support/fake-gateway.js';

const TOKEN = 'evt_k3y9SECRETsecretSECRETsecret42';
const UA = 'everme-minimaxcode/0.1.0 (test)';
const CID = 'minimaxcode-mvs_client';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[48][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const messages: AgentMessage[] = [
  { role: 'user', timestamp: 1789355112345, content: 'list the files in the repo' },
  {
    role: 'assistant',
    timestamp: 1789355116445,
    content: '',
    turnComplete: false,
    toolCalls: [{ id: 'call_x', type: 'function', name: 'bash', arguments: '{"command":"ls"}' }],
  },
  { role: 'tool', timestamp: 1789355116695, toolCallId: 'call_x', content: 'README.md\npackage.json' },
];

let fake: FakeGateway;
let sleeps: number[];
/** Every error a test saw; none may carry the key. */
const seenErrors: EvermeError[] = [];

beforeEach(async () => {
  fake = await startFakeGateway({ token: TOKEN });
  sleeps = [];
});
afterEach(async () => {
  await fake.close();
});

function client(overrides: Partial<GatewayClientOptions> = {}): GatewayClient {
  return new GatewayClient({
    apiBase: fake.url,
    apiKey: TOKEN,
    userAgent: UA,
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
    ...overrides,
  });
}

async function failure(promise: Promise<unknown>): Promise<EvermeError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(EvermeError);
    seenErrors.push(err as EvermeError);
    return err as EvermeError;
  }
  throw new Error('expected the call to fail');
}

const post = (c: GatewayClient, flush = false): Promise<unknown> => c.postAgentMemory({ conversationId: CID, flush, messages });

describe('GatewayClient against the fake gateway', () => {
  it('sends the contract headers and body and returns the parsed acknowledgement', async () => {
    const c = client();
    await expect(post(c, true)).resolves.toEqual({
      sessionId: `sess_${CID}`,
      status: 'queued',
      messageCount: 3,
      flushed: true,
      requestId: expect.stringMatching(UUID) as unknown,
    });
    await post(c);
    const [first, second] = fake.requestsTo('/mem/agent-memory');
    expect(first!.method).toBe('POST');
    expect(first!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(first!.headers['content-type']).toBe('application/json');
    expect(first!.headers.accept).toBe('application/json');
    expect(first!.headers['user-agent']).toBe(UA);
    expect(first!.headers.requestid).toMatch(UUID);
    expect(second!.headers.requestid).toMatch(UUID);
    expect(second!.headers.requestid).not.toBe(first!.headers.requestid);
    expect(first!.body).toEqual({ conversationId: CID, flush: true, messages });
    expect(fake.messagesFor(CID)).toEqual([...messages, ...messages]);
    expect(fake.flushes).toEqual([{ conversationId: CID, messageCount: 3 }]);
  });

  it('sends every request over one kept-alive connection, still open once the time limit of the first request has passed', async () => {
    const c = client({ timeoutMs: 150 });
    await post(c);
    // Past the first request's time limit: nothing of that request may touch the connection now.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await post(c);
    await post(c);
    expect(fake.requestsTo('/mem/agent-memory')).toHaveLength(3);
    expect(fake.connections).toBe(1);
  });

  it('sends exactly the bytes the batcher planned, and the gateway accepts a request planned up to the limit', async () => {
    const big: AgentMessage[] = [];
    for (let i = 0; i < 40; i++) {
      big.push({ role: 'user', timestamp: 1789355112345 + i, content: `漢字😀 ${'x'.repeat(3000)} ${i}` });
    }
    const plan = planRequests(CID, big.map((message, i) => ({ key: `k${i}`, message })), { warnings: new WarningCollector() });
    expect(plan.length).toBeGreaterThan(1);
    const c = client();
    for (const [i, r] of plan.entries()) {
      const last = i === plan.length - 1;
      await c.postAgentMemory({ conversationId: CID, flush: last, sync: !last, messages: r.messages });
    }
    const sent = fake.requestsTo('/mem/agent-memory');
    // The plan counts `"flush":false` and `"sync":true`; the flushing request carries neither.
    expect(sent.map((s) => s.bodyBytes)).toEqual(plan.map((r, i) => (i === plan.length - 1 ? r.bytes - 1 - ',"sync":true'.length : r.bytes)));
    expect(sent.map((s) => (s.body as { sync?: boolean }).sync)).toEqual(plan.map((_r, i) => (i === plan.length - 1 ? undefined : true)));
    expect(plan[0]!.bytes).toBeGreaterThan(60_000);
    expect(fake.messagesFor(CID)).toEqual(big);
  });

  it('sends messages the plan phase encoded as the very bytes it sends for the same messages as objects', async () => {
    const unusual: AgentMessage[] = [...messages, { role: 'user', timestamp: 1789355117000, content: 'quote " backslash \\ tab \t 漢字😀 lone \ud800 nul \u0000' }];
    const c = client();
    for (const body of [
      { flush: false, sync: true },
      { flush: false, sync: false },
      { flush: true },
    ]) {
      await c.postAgentMemory({ conversationId: CID, ...body, messages: unusual });
      await c.postAgentMemory({ conversationId: CID, ...body, messages: encodeRequest({ messages: unusual, keys: [], bytes: 0 }).messagesJson });
    }
    await c.postAgentMemory({ conversationId: CID, flush: true, messages: [] });
    await c.postAgentMemory({ conversationId: CID, flush: true, messages: emptyRequest().messagesJson });
    const sent = fake.requestsTo('/mem/agent-memory').map((r) => r.bodyText);
    expect(sent).toHaveLength(8);
    for (let i = 0; i < sent.length; i += 2) expect(sent[i + 1]).toBe(sent[i]);
    expect(JSON.parse(sent[0]!)).toEqual({ conversationId: CID, flush: false, sync: true, messages: unusual });
  });

  it('a wait signal ends a Retry-After wait at once, but lets a request in flight settle', async () => {
    // In flight: the signal fires while the gateway is still answering; the answer is kept.
    const inFlight = new AbortController();
    fake.failNext({ kind: 'delay', ms: 300, path: '/mem/agent-memory' });
    const settled = client({ sleep: defaultSleep }).postAgentMemory({ conversationId: CID, flush: false, messages }, undefined, { waitSignal: inFlight.signal });
    setTimeout(() => inFlight.abort(), 50);
    await expect(settled).resolves.toMatchObject({ messageCount: 3 });

    // Waiting: a 60 s Retry-After ends when the signal fires, and no second attempt is made.
    const waiting = new AbortController();
    fake.failNext({ kind: 'rate_limit', retryAfter: '60', path: '/mem/agent-memory' });
    const started = Date.now();
    const pending = client({ sleep: defaultSleep }).postAgentMemory({ conversationId: CID, flush: false, messages }, undefined, { waitSignal: waiting.signal });
    setTimeout(() => waiting.abort(), 100);
    const error = await failure(pending);
    expect(error.type).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(2000);
    expect(fake.requestsTo('/mem/agent-memory')).toHaveLength(2);
  });

  it('refuses an API base that is no http(s) URL with invalid_args and a hint naming the default', () => {
    for (const apiBase of ['not a url', 'ftp://example.com']) {
      let thrown: unknown;
      try {
        client({ apiBase });
      } catch (err) {
        thrown = err;
      }
      expect(thrown, apiBase).toBeInstanceOf(EvermeError);
      expect(thrown).toMatchObject({ type: 'invalid_args', code: 'invalid_api_base' });
      expect((thrown as EvermeError).hint).toContain('https://api.everme.evermind.ai');
    }
  });

  it('searches and reads context', async () => {
    const c = client();
    await post(c, true);
    const found = await c.search('package.json', 10);
    expect(found.items).toHaveLength(1);
    expect(found.items[0]).toMatchObject({ content: 'README.md\npackage.json', conversationId: CID, role: 'tool' });
    expect(found.total).toBe(1);
    expect(fake.requestsTo('/mem/search')[0]!.body).toEqual({ query: 'package.json', topK: 10 });
    await c.search('x'.repeat(2000), 999);
    expect(fake.requestsTo('/mem/search')[1]!.body).toEqual({ query: 'x'.repeat(1024), topK: 50 });

    await expect(c.search('   ')).rejects.toMatchObject({ type: 'invalid_args', code: 'empty_query' });

    const ctx = await c.context({ forceRefresh: true });
    expect(ctx.profile).toEqual({ explicit_info: [], implicit_traits: [] });
    expect(ctx.context).toContain('3 messages');
    expect(fake.requestsTo('/mem/context')[0]!.body).toEqual({ forceRefresh: true });
  });

  describe('classifies failures', () => {
    const cases: { name: string; setup: (f: FakeGateway) => void; token?: string; type: string; code: string; errno?: number }[] = [
      { name: 'a wrong key (401 envelope)', setup: () => {}, token: 'evt_wrongwrongwrong', type: 'auth', code: 'unauthorized', errno: 30001 },
      { name: 'errno 30001 in an HTTP 200', setup: (f) => f.failNext({ kind: 'envelope', errno: 30001 }), type: 'auth', code: 'auth_error', errno: 30001 },
      { name: 'errno 30399 in an HTTP 200', setup: (f) => f.failNext({ kind: 'envelope', errno: 30399 }), type: 'auth', code: 'auth_error' },
      { name: 'errno 30104', setup: (f) => f.failNext({ kind: 'envelope', errno: 30104 }), type: 'rate_limit', code: 'rate_limited' },
      { name: 'errno 30005', setup: (f) => f.failNext({ kind: 'envelope', errno: 30005 }), type: 'upstream', code: 'upstream_error' },
      { name: 'errno 30400', setup: (f) => f.failNext({ kind: 'envelope', errno: 30400 }), type: 'upstream', code: 'gateway_error' },
      { name: 'a non-JSON 401', setup: (f) => f.failNext({ kind: 'non_json', status: 401 }), type: 'auth', code: 'unauthorized' },
      { name: 'a non-JSON 403', setup: (f) => f.failNext({ kind: 'non_json', status: 403 }), type: 'auth', code: 'forbidden' },
      { name: 'a non-JSON 502', setup: (f) => f.failNext({ kind: 'non_json', status: 502 }), type: 'upstream', code: 'non_json' },
      { name: 'a JSON 500', setup: (f) => f.failNext({ kind: 'http', status: 500 }), type: 'upstream', code: 'http_500', errno: 50000 },
      { name: 'a JSON 400', setup: (f) => f.failNext({ kind: 'http', status: 400 }), type: 'upstream', code: 'gateway_error', errno: 40001 },
    ];
    for (const tc of cases) {
      it(`${tc.name} → ${tc.type}, sent once, nothing stored`, async () => {
        tc.setup(fake);
        const err = await failure(post(client(tc.token ? { apiKey: tc.token } : {})));
        expect(err.type).toBe(tc.type);
        expect(err.code).toBe(tc.code);
        expect(err.detail).toMatchObject({ reachedServer: true, attempts: 1, path: '/mem/agent-memory' });
        if (tc.errno !== undefined) expect(err.detail!.errno).toBe(tc.errno);
        expect(fake.requests).toHaveLength(1);
        expect(fake.messagesFor(CID)).toEqual([]);
        expect(sleeps).toEqual([]);
      });
    }

    it('a request the gateway finds invalid (empty without flush) → upstream', async () => {
      const err = await failure(client().postAgentMemory({ conversationId: CID, flush: false, messages: [] }));
      expect(err.type).toBe('upstream');
      expect(err.detail).toMatchObject({ httpStatus: 400, errno: 40001 });
    });

    it('a success envelope whose result has the wrong shape → upstream invalid_response', async () => {
      const server = http.createServer((_req, res) => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ status: 0, result: { items: 'not a list' } }));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        const err = await failure(client({ apiBase: url }).search('anything'));
        expect(err.type).toBe('upstream');
        expect(err.code).toBe('invalid_response');
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    });
  });

  describe('rate limits', () => {
    it('waits for Retry-After in seconds, then resends', async () => {
      fake.failNext({ kind: 'rate_limit', retryAfter: '7' });
      await post(client());
      expect(sleeps).toEqual([7000]);
      expect(fake.requests).toHaveLength(2);
      expect(fake.messagesFor(CID)).toEqual(messages);
    });

    it('honours Retry-After as an HTTP date and clamps to 0–300 s', async () => {
      fake.failNext(
        { kind: 'rate_limit', retryAfter: new Date(Date.now() + 20_000).toUTCString() },
        { kind: 'rate_limit', retryAfter: '100000' },
        { kind: 'rate_limit', retryAfter: new Date(Date.now() - 60_000).toUTCString() },
      );
      await post(client());
      expect(sleeps).toHaveLength(3);
      expect(sleeps[0]).toBeGreaterThanOrEqual(18_000);
      expect(sleeps[0]).toBeLessThanOrEqual(20_000);
      expect(sleeps.slice(1)).toEqual([300_000, 0]);
      expect(fake.messagesFor(CID)).toEqual(messages);
    });

    it('waits for the Retry-After of an errno 30104 in an HTTP 200 as for a 429, then resends', async () => {
      fake.failNext({ kind: 'envelope', errno: 30104, error: 'rate_limited', retryAfter: '3' });
      await post(client());
      expect(sleeps).toEqual([3000]);
      expect(fake.requests).toHaveLength(2);
      expect(fake.messagesFor(CID)).toEqual(messages);
    });

    it('surfaces rate_limit with retryAfterMs once the retries are used up', async () => {
      fake.failNext(...Array.from({ length: 3 }, () => ({ kind: 'rate_limit' as const, retryAfter: '2' })));
      const err = await failure(post(client({ maxRateLimitRetries: 2 })));
      expect(err.type).toBe('rate_limit');
      expect(err.detail).toMatchObject({ retryAfterMs: 2000, attempts: 3, reachedServer: true, httpStatus: 429 });
      expect(sleeps).toEqual([2000, 2000]);
      expect(fake.requests).toHaveLength(3);
      expect(fake.messagesFor(CID)).toEqual([]);
    });
  });

  describe('only a request that never reached the server is resent', () => {
    it('retries a refused connection twice, then fails as network with reachedServer false', async () => {
      const port = fake.port;
      await fake.close();
      const err = await failure(post(client({ apiBase: `http://127.0.0.1:${port}` })));
      expect(err.type).toBe('network');
      expect(err.code).toBe('connection_refused');
      expect(err.detail).toMatchObject({ reachedServer: false, attempts: 3 });
      expect(sleeps).toEqual([100, 300]);
    });

    it('delivers once when the gateway comes back between attempts', async () => {
      await fake.setDown(true);
      const c = client({
        sleep: async (ms) => {
          sleeps.push(ms);
          await fake.setDown(false);
        },
      });
      await expect(post(c)).resolves.toMatchObject({ messageCount: 3 });
      expect(sleeps).toEqual([100]);
      expect(fake.requests).toHaveLength(1);
      expect(fake.messagesFor(CID)).toEqual(messages);
    });

    it('does not resend after a connection reset', async () => {
      fake.failNext({ kind: 'reset' });
      const err = await failure(post(client()));
      expect(err.type).toBe('network');
      expect(err.detail).toMatchObject({ reachedServer: true, attempts: 1 });
      expect(fake.requests).toHaveLength(1);
    });

    it('does not resend when the answer was lost after the gateway stored the messages', async () => {
      fake.failNext({ kind: 'reset', afterStore: true });
      const err = await failure(post(client()));
      expect(err.type).toBe('network');
      expect(err.detail!.reachedServer).toBe(true);
      expect(fake.requests).toHaveLength(1);
      expect(fake.messagesFor(CID)).toEqual(messages);
    });

    it('times out a hanging gateway as network/timeout without resending', async () => {
      fake.failNext({ kind: 'hang' });
      const started = Date.now();
      const err = await failure(post(client({ timeoutMs: 300 })));
      expect(Date.now() - started).toBeLessThan(5000);
      expect(err.type).toBe('network');
      expect(err.code).toBe('timeout');
      expect(err.detail).toMatchObject({ reachedServer: true, attempts: 1 });
      expect(fake.requests).toHaveLength(1);
    });

    it('gives up on a 2xx whose body stalls at the time limit, and counts the write as acknowledged, sent once', async () => {
      fake.failNext({ kind: 'store_then', answer: 'stall_mid_body' });
      const started = Date.now();
      await expect(post(client({ timeoutMs: 300 }))).resolves.toMatchObject({ responseInvalid: 'unreadable_body' });
      expect(Date.now() - started).toBeLessThan(5000);
      expect(fake.messagesFor(CID)).toEqual(messages);
      expect(fake.requests).toHaveLength(1);
    });
  });

  it('is served by a fake gateway that rejects what the real one would', async () => {
    const c = client();
    const user = (i: number): AgentMessage => ({ role: 'user', timestamp: i, content: 'u' });
    const bad: unknown[][] = [
      Array.from({ length: 501 }, (_, i) => user(i)),
      [{ role: 'tool', timestamp: 1, content: 'no id' }],
      [{ role: 'assistant', timestamp: 1, turnComplete: false, toolCalls: [{ id: 'c', type: 'function', name: 'bash', arguments: {} }] }],
      [{ role: 'user', timestamp: 1.5, content: 'fractional time' }],
      [{ role: 'user', timestamp: 1, content: 'x'.repeat(70_000) }],
    ];
    for (const body of bad) {
      const err = await failure(c.postAgentMemory({ conversationId: CID, flush: true, messages: body as AgentMessage[] }));
      expect(err.detail).toMatchObject({ httpStatus: 400, errno: 40001 });
    }
    await expect(c.postAgentMemory({ conversationId: CID, flush: true, messages: [] })).resolves.toMatchObject({ flushed: true });
    expect(fake.messagesFor(CID)).toEqual([]);
    expect(fake.flushes).toHaveLength(1);
  });

  it('stops reading a response over 8 MiB: a search fails as upstream, a write counts as acknowledged', async () => {
    fake.failNext({ kind: 'oversized_response' });
    const err = await failure(client().search('anything'));
    expect(err.type).toBe('upstream');
    expect(err.code).toBe('response_too_large');
    expect(fake.requests).toHaveLength(1);

    fake.failNext({ kind: 'oversized_response' });
    await expect(post(client())).resolves.toMatchObject({ responseInvalid: 'too_large', requestId: expect.stringMatching(UUID) as unknown });
    expect(fake.requests).toHaveLength(2);
  });

  it('a non-JSON 200 fails a search but acknowledges a write (the server may have stored it)', async () => {
    fake.failNext({ kind: 'non_json', status: 200 });
    expect((await failure(client().search('anything'))).code).toBe('non_json');
    fake.failNext({ kind: 'non_json', status: 200 });
    await expect(post(client())).resolves.toMatchObject({ responseInvalid: 'not_json' });
    expect(fake.requests).toHaveLength(2);
    expect(sleeps).toEqual([]);
  });

  it('hints that the next sync resends only for a failed write; a failed search or context says to try again', async () => {
    fake.failNext({ kind: 'http', status: 500 });
    expect((await failure(post(client()))).hint).toMatch(/next sync resends/);
    for (const read of [() => client().search('anything'), () => client().context()]) {
      fake.failNext({ kind: 'http', status: 500 });
      const err = await failure(read());
      expect(err.type).toBe('upstream');
      expect(err.hint).toBe('The EverMe gateway failed; try again in a moment.');
    }
    fake.failNext({ kind: 'envelope', errno: 30104 });
    expect((await failure(client().search('anything'))).hint).toBe('The EverMe gateway is rate limiting; try again in a moment.');
  });

  it('derives requestId from the content: equal batches share it, any difference changes it', async () => {
    const { contentRequestId } = await import('../src/sinks/gateway/gateway-client.js');
    const id = contentRequestId(CID, ['a', 'b'], false);
    expect(id).toMatch(UUID);
    expect(contentRequestId(CID, ['a', 'b'], false)).toBe(id);
    expect(contentRequestId(CID, ['a', 'b'], true)).not.toBe(id);
    expect(contentRequestId(CID, ['ab'], false)).not.toBe(id);
    expect(contentRequestId(`${CID}x`, ['a', 'b'], false)).not.toBe(id);
    await client().postAgentMemory({ conversationId: CID, flush: false, messages }, undefined, { requestId: id });
    expect(fake.requests[0]!.headers.requestid).toBe(id);
  });

  it('reports a caller abort as cancelled', async () => {
    fake.failNext({ kind: 'hang' });
    const controller = new AbortController();
    const c = client();
    const aborted = failure(c.postAgentMemory({ conversationId: CID, flush: false, messages }, controller.signal));
    // Aborted once the gateway holds the request: a 100 ms timer fired first when this process
    // stalled (a loaded machine), before the request was sent, and nothing had reached the server.
    await waitFor(() => fake.requests.length === 1, 10_000, 'the request at the gateway');
    controller.abort();
    const err = await aborted;
    expect(err.type).toBe('cancelled');
    expect(err.detail!.reachedServer).toBe(true);
    expect(fake.requests).toHaveLength(1);

    const before = fake.requests.length;
    const early = await failure(c.search('x', 5, AbortSignal.abort()));
    expect(early.type).toBe('cancelled');
    expect(early.detail!.reachedServer).toBe(false);
    expect(fake.requests).toHaveLength(before);
  });

  it('scrubs the key even when the server echoes it', async () => {
    fake.failNext({ kind: 'envelope', errno: 40001, error: TOKEN });
    const err = await failure(post(client()));
    expect(err.message).not.toContain(TOKEN);
  });

  it('never puts the API key into any error it raised', async () => {
    // Its own failure of every kind, so that the check holds when this test runs alone; the
    // errors the tests above saw (when they ran) are checked as well.
    const faults: Parameters<FakeGateway['failNext']>[0][] = [
      { kind: 'envelope', errno: 40001, error: TOKEN },
      { kind: 'envelope', errno: 30399, error: `bad key ${TOKEN}` },
      { kind: 'envelope', errno: 30104 },
      { kind: 'non_json', status: 401 },
      { kind: 'non_json', status: 403 },
      { kind: 'non_json', status: 502 },
      { kind: 'http', status: 500 },
      { kind: 'http', status: 400 },
    ];
    const own: EvermeError[] = [];
    for (const fault of faults) {
      fake.failNext(fault);
      own.push(await failure(post(client())));
    }
    // An oversized 2xx acknowledges a write (#11), so the oversized answer fails a read instead.
    fake.failNext({ kind: 'oversized_response' });
    own.push(await failure(client().search('x')));
    const refused = await failure(post(client({ apiBase: 'http://127.0.0.1:1' })));
    own.push(refused, await failure(client().search('x', 5, AbortSignal.abort())));
    expect(own).toHaveLength(faults.length + 3);
    for (const err of [...own, ...seenErrors]) {
      const shown = JSON.stringify({ message: err.message, code: err.code, hint: err.hint, detail: err.detail });
      expect(shown).not.toContain(TOKEN);
      expect(shown).not.toContain('SECRETsecret');
    }
  });
});
