import { createHash, randomUUID } from 'node:crypto';
import type * as z from 'zod';
import { EvermeError, type ErrorType } from '../../core/errors.js';
import { assertKeySafeTransport } from '../../config/transport.js';
import { DEFAULT_API_BASE } from '../../config/settings.js';
import { redactOutput } from '../../core/redact-output.js';
import { redactText } from '../../core/redact.js';
import { parseJsonAs } from '../../core/json.js';
import { abortReason, postJson, RequestTimedOut, ResponseTooLarge, type PostedResponse } from './http-post.js';
import type { AgentMessage } from '../../core/agent-message.js';
import {
  agentMemoryResultSchema,
  contextResultSchema,
  envelopeSchema,
  searchResultSchema,
  type AgentMemoryResult,
  type GatewayContextResult,
  type GatewayEnvelope,
  type GatewaySearchResult,
} from './gateway-schemas.js';

export type { AgentMemoryResult, GatewayContextResult, GatewaySearchResult } from './gateway-schemas.js';

export const DEFAULT_TIMEOUT_MS = 30_000;
export const MAX_RESPONSE_BYTES = 8 * 1024 * 1024;
export const MAX_RETRY_AFTER_MS = 300_000;
export const MAX_QUERY_CHARS = 1024;
export const MAX_TOP_K = 50;
/** Pauses before resending a request whose connection was refused; the server never saw it. */
export const REFUSED_RETRY_DELAYS_MS = [100, 300] as const;
/** Used when a 429 carries no usable Retry-After. */
const DEFAULT_RETRY_AFTER_MS = 1_000;
const DEFAULT_RATE_LIMIT_RETRIES = 3;

/** Failures that prove the request never left this machine, so resending cannot double anything. */
const NEVER_REACHED_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export interface GatewayClientOptions {
  apiBase: string;
  apiKey: string;
  timeoutMs?: number;
  userAgent: string;
  /** Send the key over http:// to a non-loopback host (EVERME_ALLOW_INSECURE_HTTP=1). */
  allowInsecureHttp?: boolean;
  maxRateLimitRetries?: number;
  sleep?: Sleep;
}

export interface AgentMemoryBody {
  conversationId: string;
  flush: boolean;
  /**
   * Asks the server to add the batch synchronously, so that a flush later in the same upload sees
   * it; sent only when true, as EverMe's clients do.
   */
  sync?: boolean;
  /** The messages, or their JSON as UTF-8 (encoded by the plan phase, see EncodedRequest). */
  messages: AgentMessage[] | Uint8Array;
}

/**
 * What a write to /mem/agent-memory came back with. Any HTTP 2xx is the server's acknowledgement,
 * even when its body cannot be read (`responseInvalid` then says why): the server may well have
 * stored the batch, and resending it would store it twice.
 */
export type AgentMemoryAck = AgentMemoryResult & {
  requestId: string;
  responseInvalid?: ResponseInvalidReason;
};

export type ResponseInvalidReason = 'unreadable_body' | 'too_large' | 'not_json' | 'wrong_shape';

/**
 * A request id derived from what the request carries (conversation, message keys, flush), so that
 * a resend of the same batch, by this run or a later one, carries the same id and the server can
 * recognise it. Formatted as an RFC 9562 version-8 (custom) UUID, the header's expected shape.
 */
export function contentRequestId(conversationId: string, keys: readonly string[], flush: boolean): string {
  const hash = createHash('sha256');
  // Length-prefixed so no two different inputs concatenate to the same bytes.
  for (const part of [conversationId, flush ? 'flush' : 'append', ...keys]) hash.update(`${Buffer.byteLength(part)}:${part};`);
  const b = hash.digest().subarray(0, 16);
  b[6] = (b[6]! & 0x0f) | 0x80;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

interface CallOptions {
  signal?: AbortSignal;
  /** Ends a back-off wait without aborting a request in flight (see postAgentMemory). */
  waitSignal?: AbortSignal | undefined;
  /** The same id on every attempt of this call; a fresh UUID when unset. */
  requestId?: string | undefined;
  /**
   * For writes: a 2xx whose body cannot be read or parsed still acknowledges the request; the
   * value is then `undefined` and `invalid` says why.
   */
  ackOn2xx?: boolean;
}

type AttemptSuccess<T> = { value: T; requestId: string } | { value: undefined; requestId: string; invalid: ResponseInvalidReason };

const HINTS: Partial<Record<ErrorType, string>> = {
  auth: 'Check the EverMe API key (EVERME_API_KEY): it may be mistyped, expired or revoked.',
  network: 'Check the network connection and EVERME_API_BASE.',
  rate_limit: 'The EverMe gateway is rate limiting; the next sync resends from the last acknowledged message.',
  upstream: 'The EverMe gateway failed; the next sync resends from the last acknowledged message.',
};

/** A search or context request resends nothing: its hints say what the reader can do. */
const READ_HINTS: Partial<Record<ErrorType, string>> = {
  ...HINTS,
  rate_limit: 'The EverMe gateway is rate limiting; try again in a moment.',
  upstream: 'The EverMe gateway failed; try again in a moment.',
};

const WRITE_PATH = '/mem/agent-memory';

/** One attempt's failure; turned into an EvermeError once retries are exhausted. */
class AttemptFailure {
  constructor(
    readonly type: ErrorType,
    readonly code: string,
    readonly message: string,
    readonly detail: Record<string, unknown> & { reachedServer: boolean },
    readonly cause?: unknown,
  ) {}
}

export function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortReason(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Retry-After is either delta-seconds or an HTTP date; the result is clamped to 0–300 s. */
export function parseRetryAfter(value: string | null, now = Date.now()): number {
  if (value === null || value.trim() === '') return DEFAULT_RETRY_AFTER_MS;
  const trimmed = value.trim();
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(trimmed)) {
    ms = Number(trimmed) * 1000;
  } else {
    const at = Date.parse(trimmed);
    if (Number.isNaN(at)) return DEFAULT_RETRY_AFTER_MS;
    ms = at - now;
  }
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, Math.round(ms)));
}

function errorCodeOf(err: unknown): string | undefined {
  // A socket error carries its code, possibly on a wrapped cause; a refused dual-stack connect
  // arrives as an AggregateError whose members carry the code.
  let current: unknown = err;
  for (let depth = 0; depth < 4 && current !== null && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    const errors = (current as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.length > 0) {
      const inner = (errors[0] as { code?: unknown } | null)?.code;
      if (typeof inner === 'string') return inner;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function parseEnvelope(text: string): GatewayEnvelope | undefined {
  return parseJsonAs(text, envelopeSchema);
}

/** The gateway's error name is shown to users; keep it to an identifier so no payload leaks through. */
function serverErrorName(envelope: GatewayEnvelope | undefined): string | undefined {
  const name = envelope?.error;
  return name && /^[\w.:-]{1,80}$/.test(name) ? name : undefined;
}

/** What to do about an API base that is no http(s) URL (it comes from the environment or `<data>/everme.env`). */
const API_BASE_HINT = `Set EVERME_API_BASE (in the environment or <data>/everme.env) to an http(s) URL, or unset it for ${DEFAULT_API_BASE}.`;

/**
 * The body of a POST /mem/agent-memory, as JSON.stringify writes it. Key order matches the
 * batcher's byte accounting of the same body. Messages already encoded (see EncodedRequest) are
 * spliced in as bytes: `JSON.stringify` of an array is the same bytes wherever it is run.
 */
function agentMemoryPayload(body: AgentMemoryBody): string | Uint8Array {
  const { conversationId, flush, sync, messages } = body;
  const head = { conversationId, flush, ...(sync ? { sync: true } : {}) };
  if (!(messages instanceof Uint8Array)) return JSON.stringify({ ...head, messages });
  return Buffer.concat([Buffer.from(`${JSON.stringify(head).slice(0, -1)},"messages":`), messages, Buffer.from('}')]);
}

/** Speaks the EverMe gateway's wire contract; one instance per API key. */
export class GatewayClient {
  private readonly base: string;
  private readonly apiKey: string;
  private readonly timeoutMs: number;
  private readonly userAgent: string;
  private readonly maxRateLimitRetries: number;
  private readonly sleep: Sleep;

  constructor(opts: GatewayClientOptions) {
    let url: URL;
    try {
      url = new URL(opts.apiBase);
    } catch {
      throw new EvermeError('invalid_args', 'EVERME_API_BASE is not a valid URL', { code: 'invalid_api_base', hint: API_BASE_HINT });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new EvermeError('invalid_args', 'EVERME_API_BASE must be an http(s) URL', { code: 'invalid_api_base', hint: API_BASE_HINT });
    }
    assertKeySafeTransport(url, opts.allowInsecureHttp ?? false);
    if (!opts.apiKey) {
      throw new EvermeError('not_logged_in', 'No EverMe API key is configured', {
        hint: 'Set EVERME_API_KEY, or use the embedded store.',
      });
    }
    this.base = `${opts.apiBase.replace(/\/+$/, '')}/api/v1`;
    this.apiKey = opts.apiKey;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.userAgent = opts.userAgent;
    this.maxRateLimitRetries = opts.maxRateLimitRetries ?? DEFAULT_RATE_LIMIT_RETRIES;
    this.sleep = opts.sleep ?? defaultSleep;
  }

  /**
   * `waitSignal` ends a back-off wait (a 429's Retry-After) and keeps a new attempt from starting,
   * but never aborts a request in flight: its answer decides whether the marks move. `requestId`
   * is the same on every attempt (derived from the content by the sink, so a resend is recognisable).
   */
  async postAgentMemory(
    body: AgentMemoryBody,
    signal?: AbortSignal,
    extra: { requestId?: string; waitSignal?: AbortSignal } = {},
  ): Promise<AgentMemoryAck> {
    const ack = await this.call(WRITE_PATH, agentMemoryPayload(body), agentMemoryResultSchema, {
      signal,
      requestId: extra.requestId,
      waitSignal: extra.waitSignal,
      ackOn2xx: true,
    });
    if ('invalid' in ack) return { requestId: ack.requestId, responseInvalid: ack.invalid };
    return { ...ack.value, requestId: ack.requestId };
  }

  async search(query: string, topK = 5, signal?: AbortSignal): Promise<GatewaySearchResult> {
    const trimmed = query.trim();
    if (trimmed === '') throw new EvermeError('invalid_args', 'The search query is empty', { code: 'empty_query' });
    // A query is text leaving the machine like any stored message, so it is masked the same way;
    // masked before it is cut, or a key cut at the bound would no longer be recognised.
    const chars = Array.from(redactText(trimmed));
    const bounded = chars.slice(0, MAX_QUERY_CHARS).join('');
    const k = Math.min(MAX_TOP_K, Math.max(1, Math.floor(Number.isFinite(topK) ? topK : 5)));
    return (await this.call('/mem/search', JSON.stringify({ query: bounded, topK: k }), searchResultSchema, { signal })).value!;
  }

  async context(opts: { forceRefresh?: boolean } = {}, signal?: AbortSignal): Promise<GatewayContextResult> {
    return (await this.call('/mem/context', JSON.stringify(opts.forceRefresh ? { forceRefresh: true } : {}), contextResultSchema, { signal })).value!;
  }

  /** `payload`: the request's JSON body. */
  private async call<T>(path: string, payload: string | Uint8Array, schema: z.ZodType<T>, opts: CallOptions): Promise<AttemptSuccess<T>> {
    const { signal, waitSignal } = opts;
    const sleepSignal = signal && waitSignal ? AbortSignal.any([signal, waitSignal]) : (signal ?? waitSignal);
    const requestId = opts.requestId ?? randomUUID();
    let attempts = 0;
    let refusedRetries = 0;
    let rateLimitRetries = 0;
    for (;;) {
      attempts++;
      const outcome = await this.attempt(path, payload, schema, requestId, opts);
      if (!(outcome instanceof AttemptFailure)) return outcome;
      let delay: number | undefined;
      if (outcome.type === 'network' && !outcome.detail.reachedServer && refusedRetries < REFUSED_RETRY_DELAYS_MS.length) {
        delay = REFUSED_RETRY_DELAYS_MS[refusedRetries++];
      } else if (outcome.type === 'rate_limit' && typeof outcome.detail.retryAfterMs === 'number' && rateLimitRetries < this.maxRateLimitRetries) {
        // A 429, or an errno 30104 that says when to come back (its Retry-After): the server took nothing.
        rateLimitRetries++;
        delay = outcome.detail.retryAfterMs;
      }
      if (delay === undefined) throw this.toError(outcome, attempts, path);
      try {
        await this.sleep(delay, sleepSignal);
      } catch (err) {
        throw this.toError(this.cancelled(path, outcome.detail.reachedServer, err), attempts, path);
      }
      if (sleepSignal?.aborted) throw this.toError(this.cancelled(path, outcome.detail.reachedServer), attempts, path);
    }
  }

  private toError(failure: AttemptFailure, attempts: number, path: string): EvermeError {
    const detail: Record<string, unknown> = {};
    for (const [k, v] of Object.entries({ ...failure.detail, attempts })) {
      detail[k] = typeof v === 'string' ? this.scrub(v) : v;
    }
    return new EvermeError(failure.type, this.scrub(failure.message), {
      code: failure.code,
      hint: (path === WRITE_PATH ? HINTS : READ_HINTS)[failure.type],
      detail,
      cause: failure.cause,
    });
  }

  /** Belt and braces: nothing the server or the runtime says may carry the key out. */
  private scrub(text: string): string {
    return redactOutput(text.split(this.apiKey).join('[REDACTED]'));
  }

  private cancelled(path: string, reachedServer: boolean, cause?: unknown): AttemptFailure {
    return new AttemptFailure('cancelled', 'cancelled', 'The request to the EverMe gateway was cancelled', { path, reachedServer }, cause);
  }

  private async attempt<T>(
    path: string,
    payload: string | Uint8Array,
    schema: z.ZodType<T>,
    requestId: string,
    opts: CallOptions,
  ): Promise<AttemptSuccess<T> | AttemptFailure> {
    const { signal } = opts;
    if (signal?.aborted) return this.cancelled(path, false, signal.reason);
    const base = { path, requestId };

    let response: PostedResponse;
    try {
      const headers = {
        Authorization: `Bearer ${this.apiKey}`,
        'Content-Type': 'application/json',
        Accept: 'application/json',
        'User-Agent': this.userAgent,
        requestId,
      };
      response = await postJson(new URL(`${this.base}${path}`), headers, payload, { signal, timeoutMs: this.timeoutMs });
    } catch (err) {
      return this.transportFailure(err, base, signal, 'connect');
    }

    // A status line arrived: from here on the server has seen the request. A 2xx write is then
    // acknowledged whatever its body turns out to be.
    const acked = opts.ackOn2xx === true && response.status >= 200 && response.status < 300;
    let text: string;
    try {
      text = await response.text(MAX_RESPONSE_BYTES);
    } catch (err) {
      if (acked) return { value: undefined, requestId, invalid: err instanceof ResponseTooLarge ? 'too_large' : 'unreadable_body' };
      if (err instanceof ResponseTooLarge) {
        return new AttemptFailure('upstream', 'response_too_large', `The EverMe gateway sent more than ${MAX_RESPONSE_BYTES} bytes`, {
          ...base,
          reachedServer: true,
          httpStatus: response.status,
        });
      }
      return this.transportFailure(err, base, signal, 'body');
    }
    const classified = this.classify(response, text, schema, base);
    if (classified instanceof AttemptFailure) {
      if (acked && (classified.code === 'non_json' || classified.code === 'invalid_response')) {
        return { value: undefined, requestId, invalid: classified.code === 'non_json' ? 'not_json' : 'wrong_shape' };
      }
      return classified;
    }
    return { value: classified.value, requestId };
  }

  private transportFailure(
    err: unknown,
    base: { path: string; requestId: string },
    signal: AbortSignal | undefined,
    phase: 'connect' | 'body',
  ): AttemptFailure {
    // Whether an aborted request reached the server is unknown, and unknown counts as reached.
    if (signal?.aborted) return this.cancelled(base.path, true, err);
    if (err instanceof RequestTimedOut) {
      return new AttemptFailure('network', 'timeout', `The EverMe gateway did not answer within ${this.timeoutMs} ms`, {
        ...base,
        reachedServer: true,
        timeoutMs: this.timeoutMs,
      }, err);
    }
    const sysCode = errorCodeOf(err);
    const neverReached = phase === 'connect' && sysCode !== undefined && NEVER_REACHED_CODES.has(sysCode);
    let code = 'connection_failed';
    let message = 'The connection to the EverMe gateway failed';
    if (sysCode === 'ECONNREFUSED') {
      code = 'connection_refused';
      message = 'The EverMe gateway refused the connection';
    } else if (sysCode === 'ENOTFOUND' || sysCode === 'EAI_AGAIN') {
      code = 'dns';
      message = 'The EverMe gateway host name could not be resolved';
    } else if (sysCode === 'ECONNRESET' || sysCode === 'EPIPE') {
      code = 'connection_reset';
      message = 'The connection to the EverMe gateway was lost before it answered';
    }
    return new AttemptFailure('network', code, message, { ...base, reachedServer: !neverReached, ...(sysCode ? { sysCode } : {}) }, err);
  }

  private classify<T>(
    response: PostedResponse,
    text: string,
    schema: z.ZodType<T>,
    base: { path: string; requestId: string },
  ): { value: T } | AttemptFailure {
    const httpStatus = response.status;
    const envelope = parseEnvelope(text);
    const serverError = serverErrorName(envelope);
    const detail = {
      ...base,
      reachedServer: true,
      httpStatus,
      ...(envelope?.requestId ? { serverRequestId: envelope.requestId } : {}),
      ...(envelope && envelope.status !== 0 ? { errno: envelope.status } : {}),
      ...(serverError ? { serverError } : {}),
    };
    const named = serverError ? `: ${serverError}` : '';

    if (httpStatus === 429) {
      const retryAfterMs = parseRetryAfter(response.header('retry-after'));
      return new AttemptFailure('rate_limit', 'http_429', 'The EverMe gateway is rate limiting requests (HTTP 429)', {
        ...detail,
        retryAfterMs,
      });
    }
    if (httpStatus === 401 || httpStatus === 403) {
      return new AttemptFailure('auth', httpStatus === 401 ? 'unauthorized' : 'forbidden', `The EverMe gateway rejected the API key (HTTP ${httpStatus}${named})`, detail);
    }
    if (httpStatus >= 300 && httpStatus < 400) {
      return new AttemptFailure('upstream', 'redirect', `The EverMe gateway answered with a redirect (HTTP ${httpStatus}); check EVERME_API_BASE`, detail);
    }
    if (!envelope) {
      return new AttemptFailure('upstream', 'non_json', `The EverMe gateway sent an unreadable response (HTTP ${httpStatus})`, detail);
    }
    if (httpStatus >= 500) {
      return new AttemptFailure('upstream', `http_${httpStatus}`, `The EverMe gateway failed (HTTP ${httpStatus}${named})`, detail);
    }
    if (envelope.status !== 0) return this.errnoFailure(envelope.status, response, named, detail);
    if (httpStatus < 200 || httpStatus >= 300) {
      return new AttemptFailure('upstream', `http_${httpStatus}`, `The EverMe gateway answered HTTP ${httpStatus}`, detail);
    }
    const parsed = schema.safeParse(envelope.result ?? {});
    if (!parsed.success) {
      return new AttemptFailure('upstream', 'invalid_response', `The EverMe gateway's answer does not match the expected shape (${base.path})`, detail);
    }
    return { value: parsed.data };
  }

  private errnoFailure(
    errno: number,
    response: PostedResponse,
    named: string,
    detail: Record<string, unknown> & { reachedServer: boolean },
  ): AttemptFailure {
    const suffix = `(errno ${errno}${named})`;
    if (errno === 30104) {
      const header = response.header('retry-after');
      return new AttemptFailure('rate_limit', 'rate_limited', `The EverMe gateway is rate limiting requests ${suffix}`, {
        ...detail,
        ...(header !== null ? { retryAfterMs: parseRetryAfter(header) } : {}),
      });
    }
    if (errno === 30005) {
      return new AttemptFailure('upstream', 'upstream_error', `The EverMe gateway's upstream failed ${suffix}`, detail);
    }
    if (errno >= 30000 && errno <= 30399) {
      return new AttemptFailure('auth', 'auth_error', `The EverMe gateway refused the credentials ${suffix}`, detail);
    }
    return new AttemptFailure('upstream', 'gateway_error', `The EverMe gateway reported an error ${suffix}`, detail);
  }
}
