import { existsSync } from 'node:fs';
import type { Settings } from '../config/settings.js';
import { EvermeError, toEvermeError } from '../core/errors.js';
import { databasePath, openReadonlyDatabase } from '../store/database-reader.js';
import { listRecentConversations } from '../store/conversation-list.js';
import { renderSessionStartContext, type LocalStart } from './context-index.js';
import { toModel } from './model-output.js';

/** Conversations considered before the budget trims them: more than a 4,000-character block can hold. */
const SESSION_START_CONVERSATIONS = 30;
/** The gateway gets this long; the hook's watchdog (2.5 s) is the backstop. */
const GATEWAY_TIMEOUT_MS = 1500;

export interface SessionStartRequest {
  /** The payload's `cwd`: the session's workspace. */
  project: string;
  /** The session that is starting: on resume its own conversation is already in front of the model. */
  sessionId: string;
  maxChars: number;
}

/** What SessionStart recall found for the hook: the block for the model, and what it lacks. */
export interface SessionStartRecall {
  /** The block for the model; unset when there is nothing to print. */
  text?: string;
  /**
   * Gateway mode: the gateway's part failed and `text` is the local store's part alone (the block
   * printed without a key). Set only when there was a local part to print; otherwise the failure
   * is thrown, as the answer itself.
   */
  gatewayFailure?: EvermeError;
}

/**
 * The embedded store's answer for a starting session. Loads only the store's reader
 * (database-reader.ts) and one query (no zod, no message store, no migrations), because it runs on
 * the agent's path. Undefined when there is no store yet or nothing recorded for the project; a
 * store that cannot be read throws.
 */
export function localSessionStartContext(stateDir: string, request: SessionStartRequest): string | undefined {
  const local = localProjectStart(stateDir, request);
  return local ? renderSessionStartContext(local, request.maxChars) : undefined;
}

/** The project's recent conversations in the local store (none of the starting session's own). */
function localProjectStart(stateDir: string, request: SessionStartRequest): LocalStart | undefined {
  if (!existsSync(databasePath(stateDir))) return undefined;
  const db = openReadonlyDatabase(stateDir);
  try {
    const conversations = listRecentConversations(db, { project: request.project, limit: SESSION_START_CONVERSATIONS + 1 })
      .filter((c) => c.sessionId !== request.sessionId)
      .slice(0, SESSION_START_CONVERSATIONS);
    return { kind: 'local', project: request.project, conversations };
  } finally {
    db.close();
  }
}

/**
 * Gateway mode: the project's recall from the local store (kept in gateway mode too), then the
 * gateway's `/mem/context` (account-wide: the gateway knows no workspaces), bounded in time. A
 * local store that cannot be read leaves the gateway's part alone; a gateway that fails (down,
 * slow, refusing the key, answering garbage) leaves the local part alone, because the project's
 * own conversations are the part of the block a new session needs most and they are already here.
 */
export async function gatewaySessionStartContext(settings: Settings, request: SessionStartRequest): Promise<SessionStartRecall> {
  // Loaded only here: the client and its schemas are startup time the local path does not pay.
  const [{ GatewayRecall }, { gatewayReadClientFor }] = await Promise.all([import('./recall.js'), import('../engine/engine-context.js')]);
  let local: LocalStart | undefined;
  try {
    local = localProjectStart(settings.stateDir, request);
  } catch {
    local = undefined;
  }
  const deadline = AbortSignal.timeout(GATEWAY_TIMEOUT_MS);
  try {
    // Inside the try: a client refused its configuration (an insecure API base) is the gateway's
    // part failing too, and costs the local part no more than a gateway that is down.
    const recall = new GatewayRecall(gatewayReadClientFor(settings));
    const context = await recall.context({ signal: deadline });
    return { text: renderSessionStartContext(context, request.maxChars, local) };
  } catch (err) {
    const failure = deadline.aborted ? timedOut() : toEvermeError(err);
    const alone = local ? renderSessionStartContext(local, request.maxChars) : undefined;
    // Nothing local to fall back on: the failure is the whole answer, and the hook reports it.
    if (alone === undefined) throw failure;
    return { text: alone, gatewayFailure: failure };
  }
}

/** The gateway's silence past the hook's bound is a network failure, as the client's own time limit is, not a cancel (Ctrl-C). */
function timedOut(): EvermeError {
  return new EvermeError('network', `The EverMe gateway did not answer within ${GATEWAY_TIMEOUT_MS} ms`, {
    code: 'timeout',
    hint: 'Check the network connection and EVERME_API_BASE.',
  });
}

/**
 * What the SessionStart hook prints: the configured sink's recall for the workspace, or nothing,
 * and in gateway mode whether the gateway's part is missing. The text leaves through `toModel`
 * like every answer for the model.
 */
export async function sessionStartRecall(settings: Settings, request: SessionStartRequest): Promise<SessionStartRecall> {
  if (request.maxChars <= 0 || request.project.trim() === '') return {};
  const found = settings.apiKey ? await gatewaySessionStartContext(settings, request) : { text: localSessionStartContext(settings.stateDir, request) };
  return { ...found, text: found.text === undefined ? undefined : toModel(found.text) };
}
