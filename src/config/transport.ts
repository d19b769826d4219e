import { EvermeError } from '../core/errors.js';

/** The escape hatch for a plain-http proxy the user runs and controls (e.g. on another host of a private network). */
export const ALLOW_INSECURE_HTTP_ENV = 'EVERME_ALLOW_INSECURE_HTTP';

export function insecureHttpAllowed(env: Record<string, string | undefined> = process.env): boolean {
  return env[ALLOW_INSECURE_HTTP_ENV]?.trim() === '1';
}

/** 127.0.0.0/8, ::1 and `localhost`: traffic that never leaves this machine. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host === '::1') return true;
  // The WHATWG URL parser normalises every IPv4 spelling (127.1, 0x7f.1) to dotted decimal.
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * The API key goes in an `Authorization` header: over http:// to another host anyone on the path
 * reads it. Refused unless the host is loopback or the user opted in for a proxy they control.
 */
export function assertKeySafeTransport(url: URL, allowInsecure: boolean, what = 'EVERME_API_BASE'): void {
  if (url.protocol !== 'http:' || allowInsecure || isLoopbackHost(url.hostname)) return;
  throw new EvermeError('invalid_args', `${what} is plain http:// to ${url.hostname}: the API key would be sent in clear text`, {
    code: 'insecure_api_base',
    hint: `Use an https:// URL, or, for an http proxy you control, set ${ALLOW_INSECURE_HTTP_ENV}=1.`,
  });
}
