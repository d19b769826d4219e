import type http from 'node:http';

/**
 * One POST to the gateway over node:http(s), which the client uses instead of fetch: fetch (undici)
 * took ~1.37 ms of CPU a request against ~0.33 ms here (3,000 writes of 25 messages each to a
 * loopback server, four at a time), and an import to the gateway sends one request per ~25
 * messages, all from the thread that keeps the marks. Nothing follows a redirect here: a redirect
 * would carry the bearer token somewhere the user did not configure.
 */

/** The response as the client reads it: its status, a header, and its body up to a cap. */
export interface PostedResponse {
  readonly status: number;
  header(name: string): string | null;
  /** The body as UTF-8; rejects with ResponseTooLarge past `cap` bytes, or with the transport's error. */
  text(cap: number): Promise<string>;
}

export class ResponseTooLarge extends Error {}

/** The request took longer than its time limit, from sending to the body's last byte. */
export class RequestTimedOut extends Error {}

// Kept-alive connections, as fetch kept them: an import sends thousands of requests to one host.
// The agents unref idle sockets, so they never hold a finished process open. An idle socket is
// closed after 4 s, fetch's default, or sooner when the server's Keep-Alive header says so: reused
// after the server dropped it, it would fail the next write as a reset, which is never resent.
const IDLE_SOCKET_MS = 4000;

interface Transport {
  request: typeof http.request;
  agent: http.Agent;
}

// Loaded at the first request: every command that may talk to the gateway imports this module,
// and node:https alone adds ~5 ms to a process's start (a no-op `everme sync` is ~430 ms).
const transports = new Map<string, Promise<Transport>>();

function transportFor(protocol: string): Promise<Transport> {
  let transport = transports.get(protocol);
  if (!transport) {
    transport = (protocol === 'https:' ? import('node:https') : import('node:http')).then((lib) => ({
      request: lib.request,
      agent: new lib.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
    }));
    transports.set(protocol, transport);
  }
  return transport;
}

/**
 * Sends `body` and resolves once the status line and headers arrive. The request fails with
 * RequestTimedOut once `timeoutMs` pass before its body has been read, and with the signal's reason
 * when `signal` aborts first. Both are dropped once the body is read. (A timer, not an
 * AbortSignal.timeout: that took ~27 µs of CPU against ~3 µs, 20,000 of each made and dropped, and
 * lives on until it fires.)
 */
export async function postJson(
  url: URL,
  headers: Readonly<Record<string, string>>,
  body: string | Uint8Array,
  { signal, timeoutMs }: { signal?: AbortSignal | undefined; timeoutMs: number },
): Promise<PostedResponse> {
  const { request, agent } = await transportFor(url.protocol);
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const req = request(url, {
      method: 'POST',
      agent,
      headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) },
    });
    const later = new LaterFailure();
    const fail = (err: Error): void => {
      reject(err);
      later.fail(err);
    };
    const stop = (err: Error): void => {
      done();
      req.destroy(err);
      fail(err);
    };
    const onAbort = (): void => stop(abortReason(signal));
    const timer = setTimeout(() => stop(new RequestTimedOut(`No answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    // Errors after the answer arrived (a reset mid-body) reach the body's reader; the listeners
    // stay so that none of them is ever unhandled.
    req.on('error', (err) => {
      done();
      fail(err);
    });
    req.once('response', (res) => {
      res.on('error', fail);
      // A connection lost mid-body may close the response without an error event.
      res.once('close', () => {
        if (!res.complete) fail(Object.assign(new Error('The connection closed before the response ended'), { code: 'ECONNRESET' }));
      });
      resolve(answer(res, later, done));
    });
    req.end(body);
  });
}

/** A failure after the status line: the body's reader gets it, or keeps it until it reads. */
class LaterFailure {
  private early: Error | undefined;
  private reader: ((err: Error) => void) | undefined;

  fail(err: Error): void {
    if (this.reader) this.reader(err);
    else this.early ??= err;
  }

  /** False when a failure came first: `reader` has it already. */
  listen(reader: (err: Error) => void): boolean {
    if (this.early) {
      reader(this.early);
      return false;
    }
    this.reader = reader;
    return true;
  }
}

function answer(res: http.IncomingMessage, later: LaterFailure, done: () => void): PostedResponse {
  return {
    status: res.statusCode ?? 0,
    header: (name) => {
      const value = res.headers[name.toLowerCase()];
      return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
    },
    text: (cap) =>
      new Promise<string>((resolve, reject) => {
        const failed = (err: Error): void => {
          done();
          reject(err);
        };
        if (!later.listen(failed)) return;
        const declared = Number(res.headers['content-length']);
        if (Number.isFinite(declared) && declared > cap) {
          res.destroy();
          failed(new ResponseTooLarge());
          return;
        }
        const chunks: Buffer[] = [];
        let total = 0;
        res.on('data', (chunk: Buffer) => {
          total += chunk.length;
          if (total <= cap) {
            chunks.push(chunk);
            return;
          }
          res.destroy();
          failed(new ResponseTooLarge());
        });
        res.once('end', () => {
          done();
          resolve(Buffer.concat(chunks).toString('utf8'));
        });
      }),
  };
}

/** Why a request or a wait ended early: the signal's reason (an AbortError unless the caller gave another Error). */
export function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new DOMException('This operation was aborted', 'AbortError');
}
