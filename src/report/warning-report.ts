import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Settings } from '../config/settings.js';
import { totalsByCode, type WarningCode } from '../core/warnings.js';
import { databasePath, openDatabase } from '../store/database.js';
import { conversationIdFor } from '../engine/conversation-id.js';
import { StateStore, type ConversationWarnings } from '../store/state-store.js';

export type ReportConversation = ConversationWarnings;

export interface WarningReport {
  conversations: ReportConversation[];
  totals: Partial<Record<WarningCode, number>>;
}

export interface ReportFilter {
  conversation?: string;
  code?: WarningCode;
  sinceMs?: number;
}

/** The warnings of each conversation's latest read, from the state file; an empty store reports nothing. */
export function buildReport(settings: Settings, filter: ReportFilter): WarningReport {
  if (!existsSync(databasePath(settings.stateDir))) return { conversations: [], totals: {} };
  const db = openDatabase(settings.stateDir);
  try {
    const conversationId =
      filter.conversation === undefined
        ? undefined
        : filter.conversation.startsWith('minimaxcode-')
          ? filter.conversation
          : conversationIdFor(filter.conversation);
    const listed = new StateStore(db).listWarnings({ conversationId, code: filter.code, sinceMs: filter.sinceMs });
    const conversations = listed
      .map((c) => ({ ...c, warnings: c.warnings.filter((w) => w.count > 0) }))
      .filter((c) => c.warnings.length > 0);
    return { conversations, totals: totalsByCode(conversations.flatMap((c) => c.warnings)) };
  } finally {
    db.close();
  }
}

export function renderReport(report: WarningReport): string {
  if (report.conversations.length === 0) return 'No warnings: every conversation read cleanly.';
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
  return lines.join('\n');
}
