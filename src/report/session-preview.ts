import { existsSync } from 'node:fs';
import { ExclusionPolicy, describeRule } from '../config/exclude.js';
import { exclusionSource, type Settings } from '../config/settings.js';
import type { AgentMessage } from '../core/agent-message.js';
import type { WarningEntry } from '../core/warnings.js';
import { conversationIdFor } from '../core/conversation-id.js';
import { planSession } from '../engine/session-plan.js';
import { flushPlanFor, UploadFlags } from '../sinks/gateway/flush-policy.js';
import type { EncodedRequest, PlannedRequest } from '../sinks/sink.js';
import { databasePath, openDatabase } from '../store/database.js';
import { TombstoneStore } from '../store/tombstones.js';
import { readSessionIndex } from '../transcript/session-index.js';
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
  /** Why an import or sync delivers none of it, though its files would give these messages. */
  skipped?: PreviewSkip;
}

export type PreviewSkip = { reason: 'forgotten' } | { reason: 'excluded'; rule: string; workspaceDir: string };

/**
 * Exactly what an import would deliver for one session: the plan phase itself (the same reader,
 * converter, redaction and batcher) against empty marks, so nothing counts as already delivered,
 * and the gateway's own flush rule for an import. Reads the session's files; writes nothing.
 */
export async function previewSession(session: SessionRef): Promise<SessionPreview> {
  // The requests as the gateway sink takes them (for their flags), and as objects (for their messages).
  const encoded: EncodedRequest[] = [];
  const requests: PlannedRequest[] = [];
  const result = await planSession({ session, targets: [{ delivered: new Set(), requests: true, encoded: true, rows: false }] }, (_target, part) => {
    encoded.push(...(part.encoded ?? []));
    requests.push(...(part.requests ?? []));
    return Promise.resolve();
  });
  const flags = new UploadFlags(flushPlanFor('import', false));
  const outgoing = [...encoded.flatMap((request) => flags.push(request)), ...flags.end()];
  const base = { conversationId: conversationIdFor(session.sessionId), sessionId: session.sessionId };
  if (result.status === 'empty') return { ...base, source: 'none', requests: [], messages: [], warnings: [] };
  const { conversation } = result;
  return {
    ...base,
    source: conversation.source,
    historyFile: conversation.historyFile,
    ...(conversation.workspaceDir === undefined ? {} : { workspaceDir: conversation.workspaceDir }),
    requests: outgoing.map((out) => ({ messages: out.request.messageCount, flush: out.flush })),
    // Flags keep the requests' order: the objects are the encoded requests', one for one.
    messages: requests.flatMap((request) => request.messages),
    warnings: result.warnings,
  };
}

/** `everme show`: the preview of the session with this id under the data dir, and whether a run would skip it. */
export async function previewSessionById(settings: Settings, sessionId: string): Promise<SessionPreview> {
  const session = await locateNamedSession(settings.dataDir, sessionId, { hint: 'Session ids look like mvs_ followed by 32 hex digits.' });
  const preview = await previewSession(session);
  const skipped = await skipOf(settings, preview);
  return skipped === undefined ? preview : { ...preview, skipped };
}

/**
 * What the privacy gate would say before reading the session: forgotten (a tombstone in the store),
 * or a workspace that `EVERME_EXCLUDE` or an `.everme-ignore` excludes. The workspace is the one
 * the session's files name, else the session index's.
 */
async function skipOf(settings: Settings, preview: SessionPreview): Promise<PreviewSkip | undefined> {
  if (isForgotten(settings.stateDir, preview.conversationId)) return { reason: 'forgotten' };
  const index = preview.workspaceDir === undefined ? readSessionIndex(settings.dataDir, { sessionIds: [preview.sessionId] }) : undefined;
  const workspaceDir = preview.workspaceDir ?? (index?.status === 'ok' ? index.sessions.get(preview.sessionId)?.workspaceDir : undefined);
  if (workspaceDir === undefined) return undefined;
  const rule = (await ExclusionPolicy.load(settings.exclude, undefined, exclusionSource(settings))).ruleFor(workspaceDir);
  return rule === undefined ? undefined : { reason: 'excluded', rule: describeRule(rule), workspaceDir };
}

/** A preview needs no store: none, or one this version cannot read, holds no tombstone it can see. */
function isForgotten(stateDir: string, conversationId: string): boolean {
  if (!existsSync(databasePath(stateDir))) return false;
  let db: ReturnType<typeof openDatabase> | undefined;
  try {
    db = openDatabase(stateDir, { readonly: true });
    return new TombstoneStore(db).isForgotten(conversationId);
  } catch {
    return false;
  } finally {
    db?.close();
  }
}
