/**
 * The outbound-socket guard. Loaded into every test process: the vitest workers import it from
 * test/support/suite-setup.ts, and every process a test spawns loads it through
 * `NODE_OPTIONS=--import=<this file>` (test/support/hermetic-env.ts), which Node 20 also runs in
 * worker threads. Plain JavaScript because a spawned `node` has no TypeScript loader.
 *
 * Whatever is not loopback (127.0.0.0/8, ::1, `localhost`, see isLoopbackHost) or a local socket path is refused
 * before a packet leaves: a TCP/TLS connect (http, https, fetch, http2 and tls all end in
 * `net.Socket.prototype.connect`), a UDP send or connect, a DNS lookup or query. The refused call
 * fails the way an unreachable network does (so the code under test takes its error path and
 * nothing is uploaded), and one JSON line naming the process, the target and the test that
 * started it is appended to the file named by NET_GUARD_LOG. The suite turns any line there into
 * a failure that names the test (suite-setup.ts after each test, global-setup.ts at the end).
 */
import dgram from 'node:dgram';
import dns from 'node:dns';
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

const INSTALLED = Symbol.for('everme.test.netGuard');

/**
 * 127.0.0.0/8, ::1 (and its IPv4-mapped spellings), `localhost`; and the unspecified addresses
 * 0.0.0.0 and ::, which on Linux connect to this machine (transport.test.ts relies on that to send
 * to a host the product does not call loopback without anything leaving the machine).
 */
export function isLoopbackHost(host) {
  const h = String(host).toLowerCase().replace(/^\[|\]$/g, '');
  if (h === 'localhost' || h.endsWith('.localhost') || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  if (h === '0.0.0.0' || h === '::') return true;
  return /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** Appends the blocked attempt to NET_GUARD_LOG (or stderr when no log is named) and builds the error to fail with. */
function refuse(kind, target) {
  const entry = {
    kind,
    target,
    test: process.env.NET_GUARD_TEST ?? null,
    pid: process.pid,
    argv: [...process.execArgv.filter((a) => !a.startsWith('--import')), ...process.argv.slice(1)].join(' ').slice(0, 300),
  };
  const line = `${JSON.stringify(entry)}\n`;
  const log = process.env.NET_GUARD_LOG;
  try {
    if (log) fs.appendFileSync(log, line);
    else process.stderr.write(`net-guard: ${line}`);
  } catch {
    process.stderr.write(`net-guard: ${line}`);
  }
  const err = new Error(`net-guard: ${kind} to ${target} blocked: tests may reach loopback only`);
  err.code = 'ENETUNREACH';
  err.syscall = kind;
  return err;
}

/** The options object of any of `connect(options)`, `connect(port, host)`, `connect(path)` and net's internal normalised array. */
function connectTarget(args) {
  const first = args[0];
  const options = Array.isArray(first) ? first[0] : first;
  if (options !== null && typeof options === 'object') {
    if (options.path !== undefined && options.path !== null) return null;
    return { host: options.host ?? 'localhost', port: options.port };
  }
  if (typeof options === 'number' || (typeof options === 'string' && /^\d+$/.test(options))) {
    return { host: typeof args[1] === 'string' ? args[1] : 'localhost', port: options };
  }
  return null; // a pipe or Unix socket path
}

function install() {
  if (globalThis[INSTALLED]) return;
  globalThis[INSTALLED] = true;

  const connect = net.Socket.prototype.connect;
  net.Socket.prototype.connect = function guardedConnect(...args) {
    const target = connectTarget(args);
    if (target === null || isLoopbackHost(target.host)) return connect.apply(this, args);
    const err = refuse('connect', `${target.host}:${target.port}`);
    process.nextTick(() => this.destroy(err));
    return this;
  };

  const udpSend = dgram.Socket.prototype.send;
  dgram.Socket.prototype.send = function guardedSend(...args) {
    // send(msg, [offset, length,] port, address, cb): the address is the first string after msg.
    const address = args.slice(1).find((a) => typeof a === 'string');
    const port = args.slice(1).find((a) => typeof a === 'number');
    if (address === undefined || isLoopbackHost(address)) return udpSend.apply(this, args);
    const err = refuse('udp', `${address}:${port}`);
    const cb = args.find((a) => typeof a === 'function');
    process.nextTick(() => (cb ? cb(err) : this.emit('error', err)));
  };
  const udpConnect = dgram.Socket.prototype.connect;
  dgram.Socket.prototype.connect = function guardedUdpConnect(port, address, cb) {
    if (typeof address !== 'string' || isLoopbackHost(address)) return udpConnect.call(this, port, address, cb);
    const err = refuse('udp', `${address}:${port}`);
    process.nextTick(() => this.emit('error', err));
  };

  // DNS: a lookup of anything but a loopback name, and every query to a resolver (they go out to
  // the network's DNS server), are refused before getaddrinfo or c-ares sees them.
  const guardCallbackApi = (holder, name, lookupOnly) => {
    const original = holder[name];
    if (typeof original !== 'function') return;
    holder[name] = function guardedDns(...args) {
      const host = args[0];
      if (lookupOnly && typeof host === 'string' && isLoopbackHost(host)) return original.apply(this, args);
      const err = refuse('dns', `${name}(${String(host)})`);
      err.code = 'ENOTFOUND';
      const cb = args.findLast((a) => typeof a === 'function');
      if (cb) process.nextTick(() => cb(err));
      else throw err;
    };
  };
  const guardPromiseApi = (holder, name, lookupOnly) => {
    const original = holder[name];
    if (typeof original !== 'function') return;
    holder[name] = function guardedDnsPromise(...args) {
      const host = args[0];
      if (lookupOnly && typeof host === 'string' && isLoopbackHost(host)) return original.apply(this, args);
      const err = refuse('dns', `${name}(${String(host)})`);
      err.code = 'ENOTFOUND';
      return Promise.reject(err);
    };
  };
  const queries = (holder) => Object.keys(holder).filter((k) => /^(resolve|reverse)/.test(k) && typeof holder[k] === 'function');
  for (const name of ['lookup', 'lookupService']) {
    guardCallbackApi(dns, name, true);
    guardPromiseApi(dns.promises, name, true);
  }
  for (const name of queries(dns)) guardCallbackApi(dns, name, false);
  for (const name of queries(dns.Resolver.prototype)) guardCallbackApi(dns.Resolver.prototype, name, false);
  for (const name of queries(dns.promises)) guardPromiseApi(dns.promises, name, false);
  for (const name of queries(dns.promises.Resolver.prototype)) guardPromiseApi(dns.promises.Resolver.prototype, name, false);

  // `import { lookup } from 'node:dns'` binds the export as it was: make later imports see the guard.
  syncBuiltinESMExports();
}

install();
