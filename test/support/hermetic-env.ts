/**
 * The one environment every process a test spawns gets. Built from nothing, never from
 * `process.env`: nothing of the developer's shell (EVERME_*, MINIMAX_*, MAVIS_*, XDG_*,
 * NODE_OPTIONS, proxies) reaches the CLI, so a planted EVERME_AGENT_TOKEN or MINIMAX_DATA_DIR
 * changes no result and sends nothing anywhere.
 *
 * What it holds: PATH, a C.UTF-8 locale, the HOME the test names, the suite's TMPDIR, the
 * outbound-socket guard (net-guard.mjs, preloaded through NODE_OPTIONS, reporting to the suite's
 * log with the current test's name), the hook watchdog as a hang budget (TEST_HOOK_WATCHDOG_MS),
 * and an EverMe API base on loopback. A test that wants the
 * gateway starts one (support/fake-gateway.ts) and passes its URL; any other API base is refused
 * here, before the CLI could try it.
 */
import os from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isLoopbackHost } from './net-guard.mjs';

export const netGuardPath = fileURLToPath(new URL('./net-guard.mjs', import.meta.url));

/** Loads the guard into a spawned node (and its worker threads), ahead of anything it imports. */
export const GUARD_NODE_OPTION = `--import=${pathToFileURL(netGuardPath).href}`;

/**
 * A loopback address where nothing listens (the discard port), used as the API base of every
 * spawned CLI that was given none: a stray gateway call is refused at once and never leaves the
 * machine, whatever the test forgot.
 */
export const DEAD_API_BASE = 'http://127.0.0.1:9';

/**
 * The hook's watchdog in tests, where it is a hang budget: at its 2.5 s default a hook process on a
 * loaded 2-core machine (load 28 was seen) gave up before doing what the test was about. The tests
 * of the watchdog itself pass `EVERME_HOOK_WATCHDOG_MS: null` and run at the default.
 */
export const TEST_HOOK_WATCHDOG_MS = '15000';

/** Variables a value of `null` leaves unset, rather than given the default above. */
export type EnvExtra = Record<string, string | undefined | null>;

/**
 * The environment for a spawned CLI (or `sh -c` running one): `home` is its HOME; `extra` adds or
 * overrides variables (undefined entries are ignored). `EVERME_API_BASE: null` leaves the API base
 * unset, for a test whose base comes from `<data>/everme.env` (the guard still holds). An
 * `NODE_OPTIONS` in `extra` is added after the guard, never instead of it.
 */
export function hermeticEnv(home: string, extra: EnvExtra = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    LANG: 'C.UTF-8',
    TMPDIR: os.tmpdir(),
    NODE_OPTIONS: GUARD_NODE_OPTION,
    EVERME_API_BASE: DEAD_API_BASE,
    EVERME_HOOK_WATCHDOG_MS: TEST_HOOK_WATCHDOG_MS,
  };
  // Where the guard reports, and which test the report names (suite-setup.ts keeps both current).
  if (process.env.NET_GUARD_LOG) env.NET_GUARD_LOG = process.env.NET_GUARD_LOG;
  if (process.env.NET_GUARD_TEST) env.NET_GUARD_TEST = process.env.NET_GUARD_TEST;
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) continue;
    if (value === null) delete env[key];
    else if (key === 'NODE_OPTIONS') env[key] = value.includes(GUARD_NODE_OPTION) ? value : `${GUARD_NODE_OPTION} ${value}`;
    else env[key] = value;
  }
  const base = env.EVERME_API_BASE;
  if (base !== undefined && base !== '' && !isLoopbackApiBase(base)) {
    throw new Error(`hermeticEnv: EVERME_API_BASE must be a loopback address (start a fake gateway), not ${base}`);
  }
  return env;
}

function isLoopbackApiBase(base: string): boolean {
  try {
    return isLoopbackHost(new URL(base).hostname);
  } catch {
    return true; // not a URL at all: the CLI rejects it itself (a test of that answer)
  }
}
