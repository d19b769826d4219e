import { existsSync } from 'node:fs';
import type { Settings } from '../config/settings.js';
import { databasePath, openDatabase } from '../store/database.js';
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

/**
 * The embedded store's answer for a starting session. Loads only the database module and one
 * query (no zod, no message store), because it runs on the agent's path. Undefined when there is
 * no store yet or nothing recorded for the project; a store that cannot be read throws.
 */
export function localSessionStartContext(stateDir: string, request: SessionStartRequest): string | undefined {
  const local = localProjectStart(stateDir, request);
  return local ? renderSessionStartContext(local, request.maxChars) : undefined;
}

/** The project's recent conversations in the local store (none of the starting session's own). */
function localProjectStart(stateDir: string, request: SessionStartRequest): LocalStart | undefined {
  if (!existsSync(databasePath(stateDir))) return undefined;
  const db = openDatabase(stateDir, { readonly: true });
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
 * local store that cannot be read leaves the gateway's part alone.
 */
export async function gatewaySessionStartContext(settings: Settings, request: SessionStartRequest): Promise<string | undefined> {
  // Loaded only here: the client and its schemas are startup time the local path does not pay.
  const [{ GatewayRecall }, { gatewayClientFor }] = await Promise.all([import('./recall.js'), import('../engine/engine-context.js')]);
  let local: LocalStart | undefined;
  try {
    local = localProjectStart(settings.stateDir, request);
  } catch {
    local = undefined;
  }
  const recall = new GatewayRecall(gatewayClientFor(settings));
  const context = await recall.context({ signal: AbortSignal.timeout(GATEWAY_TIMEOUT_MS) });
  return renderSessionStartContext(context, request.maxChars, local);
}

/**
 * What the SessionStart hook prints: the configured sink's recall for the workspace, or nothing.
 * It leaves through `toModel` like every answer for the model.
 */
export async function sessionStartContext(settings: Settings, request: SessionStartRequest): Promise<string | undefined> {
  if (request.maxChars <= 0 || request.project.trim() === '') return undefined;
  const rendered = settings.apiKey ? await gatewaySessionStartContext(settings, request) : localSessionStartContext(settings.stateDir, request);
  return rendered === undefined ? undefined : toModel(rendered);
}
