import path from 'node:path';
import { readEnvFile } from './env-file.js';
import { parseExcludeList, type ExclusionSource } from './exclude.js';

export const DEFAULT_API_BASE = 'https://api.everme.evermind.ai';
export const DEFAULT_SYNC_INTERVAL_MS = 60_000;
/** Characters of recalled memory the SessionStart hook may hand the model; 0 turns recall off. */
export const DEFAULT_RECALL_CHARS = 4000;
/**
 * The most `EVERME_RECALL_CHARS` may give: MiniMax Code's plugin runner cuts hook output above
 * 10,000 characters and writes the rest to a file the model never sees.
 */
export const MAX_RECALL_CHARS = 10_000;

export type SinkName = 'local' | 'everme';

/** Where the credential in use was found. */
export type CredentialSource = 'flag' | 'env' | 'everme.env';

/**
 * The bearer token everme sends, and what it is: EverMe's per-agent token (`EVERME_AGENT_TOKEN`,
 * `evt_…`, written by EverMe's own installer together with `EVERME_AGENT_ID`) or an account/API key
 * (`EVERME_API_KEY`, `evt_…` or `emk_…`).
 */
export interface Credential {
  token: string;
  variable: 'EVERME_AGENT_TOKEN' | 'EVERME_API_KEY';
  source: CredentialSource;
}

export interface Settings {
  dataDir: string;
  /** The bearer token in use (`credential.token`); unset when no credential is configured. */
  apiKey?: string;
  credential?: Credential;
  /** EverMe's agent id, named in the User-Agent when known. */
  agentId?: string;
  apiBase: string;
  stateDir: string;
  syncIntervalMs: number;
  /** EVERME_ALLOW_INSECURE_HTTP=1: the key may go over http:// to a non-loopback host. */
  allowInsecureHttp?: boolean;
  /** `EVERME_RECALL_CHARS`: the SessionStart context budget (0 = off). */
  recallChars: number;
  /** Per-request gateway timeout; unset means the client's default (30 s). Tests shorten it. */
  requestTimeoutMs?: number;
  /** `EVERME_EXCLUDE`: workspace paths or globs whose sessions are never read or delivered. */
  exclude: string[];
  /**
   * `EVERME_LOCAL_STORE`: keep the embedded store alongside the gateway (the default: it is the
   * user's own index, which the viewer, `mem_get` and project recall read); `0` turns it off.
   */
  localStore: boolean;
  /** The file `EVERME_EXCLUDE` came from (`<data>/everme.env`); unset when the environment set it. Relative patterns resolve against it. */
  excludeDeclaredIn?: string;
  /**
   * `EVERME_INCLUDE_KINDS`: sessions read beyond conversations and tasks: `peek`, `channel`, `cron`,
   * `hidden`, or `all` (comma-separated, case-insensitive).
   */
  includeKinds: string[];
  /** Words of `EVERME_INCLUDE_KINDS` that name no kind: an import, sync or hook run refuses them (invalid_args). */
  unknownIncludeKinds?: string[];
}

const INCLUDE_KIND_WORDS = new Set(['peek', 'channel', 'cron', 'hidden', 'all']);

export function parseIncludeKinds(raw: string | undefined): string[] {
  return [...new Set(includeKindWords(raw).filter((w) => INCLUDE_KIND_WORDS.has(w)))];
}

/** Words of `EVERME_INCLUDE_KINDS` that name no kind (`peeks`): a run that reads sessions refuses them. */
export function unknownIncludeKinds(raw: string | undefined): string[] {
  return [...new Set(includeKindWords(raw).filter((w) => !INCLUDE_KIND_WORDS.has(w)))];
}

function includeKindWords(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(/[\s,]+/u)
    .map((w) => w.trim().toLowerCase())
    .filter((w) => w !== '');
}

export interface SettingsFlags {
  apiKey?: string;
  apiBase?: string;
}

type Env = Record<string, string | undefined>;

export function envFilePath(dataDir: string): string {
  return path.join(dataDir, 'everme.env');
}

/** Keys a reinstall of EverMe rotates: for these the file is newer than any shell that exported them. */
const FILE_FIRST = new Set(['EVERME_AGENT_TOKEN', 'EVERME_AGENT_ID']);

function trimmed(value: string | undefined): string | undefined {
  const t = value?.trim();
  return t ? t : undefined;
}

/**
 * Precedence: flags first; then, for `EVERME_AGENT_TOKEN` and `EVERME_AGENT_ID`, `<data>/everme.env`
 * before the process environment (EverMe's installer rotates them there); for every other key the
 * environment before the file; then the defaults.
 *
 * The credential: a `--api-key` flag; else the agent token (writes need it, with its agent id);
 * else `EVERME_API_KEY`. When both an agent token and an API key are configured, the agent token is
 * used for everything, since an `emk_` key alone is enough for reads but not for writes.
 */
export function loadSettings(givenDataDir: string, flags: SettingsFlags = {}, env: Env = process.env): Settings {
  // Absolute, as the state dir below: sessions are fingerprinted by their paths under it, so a run
  // given a relative one recorded paths that the next run (from the CLI, which resolves its own)
  // did not recognise, and it planned every session again.
  const dataDir = path.resolve(givenDataDir);
  const file = readEnvFile(envFilePath(dataDir));
  const pickWithSource = (key: string): { value: string; source: CredentialSource } | undefined => {
    const fromEnv = trimmed(env[key]);
    const fromFile = trimmed(file.get(key));
    const order: Array<[string | undefined, CredentialSource]> = FILE_FIRST.has(key)
      ? [[fromFile, 'everme.env'], [fromEnv, 'env']]
      : [[fromEnv, 'env'], [fromFile, 'everme.env']];
    for (const [value, source] of order) if (value) return { value, source };
    return undefined;
  };
  const pick = (key: string): string | undefined => pickWithSource(key)?.value;
  const interval = Number(pick('EVERME_MINIMAX_SYNC_INTERVAL_MS'));
  const stateDir = pickWithSource('EVERME_STATE_DIR');
  const timeout = Number(pick('EVERME_REQUEST_TIMEOUT_MS'));
  const credential = chooseCredential(trimmed(flags.apiKey), pickWithSource('EVERME_AGENT_TOKEN'), pickWithSource('EVERME_API_KEY'));
  const agentId = pick('EVERME_AGENT_ID');
  const recallChars = Number(pick('EVERME_RECALL_CHARS'));
  return {
    dataDir,
    ...(credential ? { apiKey: credential.token, credential } : {}),
    ...(agentId ? { agentId } : {}),
    apiBase: (trimmed(flags.apiBase) ?? pick('EVERME_API_BASE') ?? DEFAULT_API_BASE).replace(/\/+$/, ''),
    // A relative one from everme.env is relative to that file's directory, the data dir, as a relative
    // EVERME_EXCLUDE pattern there is: against the working directory, the CLI (started anywhere) and
    // the hook worker (started in the data dir) each used a store of their own.
    stateDir: stateDir ? path.resolve(stateDir.source === 'everme.env' ? dataDir : process.cwd(), stateDir.value) : path.join(dataDir, 'everme'),
    allowInsecureHttp: pick('EVERME_ALLOW_INSECURE_HTTP') === '1',
    syncIntervalMs: Number.isFinite(interval) && interval >= 0 ? interval : DEFAULT_SYNC_INTERVAL_MS,
    recallChars: Number.isSafeInteger(recallChars) && recallChars >= 0 ? Math.min(recallChars, MAX_RECALL_CHARS) : DEFAULT_RECALL_CHARS,
    ...(Number.isInteger(timeout) && timeout > 0 ? { requestTimeoutMs: timeout } : {}),
    ...excludeSettings(pickWithSource('EVERME_EXCLUDE'), envFilePath(dataDir)),
    includeKinds: parseIncludeKinds(pick('EVERME_INCLUDE_KINDS')),
    ...unknownKindsSetting(pick('EVERME_INCLUDE_KINDS')),
    localStore: pick('EVERME_LOCAL_STORE') !== '0',
  };
}

function unknownKindsSetting(raw: string | undefined): Pick<Settings, 'unknownIncludeKinds'> {
  const unknown = unknownIncludeKinds(raw);
  return unknown.length === 0 ? {} : { unknownIncludeKinds: unknown };
}

function excludeSettings(picked: { value: string; source: CredentialSource } | undefined, file: string): Pick<Settings, 'exclude' | 'excludeDeclaredIn'> {
  const exclude = parseExcludeList(picked?.value);
  return picked?.source === 'everme.env' ? { exclude, excludeDeclaredIn: file } : { exclude };
}

/** The exclusion policy's source for these settings (see `ExclusionPolicy.load`). */
export function exclusionSource(settings: Settings): ExclusionSource {
  return settings.excludeDeclaredIn === undefined ? {} : { declaredIn: settings.excludeDeclaredIn };
}

function chooseCredential(
  flag: string | undefined,
  agentToken: { value: string; source: CredentialSource } | undefined,
  apiKey: { value: string; source: CredentialSource } | undefined,
): Credential | undefined {
  if (flag) return { token: flag, variable: 'EVERME_API_KEY', source: 'flag' };
  if (agentToken) return { token: agentToken.value, variable: 'EVERME_AGENT_TOKEN', source: agentToken.source };
  if (apiKey) return { token: apiKey.value, variable: 'EVERME_API_KEY', source: apiKey.source };
  return undefined;
}

/** How `status` names the credential: masked as the CLI contract masks tokens, never whole. */
export function maskToken(token: string): string {
  const head = /^(evt|emk)_[A-Za-z0-9]{4}/.exec(token);
  return head ? `${head[0]}_REDACTED` : '[REDACTED]';
}

export function defaultSink(settings: Settings): SinkName {
  return settings.apiKey ? 'everme' : 'local';
}

/**
 * Every sink a delivery to `primary` goes to, the primary first: the gateway together with the
 * embedded store (unless `EVERME_LOCAL_STORE=0`), or the store alone.
 */
export function deliverySinks(primary: SinkName, settings: Settings): SinkName[] {
  return primary === 'everme' && settings.localStore ? ['everme', 'local'] : [primary];
}
