import path from 'node:path';
import { readEnvFile } from './env-file.js';

export const DEFAULT_API_BASE = 'https://api.everme.evermind.ai';
export const DEFAULT_SYNC_INTERVAL_MS = 60_000;
/** Characters of recalled memory the SessionStart hook may hand the model; 0 turns recall off. */
export const DEFAULT_RECALL_CHARS = 4000;

export type SinkName = 'local' | 'everme';

export interface Settings {
  dataDir: string;
  apiKey?: string;
  apiBase: string;
  stateDir: string;
  syncIntervalMs: number;
  /** `EVERME_RECALL_CHARS`: the SessionStart context budget (0 = off). */
  recallChars: number;
  /** Per-request gateway timeout; unset means the client's default (30 s). Tests shorten it. */
  requestTimeoutMs?: number;
}

export interface SettingsFlags {
  apiKey?: string;
  apiBase?: string;
}

type Env = Record<string, string | undefined>;

export function envFilePath(dataDir: string): string {
  return path.join(dataDir, 'everme.env');
}

/** Precedence everywhere: flags, then the process environment, then `<data>/everme.env`, then defaults. */
export function loadSettings(dataDir: string, flags: SettingsFlags = {}, env: Env = process.env): Settings {
  const file = readEnvFile(envFilePath(dataDir));
  const pick = (key: string): string | undefined => {
    const fromEnv = env[key]?.trim();
    if (fromEnv) return fromEnv;
    const fromFile = file.get(key)?.trim();
    return fromFile ? fromFile : undefined;
  };
  const interval = Number(pick('EVERME_MINIMAX_SYNC_INTERVAL_MS'));
  const stateDir = pick('EVERME_STATE_DIR');
  const timeout = Number(pick('EVERME_REQUEST_TIMEOUT_MS'));
  const recallChars = Number(pick('EVERME_RECALL_CHARS'));
  return {
    dataDir,
    apiKey: flags.apiKey?.trim() || pick('EVERME_API_KEY'),
    apiBase: (flags.apiBase?.trim() || pick('EVERME_API_BASE') || DEFAULT_API_BASE).replace(/\/+$/, ''),
    stateDir: stateDir ? path.resolve(stateDir) : path.join(dataDir, 'everme'),
    syncIntervalMs: Number.isFinite(interval) && interval >= 0 ? interval : DEFAULT_SYNC_INTERVAL_MS,
    recallChars: Number.isSafeInteger(recallChars) && recallChars >= 0 ? recallChars : DEFAULT_RECALL_CHARS,
    ...(Number.isInteger(timeout) && timeout > 0 ? { requestTimeoutMs: timeout } : {}),
  };
}

export function defaultSink(settings: Settings): SinkName {
  return settings.apiKey ? 'everme' : 'local';
}
