import path from 'node:path';
import type { Settings } from '../config/settings.js';
import { totalsByCode, type WarningCode } from '../core/warnings.js';
import { resolveConversationId } from '../store/conversation-ids.js';
import { openDatabase } from '../store/database.js';
import { isDatabaseMissing, openReadonlyDatabase, type Db } from '../store/database-reader.js';
import { conversationIdFor } from '../core/conversation-id.js';
import { SessionMetaStore, type StoredClaim, type WorkspaceFrom } from '../store/session-meta.js';
import { RunStore } from '../store/run-store.js';
import { SessionScopeStore, type ScopeRecord } from '../store/session-scope.js';
import { sessionTitles } from '../store/session-titles.js';
import type { SessionIndexSummary } from '../engine/run-pipeline.js';
import { WarningStore, type ConversationWarnings } from '../store/warning-store.js';
import { TombstoneStore } from '../store/tombstones.js';

export type ReportConversation = ConversationWarnings & { title?: string };
export type ReportScope = ScopeRecord & { title?: string };

/** A session whose workspace sources disagreed: which one won, and every claim with its time. */
export interface WorkspaceDisagreement {
  sessionId: string;
  title?: string;
  workspaceDir?: string;
  from: WorkspaceFrom;
  claims: StoredClaim[];
}

export interface WarningReport {
  conversations: ReportConversation[];
  totals: Partial<Record<WarningCode, number>>;
  /** Sessions the latest read left out because their workspace is excluded. */
  excluded: ReportScope[];
  /** Sessions read whose workspace nobody knows, and why (`rule`): no exclusion could be checked for them. */
  workspaceUnknown: ReportScope[];
  /** Side sessions (peek, channel, cron) and hidden ones left out by default; `rule` names the kind. */
  skippedKinds: ReportScope[];
  /** Sessions whose workspace sources (ledger, session index, hook cwd) disagreed: the later-updated one won. */
  disagreements: WorkspaceDisagreement[];
  /** What the last import or sync learnt from MiniMax Code's session index. */
  sessionIndex?: SessionIndexSummary & { run: 'import' | 'sync'; at: number };
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
export function buildReport(settings: Settings, filter: ReportFilter, opts: { readonly?: boolean } = {}): WarningReport {
  let db: Db;
  try {
    // `readonly` (the viewer): no write lock and no migration, which the viewer did at its start.
    // Either way a missing store is an empty report, never a new store.
    db = opts.readonly ? openReadonlyDatabase(settings.stateDir) : openDatabase(settings.stateDir, { mustExist: true });
  } catch (err) {
    if (isDatabaseMissing(err)) return { conversations: [], totals: {}, excluded: [], workspaceUnknown: [], skippedKinds: [], disagreements: [], forgotten: 0 };
    throw err;
  }
  try {
    const conversationId = filter.conversation === undefined ? undefined : resolveConversationId(db, filter.conversation);
    const listed = new WarningStore(db).list({ conversationId, code: filter.code, sinceMs: filter.sinceMs });
    const warned = listed
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
    const disagreements =
      filter.code === undefined
        ? new SessionMetaStore(db)
            .conflicts()
            .filter((m) => conversationId === undefined || conversationIdFor(m.sessionId) === conversationId)
            .map((m): WorkspaceDisagreement => ({
              sessionId: m.sessionId,
              ...(m.decided === undefined ? {} : { workspaceDir: m.decided }),
              from: m.workspaceFrom ?? 'index',
              claims: m.conflict ?? [],
            }))
        : [];
    const titles = sessionTitles(db, [...warned.flatMap((c) => (c.sessionId ? [c.sessionId] : [])), ...scopes.map((r) => r.sessionId), ...disagreements.map((d) => d.sessionId)]);
    const titled = <T extends { sessionId: string | null }>(r: T): T & { title?: string } => {
      const title = r.sessionId === null ? undefined : titles.get(r.sessionId)?.title;
      return title === undefined ? r : { ...r, title };
    };
    const conversations = warned.map(titled);
    const runs = new RunStore(db);
    const lastIndexRun = [runs.last('import'), runs.last('sync')]
      .filter((r) => r !== undefined)
      .sort((a, b) => b.startedAtMs - a.startedAtMs)
      .find((r) => typeof r.summary?.sessionIndex === 'object');
    return {
      conversations,
      totals: totalsByCode(conversations.flatMap((c) => c.warnings)),
      excluded: scopes.filter((r) => r.status === 'excluded').map(titled),
      workspaceUnknown: scopes.filter((r) => r.status === 'workspace_unknown').map(titled),
      skippedKinds: scopes.filter((r) => r.status === 'kind_skipped').map(titled),
      disagreements: disagreements.map(titled),
      ...(lastIndexRun
        ? { sessionIndex: { ...(lastIndexRun.summary!.sessionIndex as SessionIndexSummary), run: lastIndexRun.kind as 'import' | 'sync', at: lastIndexRun.finishedAtMs ?? lastIndexRun.startedAtMs } }
        : {}),
      forgotten: new TombstoneStore(db).count(),
    };
  } finally {
    db.close();
  }
}

function day(ms: number | undefined): string {
  return ms === undefined ? '-' : new Date(ms).toISOString().slice(0, 10);
}

function titleOf(r: { title?: string }): string {
  return r.title === undefined ? '' : `  ${JSON.stringify(r.title.replace(/\s+/gu, ' ').trim())}`;
}

function when(ms: number | undefined): string {
  return ms === undefined ? 'time unknown' : new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
}

function renderScope(report: WarningReport): string[] {
  const lines: string[] = [];
  if (report.excluded.length > 0) {
    lines.push('', `excluded (${report.excluded.length} session${report.excluded.length === 1 ? '' : 's'}, never read past their workspace, never delivered):`);
    for (const r of report.excluded) lines.push(`    ${r.sessionId}  ${day(r.createdAtMs)}  ${r.workspaceDir ?? '-'}  by ${r.rule ?? '-'}${titleOf(r)}`);
  }
  if (report.workspaceUnknown.length > 0) {
    const n = report.workspaceUnknown.length;
    lines.push(
      '',
      `workspace unknown (${n} session${n === 1 ? '' : 's'}): neither the session files, MiniMax Code's session index nor a hook said where ${n === 1 ? 'it' : 'they'} ran, so EVERME_EXCLUDE and .everme-ignore could not be checked; ${n === 1 ? 'it was' : 'they were'} delivered.`,
    );
    for (const r of report.workspaceUnknown.slice(0, UNKNOWN_SHOWN)) lines.push(`    ${r.sessionId}  ${day(r.createdAtMs)}  ${r.rule ?? ''}`.trimEnd());
    if (n > UNKNOWN_SHOWN) lines.push(`    … and ${n - UNKNOWN_SHOWN} more (--json lists all)`);
  }
  if (report.skippedKinds.length > 0) {
    const n = report.skippedKinds.length;
    const byKind = new Map<string, number>();
    for (const r of report.skippedKinds) byKind.set(r.rule ?? '-', (byKind.get(r.rule ?? '-') ?? 0) + 1);
    // A rule names every name that keeps its session out (`peek,hidden`): the hint names each once.
    const names = new Set([...byKind.keys()].flatMap((rule) => rule.split(',')));
    lines.push(
      '',
      `skipped (${n} session${n === 1 ? '' : 's'}: ${[...byKind].map(([k, c]) => `${k} ${c}`).join(', ')}): side sessions and sessions MiniMax Code hides are not read by default; EVERME_INCLUDE_KINDS=${[...names].join(',')} reads them.`,
    );
    for (const r of report.skippedKinds.slice(0, UNKNOWN_SHOWN)) lines.push(`    ${r.sessionId}  ${day(r.createdAtMs)}  ${r.rule ?? '-'}  ${r.workspaceDir ?? '-'}${titleOf(r)}`);
    if (n > UNKNOWN_SHOWN) lines.push(`    … and ${n - UNKNOWN_SHOWN} more (--json lists all)`);
  }
  if (report.disagreements.length > 0) {
    const n = report.disagreements.length;
    lines.push('', `workspace sources disagree (${n} session${n === 1 ? '' : 's'}; the one updated last is used):`);
    for (const d of report.disagreements) {
      lines.push(`    ${d.sessionId}  ${d.workspaceDir ?? '-'} (from the ${d.from === 'index' ? 'session index' : d.from === 'cwd' ? 'hook cwd' : 'ledger'})${titleOf(d)}`);
      for (const c of d.claims) lines.push(`        ${c.from.padEnd(6)} ${c.dir}  ${when(c.atMs)}`);
    }
  }
  const index = report.sessionIndex;
  if (index?.status === 'unavailable') {
    lines.push('', `session index: unavailable at the last ${index.run} (${index.reason}: ${index.message}): ${index.path}`);
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
    lines.push(`${head}  ${day || '-'}  ${c.workspaceDir ?? '-'}  ${c.source}${file}${titleOf(c)}`);
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
