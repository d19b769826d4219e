import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Settings } from '../config/settings.js';
import { totalsByCode, type WarningCode } from '../core/warnings.js';
import { resolveConversationId } from '../store/conversation-ids.js';
import { databasePath, openDatabase } from '../store/database.js';
import { conversationIdFor } from '../core/conversation-id.js';
import { SessionScopeStore, type ScopeRecord } from '../store/session-scope.js';
import { WarningStore, type ConversationWarnings } from '../store/warning-store.js';
import { TombstoneStore } from '../store/tombstones.js';

export type ReportConversation = ConversationWarnings;

export interface WarningReport {
  conversations: ReportConversation[];
  totals: Partial<Record<WarningCode, number>>;
  /** Sessions the latest read left out because their workspace is excluded. */
  excluded: ScopeRecord[];
  /** Sessions read whose workspace nobody knows: no exclusion could be checked for them. */
  workspaceUnknown: ScopeRecord[];
  /** Conversations forgotten (`everme forget`): never delivered again. */
  forgotten: number;
}

/** The text report names this many unknown-workspace sessions, then counts the rest. */
const UNKNOWN_SHOWN = 10;

export interface ReportFilter {
  conversation?: string;
  code?: WarningCode;
  sinceMs?: number;
}

/** The warnings of each conversation's latest read, from the state file; an empty store reports nothing. */
export function buildReport(settings: Settings, filter: ReportFilter): WarningReport {
  if (!existsSync(databasePath(settings.stateDir))) return { conversations: [], totals: {}, excluded: [], workspaceUnknown: [], forgotten: 0 };
  const db = openDatabase(settings.stateDir);
  try {
    const conversationId = filter.conversation === undefined ? undefined : resolveConversationId(db, filter.conversation);
    const listed = new WarningStore(db).list({ conversationId, code: filter.code, sinceMs: filter.sinceMs });
    const conversations = listed
      .map((c) => ({ ...c, warnings: c.warnings.filter((w) => w.count > 0) }))
      .filter((c) => c.warnings.length > 0);
    // Scope records are about sessions, not warning codes: a --code filter leaves them out.
    const scopes =
      filter.code === undefined
        ? new SessionScopeStore(db)
            .list()
            .filter((r) => conversationId === undefined || conversationIdFor(r.sessionId) === conversationId)
            .filter((r) => filter.sinceMs === undefined || (r.createdAtMs ?? r.recordedAtMs) >= filter.sinceMs)
        : [];
    return {
      conversations,
      totals: totalsByCode(conversations.flatMap((c) => c.warnings)),
      excluded: scopes.filter((r) => r.status === 'excluded'),
      workspaceUnknown: scopes.filter((r) => r.status === 'workspace_unknown'),
      forgotten: new TombstoneStore(db).count(),
    };
  } finally {
    db.close();
  }
}

function day(ms: number | undefined): string {
  return ms === undefined ? '-' : new Date(ms).toISOString().slice(0, 10);
}

function renderScope(report: WarningReport): string[] {
  const lines: string[] = [];
  if (report.excluded.length > 0) {
    lines.push('', `excluded (${report.excluded.length} session${report.excluded.length === 1 ? '' : 's'}, never read past their workspace, never delivered):`);
    for (const r of report.excluded) lines.push(`    ${r.sessionId}  ${day(r.createdAtMs)}  ${r.workspaceDir ?? '-'}  by ${r.rule ?? '-'}`);
  }
  if (report.workspaceUnknown.length > 0) {
    const n = report.workspaceUnknown.length;
    lines.push(
      '',
      `workspace unknown (${n} session${n === 1 ? '' : 's'}): neither the session files nor a hook said where ${n === 1 ? 'it' : 'they'} ran, so EVERME_EXCLUDE and .everme-ignore could not be checked; ${n === 1 ? 'it was' : 'they were'} delivered.`,
    );
    for (const r of report.workspaceUnknown.slice(0, UNKNOWN_SHOWN)) lines.push(`    ${r.sessionId}  ${day(r.createdAtMs)}`);
    if (n > UNKNOWN_SHOWN) lines.push(`    … and ${n - UNKNOWN_SHOWN} more (--json lists all)`);
  }
  if (report.forgotten > 0) lines.push('', `forgotten: ${report.forgotten} conversation${report.forgotten === 1 ? '' : 's'} (never delivered again; \`everme forget --undo --conversation ID\` lifts one)`);
  return lines;
}

export function renderReport(report: WarningReport): string {
  if (report.conversations.length === 0) return ['No warnings: every conversation read cleanly.', ...renderScope(report)].join('\n');
  const lines: string[] = [];
  for (const c of report.conversations) {
    const day = c.createdAtMs === undefined ? '' : new Date(c.createdAtMs).toISOString().slice(0, 10);
    const head = c.sessionId ?? c.sessionDir ?? '(unknown session)';
    const file = c.historyFile ? `  ${path.basename(c.historyFile)}` : '';
    lines.push(`${head}  ${day || '-'}  ${c.workspaceDir ?? '-'}  ${c.source}${file}`);
    for (const w of c.warnings) {
      const samples = w.samples.map((s) => `${s.file}:${s.line}`).join(', ');
      lines.push(`    ${w.code.padEnd(30)} ${String(w.count).padStart(6)}  ${samples}`);
    }
  }
  lines.push('', 'totals:');
  for (const [code, count] of Object.entries(report.totals)) lines.push(`    ${code.padEnd(30)} ${String(count).padStart(6)}`);
  lines.push(...renderScope(report));
  return lines.join('\n');
}
