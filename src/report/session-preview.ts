import type { AgentMessage } from '../core/agent-message.js';
import type { WarningEntry } from '../core/warnings.js';
import { conversationIdFor } from '../core/conversation-id.js';
import { planSession } from '../engine/session-plan.js';
import { flushPlanFor, UploadFlags } from '../sinks/gateway/flush-policy.js';
import type { PlannedRequest } from '../sinks/sink.js';
import { locateNamedSession } from '../transcript/session-locate.js';
import type { SessionRef } from '../transcript/types.js';

export interface SessionPreview {
  conversationId: string;
  sessionId: string;
  source: 'messages' | 'ledger' | 'none';
  historyFile?: string;
  workspaceDir?: string;
  requests: Array<{ messages: number; flush: boolean }>;
  messages: AgentMessage[];
  warnings: WarningEntry[];
}

/**
 * Exactly what an import would deliver for one session: the plan phase itself (the same reader,
 * converter, redaction and batcher) against empty marks, so nothing counts as already delivered,
 * and the gateway's own flush rule for an import. Reads the session's files; writes nothing.
 */
export async function previewSession(session: SessionRef): Promise<SessionPreview> {
  const requests: PlannedRequest[] = [];
  const result = await planSession({ session, targets: [{ delivered: new Set(), requests: true, rows: false }] }, (_target, part) => {
    requests.push(...(part.requests ?? []));
    return Promise.resolve();
  });
  const flags = new UploadFlags(flushPlanFor('import', false));
  const outgoing = [...requests.flatMap((request) => flags.push(request)), ...flags.end()];
  const base = { conversationId: conversationIdFor(session.sessionId), sessionId: session.sessionId };
  if (result.status === 'empty') return { ...base, source: 'none', requests: [], messages: [], warnings: [] };
  const { conversation } = result;
  return {
    ...base,
    source: conversation.source,
    historyFile: conversation.historyFile,
    ...(conversation.workspaceDir === undefined ? {} : { workspaceDir: conversation.workspaceDir }),
    requests: outgoing.map((out) => ({ messages: out.request.messages.length, flush: out.flush })),
    messages: outgoing.flatMap((out) => out.request.messages),
    warnings: result.warnings,
  };
}

/** `everme show`: the preview of the session with this id under the data dir. */
export async function previewSessionById(dataDir: string, sessionId: string): Promise<SessionPreview> {
  const session = await locateNamedSession(dataDir, sessionId, { hint: 'Session ids look like mvs_ followed by 32 hex digits.' });
  return previewSession(session);
}
