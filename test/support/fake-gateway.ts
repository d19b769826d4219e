/**
 * A real HTTP server on 127.0.0.1 that speaks the EverMe gateway contract, for tests of everything
 * that talks to the gateway. It validates like the real server, stores accepted messages per
 * conversation, and can be told to fail the next request in each of the ways the network can.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import type { AgentMessage } from '../../src/core/agent-message.js';

export const FAKE_GATEWAY_TOKEN = 'evt_fake0123456789abcdefTOKEN';
const MAX_BODY_BYTES = 64 * 1024;
/** Read at most this much of a request before giving up on it, so a runaway client cannot flood the test. */
const READ_LIMIT_BYTES = 16 * 1024 * 1024;

export type Fault = (
  | { kind: 'http'; status: number }
  | { kind: 'rate_limit'; retryAfter?: string }
  | { kind: 'reset'; afterStore?: boolean }
  | { kind: 'hang' }
  /** An HTTP 200 whose envelope carries `errno` (and a Retry-After header, when given). */
  | { kind: 'envelope'; errno: number; error?: string; retryAfter?: string }
  | { kind: 'non_json'; status: number }
  | { kind: 'delay'; ms: number }
  | { kind: 'oversized_response'; bytes?: number }
  /**
   * Stores the write (when valid), then answers 2xx in a way no client can parse: a body cut off
   * (`bad_json`), an envelope of the wrong types, a body over the client's 8 MiB cap, a reset
   * after the status line and part of the body, or part of the body and then nothing
   * (`stall_mid_body`). The ambiguous answers that must not cause a resend.
   */
  | { kind: 'store_then'; answer: 'bad_json' | 'wrong_types' | 'oversized' | 'reset_mid_body' | 'stall_mid_body' }
  /** Holds the request until `until` settles, then serves it normally. */
  | { kind: 'hold'; until: Promise<void> }
) & {
  /** Only a request to this endpoint (e.g. `/mem/agent-memory`) takes the fault; any request when unset. */
  path?: string;
};

export interface RecordedRequest {
  method: string;
  /** Path as requested, e.g. `/api/v1/mem/agent-memory`. */
  path: string;
  headers: http.IncomingHttpHeaders;
  /** Parsed JSON body, or undefined when it was not JSON. */
  body: unknown;
  bodyBytes: number;
  /** The body as it arrived (UTF-8), up to the read limit. */
  bodyText: string;
  /** The fault this request took, if any. */
  fault?: Fault['kind'];
}

export interface FlushRecord {
  conversationId: string;
  /** How many messages the conversation held when the flush arrived. */
  messageCount: number;
}

export interface FakeGateway {
  /** Base URL without `/api/v1`, as EVERME_API_BASE takes it. */
  readonly url: string;
  readonly port: number;
  readonly token: string;
  readonly requests: RecordedRequest[];
  readonly conversations: Map<string, AgentMessage[]>;
  readonly flushes: FlushRecord[];
  /** How many connections clients opened since the gateway started. */
  readonly connections: number;
  messagesFor(conversationId: string): AgentMessage[];
  /** Requests to one endpoint (`/mem/agent-memory`, `/mem/search`, `/mem/context`). */
  requestsTo(endpoint: string): RecordedRequest[];
  failNext(...faults: Fault[]): void;
  /** What `/mem/context` answers from now on (until `reset`), instead of its count of stored messages. */
  setContext(result: { profile?: { explicit_info: unknown[]; implicit_traits: unknown[] }; context?: string }): void;
  /** Refuse connections (listener closed, port kept for `setDown(false)`). */
  setDown(down: boolean): Promise<void>;
  stop(): Promise<void>;
  restart(): Promise<void>;
  /** Forget stored messages, flushes, recorded requests and queued faults. */
  reset(): void;
  close(): Promise<void>;
}

const toolCallSchema = z.object({
  id: z.string().min(1),
  type: z.literal('function'),
  name: z.string().min(1),
  arguments: z.string(),
});

const messageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.literal('user'), timestamp: z.number().int(), content: z.string() }),
  z.object({
    role: z.literal('assistant'),
    timestamp: z.number().int(),
    content: z.string().optional(),
    toolCalls: z.array(toolCallSchema).optional(),
    turnComplete: z.boolean().optional(),
  }),
  z.object({ role: z.literal('tool'), timestamp: z.number().int(), toolCallId: z.string().min(1), content: z.string() }),
]);

const agentMemoryBodySchema = z
  .object({
    conversationId: z.string().min(1),
    flush: z.boolean(),
    sync: z.boolean().optional(),
    messages: z.array(messageSchema).max(500),
  })
  .refine((b) => b.messages.length > 0 || b.flush, { message: 'messages may be empty only with flush' });

const searchBodySchema = z.object({
  query: z.string().min(1).max(1024),
  topK: z.number().int().min(1).max(50).optional(),
});

const contextBodySchema = z.object({ forceRefresh: z.boolean().optional() });

const ERRNO_UNAUTHORIZED = 30001;
const ERRNO_INVALID_REQUEST = 40001;
const ERRNO_NOT_FOUND = 40004;
const ERRNO_INTERNAL = 50000;

/** A 200 whose JSON body is `bytes` long, written with back-pressure. */
async function writeOversized(res: http.ServerResponse, bytes: number): Promise<void> {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  res.write('{"status":0,"result":{},"pad":"');
  for (let sent = 0; sent < bytes && !res.destroyed; sent += chunk.length) {
    if (!res.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    }
  }
  res.end('"}');
}

export async function startFakeGateway(opts: { token?: string } = {}): Promise<FakeGateway> {
  const token = opts.token ?? FAKE_GATEWAY_TOKEN;
  const requests: RecordedRequest[] = [];
  const conversations = new Map<string, AgentMessage[]>();
  const flushes: FlushRecord[] = [];
  let faults: Fault[] = [];
  const sockets = new Set<Socket>();

  const send = (res: http.ServerResponse, httpStatus: number, envelope: Record<string, unknown>, headers: Record<string, string> = {}): void => {
    const text = JSON.stringify(envelope);
    res.writeHead(httpStatus, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers });
    res.end(text);
  };
  const fail = (res: http.ServerResponse, httpStatus: number, errno: number, error: string): void =>
    send(res, httpStatus, { status: errno, requestId: randomUUID(), error });
  const ok = (res: http.ServerResponse, result: unknown): void => send(res, 200, { status: 0, requestId: randomUUID(), result });

  const takeFault = (endpoint: string): Fault | undefined => {
    const index = faults.findIndex((f) => f.path === undefined || f.path === endpoint);
    if (index < 0) return undefined;
    return faults.splice(index, 1)[0];
  };

  /** Validates and stores a write; returns the answer to send, or undefined when it failed (already answered). */
  const storeAgentMemory = (body: unknown, rawBytes: number, res: http.ServerResponse): Record<string, unknown> | undefined => {
    if (rawBytes > MAX_BODY_BYTES) {
      fail(res, 400, ERRNO_INVALID_REQUEST, 'request_too_large');
      return undefined;
    }
    const parsed = agentMemoryBodySchema.safeParse(body);
    if (!parsed.success) {
      fail(res, 400, ERRNO_INVALID_REQUEST, 'invalid_request');
      return undefined;
    }
    const { conversationId, flush } = parsed.data;
    const messages = (body as { messages: AgentMessage[] }).messages;
    const stored = conversations.get(conversationId) ?? [];
    stored.push(...messages);
    conversations.set(conversationId, stored);
    if (flush) flushes.push({ conversationId, messageCount: stored.length });
    return { sessionId: `sess_${conversationId}`, status: 'queued', messageCount: messages.length, flushed: flush };
  };

  const search = (body: unknown, res: http.ServerResponse): void => {
    const parsed = searchBodySchema.safeParse(body);
    if (!parsed.success) return fail(res, 400, ERRNO_INVALID_REQUEST, 'invalid_request');
    const started = Date.now();
    const needle = parsed.data.query.toLowerCase();
    const hits: { content: string; conversationId: string; role: string; timestamp: number; score: number }[] = [];
    for (const [conversationId, messages] of conversations) {
      for (const m of messages) {
        const content = m.content ?? '';
        if (content.toLowerCase().includes(needle)) {
          hits.push({ content, conversationId, role: m.role, timestamp: m.timestamp, score: 1 });
        }
      }
    }
    ok(res, { items: hits.slice(0, parsed.data.topK ?? 5), total: hits.length, queryTimeMs: Date.now() - started });
  };

  let contextOverride: Record<string, unknown> | undefined;
  const context = (body: unknown, res: http.ServerResponse): void => {
    if (!contextBodySchema.safeParse(body).success) return fail(res, 400, ERRNO_INVALID_REQUEST, 'invalid_request');
    if (contextOverride) return ok(res, contextOverride);
    let count = 0;
    for (const messages of conversations.values()) count += messages.length;
    ok(res, {
      profile: { explicit_info: [], implicit_traits: [] },
      context: `${count} messages in ${conversations.size} conversations.`,
    });
  };

  /** Answers per the fault; false when the request should then be served normally. */
  const applyFault = async (fault: Fault, req: http.IncomingMessage, res: http.ServerResponse): Promise<boolean> => {
    switch (fault.kind) {
      case 'http':
        fail(res, fault.status, fault.status >= 500 ? ERRNO_INTERNAL : ERRNO_INVALID_REQUEST, 'injected_failure');
        return true;
      case 'rate_limit':
        send(res, 429, { status: 30104, requestId: randomUUID(), error: 'rate_limited' }, fault.retryAfter === undefined ? {} : { 'Retry-After': fault.retryAfter });
        return true;
      case 'reset':
        req.socket.destroy();
        return true;
      case 'hang':
        return true;
      case 'envelope':
        send(res, 200, { status: fault.errno, requestId: randomUUID(), error: fault.error ?? 'injected_errno' }, fault.retryAfter === undefined ? {} : { 'Retry-After': fault.retryAfter });
        return true;
      case 'non_json':
        res.writeHead(fault.status, { 'Content-Type': 'text/html' });
        res.end('<html><body>Bad gateway</body></html>');
        return true;
      case 'delay':
        await new Promise((resolve) => setTimeout(resolve, fault.ms));
        return false;
      case 'oversized_response':
        await writeOversized(res, fault.bytes ?? 9 * 1024 * 1024);
        return true;
      case 'hold':
        await fault.until;
        return false;
      case 'store_then':
        // Handled before any other fault: it needs the request stored first.
        return false;
    }
  };

  /** The garbled 2xx of a `store_then` fault, after the write was stored. */
  const garble = async (answer: Extract<Fault, { kind: 'store_then' }>['answer'], req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    switch (answer) {
      case 'bad_json':
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end('{"status":0,"result":{"sessionId":');
        return;
      case 'wrong_types':
        send(res, 200, { status: '0', requestId: 42, result: [] });
        return;
      case 'oversized':
        await writeOversized(res, 9 * 1024 * 1024);
        return;
      case 'reset_mid_body':
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '4096' });
        res.write('{"status":0,"requestId":"', () => req.socket.destroy());
        return;
      case 'stall_mid_body':
        // Half an answer, then nothing, until the client gives up (or the gateway stops).
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '4096' });
        res.write('{"status":0,"requestId":"');
        return;
    }
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    let rawBytes = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      rawBytes += chunk.length;
      if (rawBytes <= READ_LIMIT_BYTES) chunks.push(chunk);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const path = (req.url ?? '/').split('?')[0]!;
    const endpoint = path.startsWith('/api/v1') ? path.slice('/api/v1'.length) : path;
    const record: RecordedRequest = { method: req.method ?? '', path, headers: req.headers, body, bodyBytes: rawBytes, bodyText: text };
    requests.push(record);

    let answer: Record<string, unknown> | undefined;
    const store = (): void => {
      answer = storeAgentMemory(body, rawBytes, res);
    };
    const fault = takeFault(endpoint);
    if (fault) {
      record.fault = fault.kind;
      if (fault.kind === 'store_then') {
        if (req.headers.authorization !== `Bearer ${token}`) return fail(res, 401, ERRNO_UNAUTHORIZED, 'unauthorized');
        store();
        if (answer === undefined) return;
        return garble(fault.answer, req, res);
      }
      if (fault.kind === 'reset' && fault.afterStore) {
        // Stored only if valid: a rejected request answers normally instead of pretending to be lost.
        if (req.headers.authorization !== `Bearer ${token}`) return fail(res, 401, ERRNO_UNAUTHORIZED, 'unauthorized');
        store();
        if (answer === undefined) return;
        req.socket.destroy();
        return;
      }
      if (await applyFault(fault, req, res)) return;
    }

    if (req.method !== 'POST') return fail(res, 405, ERRNO_INVALID_REQUEST, 'method_not_allowed');
    if (req.headers.authorization !== `Bearer ${token}`) return fail(res, 401, ERRNO_UNAUTHORIZED, 'unauthorized');
    if (body === undefined) return fail(res, 400, ERRNO_INVALID_REQUEST, 'invalid_json');
    switch (endpoint) {
      case '/mem/agent-memory':
        store();
        if (answer !== undefined) ok(res, answer);
        return;
      case '/mem/search':
        return search(body, res);
      case '/mem/context':
        return context(body, res);
      default:
        return fail(res, 404, ERRNO_NOT_FOUND, 'not_found');
    }
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) fail(res, 500, ERRNO_INTERNAL, 'internal');
      else res.destroy();
    });
  });
  let connections = 0;
  server.on('connection', (socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  const listen = (port: number): Promise<void> =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  let listening = false;
  const stop = async (): Promise<void> => {
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Hanging requests and keep-alive sockets would otherwise hold close() open, and a pooled socket
    // would let a client reach a server that is meant to be down.
    for (const socket of sockets) socket.destroy();
    await closed;
  };

  await listen(0);
  listening = true;
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    token,
    requests,
    conversations,
    flushes,
    get connections() {
      return connections;
    },
    messagesFor: (conversationId) => conversations.get(conversationId) ?? [],
    requestsTo: (endpoint) => requests.filter((r) => r.path === `/api/v1${endpoint}`),
    failNext: (...more) => {
      faults.push(...more);
    },
    setDown: async (down) => {
      if (down) await stop();
      else if (!listening) {
        await listen(port);
        listening = true;
      }
    },
    stop,
    restart: async () => {
      await stop();
      await listen(port);
      listening = true;
    },
    reset: () => {
      requests.length = 0;
      conversations.clear();
      flushes.length = 0;
      faults = [];
      contextOverride = undefined;
    },
    setContext: (result) => {
      contextOverride = result;
    },
    close: stop,
  };
}
