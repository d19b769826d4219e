import type Database from 'better-sqlite3';
import { EvermeError } from '../core/errors.js';
import { deliverySinks, type Settings, type SinkName } from '../config/settings.js';
import { databasePath, openDatabase, openMemoryDatabase } from '../store/database.js';
import { GatewayClient, type GatewayClientOptions } from '../sinks/gateway/gateway-client.js';
import { GatewaySink } from '../sinks/gateway/gateway-sink.js';
import { LocalSink } from '../sinks/local/local-sink.js';
import { InlineWriter, ScalingWriter } from '../store/local-writer.js';
import type { Sink } from '../sinks/sink.js';
import { existsSync } from 'node:fs';
import { FingerprintStore } from '../store/fingerprint-store.js';
import { RunStore } from '../store/run-store.js';
import { SessionManifestStore } from '../store/session-manifests.js';
import { SessionStore } from '../store/session-store.js';
import { WarningStore } from '../store/warning-store.js';
import { PrivacyGate } from './privacy-gate.js';
import { SessionLocks } from './session-lock.js';
import { ThreadSessionLocks } from './thread-session-locks.js';
import { userAgentFor } from '../sinks/gateway/user-agent.js';

export interface Engine {
  db: Database.Database;
  /** Where sessions go, the one the run is named for first (see `deliverySinks`). */
  sinks: Sink[];
  marks: { fingerprints: FingerprintStore; sessions: SessionStore };
  /** What the walk read of each manifest, so the next walk reads only those that changed. */
  manifests: SessionManifestStore;
  runs: RunStore;
  warnings: WarningStore;
  locks: SessionLocks;
  privacy: PrivacyGate;
  close(): void;
}

export function gatewayClientFor(settings: Settings, extra: Pick<GatewayClientOptions, 'maxRateLimitRetries'> = {}): GatewayClient {
  if (!settings.apiKey) {
    throw new EvermeError('not_logged_in', 'No EverMe credential is configured for the everme sink', {
      hint: 'Run `everme install --api-key <key>`, set EVERME_API_KEY (or EverMe\'s EVERME_AGENT_TOKEN and EVERME_AGENT_ID), or use `--sink local`.',
    });
  }
  return new GatewayClient({
    apiBase: settings.apiBase,
    apiKey: settings.apiKey,
    userAgent: userAgentFor(settings.agentId),
    allowInsecureHttp: settings.allowInsecureHttp ?? false,
    ...(settings.requestTimeoutMs !== undefined ? { timeoutMs: settings.requestTimeoutMs } : {}),
    ...extra,
  });
}

/**
 * For reads (search, context, the status probe): a rate limit is answered at once, never waited
 * out. A write's back-off keeps a run's place; a reader waiting up to three Retry-Afters (minutes)
 * gets nothing for it, when the store can answer a search now and the status can say why.
 */
export function gatewayReadClientFor(settings: Settings): GatewayClient {
  return gatewayClientFor(settings, { maxRateLimitRetries: 0 });
}

/**
 * A dry run reads the marks but may write nothing, not even a schema upgrade. Without a database, or
 * with one too old to read as it is, it works against an empty in-memory one (as if nothing had been
 * delivered yet). A current one is opened normally and only read: a connection that wrote nothing
 * leaves the file as it was, and being read-write it removes its -wal/-shm on close, which a
 * read-only connection could not.
 */
function openDryRunDatabase(stateDir: string): Database.Database {
  if (!existsSync(databasePath(stateDir))) return openMemoryDatabase();
  try {
    openDatabase(stateDir, { readonly: true }).close();
  } catch (err) {
    if (err instanceof EvermeError && err.code === 'database_outdated') return openMemoryDatabase();
    throw err;
  }
  return openDatabase(stateDir);
}

/**
 * Opens the one state file and every sink a delivery to `primary` goes to (see `deliverySinks`;
 * `openDryRunDatabase` for dry runs).
 */
export function openEngine(settings: Settings, primary: SinkName, opts: { dryRun?: boolean } = {}): Engine {
  const names = deliverySinks(primary, settings);
  const client = names.includes('everme') ? gatewayClientFor(settings) : undefined;
  const db = opts.dryRun ? openDryRunDatabase(settings.stateDir) : openDatabase(settings.stateDir);
  const sessions = new SessionStore(db);
  // A dry run commits nothing (and may hold an in-memory database no thread could share).
  const writer = names.includes('local') && !opts.dryRun ? new ScalingWriter(db, { stateDir: settings.stateDir }) : undefined;
  const sinks: Sink[] = names.map((name) => (name === 'everme' ? new GatewaySink(client!, db, () => writer?.thread()?.turn) : new LocalSink(db, writer ?? new InlineWriter(db))));
  const locks = writer ? new ThreadSessionLocks(db, () => writer.thread()?.turn) : new SessionLocks(db);
  return {
    db,
    sinks,
    marks: { fingerprints: new FingerprintStore(db), sessions },
    manifests: new SessionManifestStore(db, opts.dryRun ?? false),
    runs: new RunStore(db),
    warnings: new WarningStore(db),
    locks,
    privacy: PrivacyGate.open(db, settings, sessions, { dryRun: opts.dryRun, turn: () => writer?.thread()?.turn }),
    close: () => {
      if (locks instanceof ThreadSessionLocks) locks.close();
      for (const sink of sinks) sink.close();
      db.close();
    },
  };
}
