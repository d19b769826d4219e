/**
 * Running the delivery engine in-process against a temp data dir, and reading back what each sink
 * holds: the embedded store's rows, or the fake gateway's stored messages.
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadSettings, type Settings, type SinkName } from '../../src/config/settings.js';
import { openDatabase } from '../../src/store/database.js';
import { LocalStore } from '../../src/store/local-store.js';
import { runPipeline, type RunOptions, type RunSummary } from '../../src/engine/run-pipeline.js';
import type { DeliveryMode } from '../../src/engine/session-delivery.js';
import { WarningStore, type ConversationWarnings } from '../../src/store/warning-store.js';
import type { FakeGateway } from './fake-gateway.js';
import { signature } from './delivery-trees.js';
import { tempDir } from '../transcript-helpers.js';

export interface HarnessEnv {
  dataDir: string;
  stateDir: string;
  gateway?: FakeGateway;
  /** EVERME_REQUEST_TIMEOUT_MS, for the timeout test. */
  timeoutMs?: number;
  /** false: EVERME_LOCAL_STORE=0 (the gateway alone). */
  localStore?: boolean;
}

/** A fresh temp data dir (created, empty) and state dir (created on first use) for one test. */
export function freshHarnessEnv(gateway?: FakeGateway): HarnessEnv {
  const root = tempDir();
  const env: HarnessEnv = { dataDir: path.join(root, 'data'), stateDir: path.join(root, 'state'), ...(gateway ? { gateway } : {}) };
  fs.mkdirSync(env.dataDir);
  return env;
}

export function settingsFor(env: HarnessEnv): Settings {
  return loadSettings(env.dataDir, {}, {
    EVERME_STATE_DIR: env.stateDir,
    EVERME_API_KEY: env.gateway?.token,
    EVERME_API_BASE: env.gateway?.url,
    EVERME_REQUEST_TIMEOUT_MS: env.timeoutMs === undefined ? undefined : String(env.timeoutMs),
    EVERME_LOCAL_STORE: env.localStore === false ? '0' : undefined,
  });
}

export function runEngine(
  env: HarnessEnv,
  mode: DeliveryMode,
  sink: SinkName,
  extra: Partial<Omit<RunOptions, 'mode' | 'settings' | 'sink'>> = {},
): Promise<RunSummary> {
  return runPipeline({ mode, settings: settingsFor(env), sink, concurrency: 2, ...extra });
}

interface MessageRow {
  role: 'user' | 'assistant' | 'tool';
  timestamp: number;
  content: string | null;
}

/** The embedded store's messages of one conversation, in insertion order. */
export function storedSignatures(stateDir: string, conversationId: string): string[] {
  const db = openDatabase(stateDir, { readonly: true });
  try {
    const rows = db
      .prepare<[string], MessageRow>('SELECT role, timestamp, content FROM messages WHERE conversation_id = ? ORDER BY id')
      .all(conversationId);
    return rows.map((row) => signature(row));
  } finally {
    db.close();
  }
}

/** The embedded store's (row id, key) of one conversation, in row order: what ids and keys a re-read kept. */
export function storedRows(stateDir: string, conversationId: string): Array<{ id: number; msg_key: string }> {
  const db = openDatabase(stateDir, { readonly: true });
  try {
    return db.prepare<[string], { id: number; msg_key: string }>('SELECT id, msg_key FROM messages WHERE conversation_id = ? ORDER BY id').all(conversationId);
  } finally {
    db.close();
  }
}

export function storeCounts(stateDir: string): { conversations: number; messages: number } {
  const db = openDatabase(stateDir, { readonly: true });
  try {
    return new LocalStore(db).counts();
  } finally {
    db.close();
  }
}

/** Rows of (conversation, msg_key) stored more than once: must always be empty. */
export function duplicateKeys(stateDir: string): Array<{ conversation_id: string; msg_key: string; n: number }> {
  const db = openDatabase(stateDir, { readonly: true });
  try {
    return db
      .prepare<[], { conversation_id: string; msg_key: string; n: number }>(
        'SELECT conversation_id, msg_key, count(*) AS n FROM messages GROUP BY conversation_id, msg_key HAVING n > 1',
      )
      .all();
  } finally {
    db.close();
  }
}

export function recordedWarnings(stateDir: string, conversationId: string): ConversationWarnings[] {
  const db = openDatabase(stateDir, { readonly: true });
  try {
    return new WarningStore(db).list({ conversationId });
  } finally {
    db.close();
  }
}

export function gatewaySignatures(gateway: FakeGateway, conversationId: string): string[] {
  return gateway.messagesFor(conversationId).map((m) => signature(m));
}

/** The flush flag of every agent-memory request of one conversation, in arrival order. */
export function flushFlags(gateway: FakeGateway, conversationId: string): boolean[] {
  return gateway
    .requestsTo('/mem/agent-memory')
    .filter((r) => (r.body as { conversationId?: string } | undefined)?.conversationId === conversationId && r.fault === undefined)
    .map((r) => (r.body as { flush: boolean }).flush);
}

export function stateDirIn(root: string): string {
  return path.join(root, 'state');
}
