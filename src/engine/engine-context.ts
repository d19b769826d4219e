import type Database from 'better-sqlite3';
import { EvermeError } from '../core/errors.js';
import type { Settings, SinkName } from '../config/settings.js';
import { databasePath, openDatabase, openMemoryDatabase } from '../store/database.js';
import { GatewayClient } from '../sinks/gateway/gateway-client.js';
import { GatewaySink } from '../sinks/gateway/gateway-sink.js';
import { LocalSink } from '../sinks/local/local-sink.js';
import { InlineWriter, ScalingWriter } from '../store/local-writer.js';
import type { Sink } from '../sinks/sink.js';
import { existsSync } from 'node:fs';
import { PrivacyGate } from './privacy-gate.js';
import { SessionLocks } from './session-lock.js';
import { ThreadSessionLocks } from './thread-session-locks.js';
import { StateStore } from '../store/state-store.js';
import { userAgentFor } from '../sinks/gateway/user-agent.js';

export interface Engine {
  db: Database.Database;
  state: StateStore;
  locks: SessionLocks;
  sink: Sink;
  privacy: PrivacyGate;
  close(): void;
}

export function gatewayClientFor(settings: Settings): GatewayClient {
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
  });
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
 * Opens the one state file and the chosen sink (see `openDryRunDatabase` for dry runs).
 */
export function openEngine(settings: Settings, sinkName: SinkName, opts: { dryRun?: boolean } = {}): Engine {
  const sinkClient = sinkName === 'everme' ? gatewayClientFor(settings) : undefined;
  const db = opts.dryRun ? openDryRunDatabase(settings.stateDir) : openDatabase(settings.stateDir);
  const state = new StateStore(db);
  // A dry run commits nothing (and may hold an in-memory database no thread could share).
  const writer = sinkClient || opts.dryRun ? undefined : new ScalingWriter(db, { stateDir: settings.stateDir });
  const sink: Sink = sinkClient ? new GatewaySink(sinkClient, state) : new LocalSink(db, writer ?? new InlineWriter(db));
  const locks = writer ? new ThreadSessionLocks(db, () => writer.thread()?.turn) : new SessionLocks(db);
  return {
    db,
    state,
    locks,
    sink,
    privacy: PrivacyGate.open(db, settings, state, { dryRun: opts.dryRun, turn: () => writer?.thread()?.turn }),
    close: () => {
      if (locks instanceof ThreadSessionLocks) locks.close();
      sink.close();
      db.close();
    },
  };
}
