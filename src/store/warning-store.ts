import type Database from 'better-sqlite3';
import * as z from 'zod';
import type { SinkName } from '../config/settings.js';
import { EvermeError } from '../core/errors.js';
import { WARNING_CODES, WarningCollector, type WarningEntry } from '../core/warnings.js';
import { parseJsonColumn } from './json-column.js';
import { withinTransaction } from './within-transaction.js';

export interface WarningOwner {
  conversationId: string | null;
  sessionId: string | null;
  /** 'messages' | 'ledger' | 'none' | 'manifest' | 'directory' (a directory of the walk that could not be listed) */
  source: string;
  historyFile?: string;
  sessionDir?: string;
  createdAtMs?: number;
  workspaceDir?: string;
}

export interface ConversationWarnings extends WarningOwner {
  warnings: WarningEntry[];
}

export interface WarningFilter {
  conversationId?: string;
  code?: string;
  /** Conversations created at or after this instant (when unknown: recorded at or after it). */
  sinceMs?: number;
}

const samplesSchema = z.array(z.object({ file: z.string(), line: z.number().int() }));
const warningCodeSchema = z.enum(WARNING_CODES);

interface WarningRow {
  id: number;
  conversation_id: string | null;
  session_id: string | null;
  source: string;
  history_file: string | null;
  session_dir: string | null;
  created_at_ms: number | null;
  workspace_dir: string | null;
  code: string;
  count: number;
  samples_json: string;
}

interface WarningSetParams {
  setKey: string;
  conversationId: string | null;
  sessionId: string | null;
  source: string;
  historyFile: string | null;
  sessionDir: string | null;
  createdAtMs: number | null;
  workspaceDir: string | null;
  recordedAtMs: number;
}

interface WarningFilterParams {
  conversationId: string | null;
  code: string | null;
  sinceMs: number | null;
}

/**
 * The set a warning list is recorded under: a conversation's reader warnings (`c:`), what one sink
 * noticed delivering it (`c:<id>#<sink>`: each sink writes its own, so two sinks committing at
 * different moments never overwrite each other's), or a session dir without a conversation (`d:`).
 */
function setKeyFor(owner: WarningOwner, sink: SinkName | undefined): string {
  if (owner.conversationId !== null) return sink === undefined ? `c:${owner.conversationId}` : `c:${owner.conversationId}#${sink}`;
  if (owner.sessionDir && sink === undefined) return `d:${owner.sessionDir}`;
  throw new EvermeError('internal', 'Warnings need a conversation id or a session directory to be recorded under');
}

/** Warnings recorded per conversation (or session dir) by the latest read: counts and line samples, never content. */
export class WarningStore {
  private readonly stmts;
  private readonly inTransaction: (fn: () => void) => void;

  constructor(db: Database.Database) {
    this.inTransaction = withinTransaction(db);
    // A set recorded for the same session dir without a conversation goes too (a manifest that was
    // invalid and is now readable); another conversation's or sink's set never does.
    const matching = 'set_key = @setKey OR (@sessionDir IS NOT NULL AND session_dir = @sessionDir AND conversation_id IS NULL)';
    this.stmts = {
      deleteEntries: db.prepare<{ setKey: string; sessionDir: string | null }>(`DELETE FROM warning_entries WHERE set_id IN (SELECT id FROM warning_sets WHERE ${matching})`),
      deleteSets: db.prepare<{ setKey: string; sessionDir: string | null }>(`DELETE FROM warning_sets WHERE ${matching}`),
      insertSet: db.prepare<WarningSetParams>(
        `INSERT INTO warning_sets (set_key, conversation_id, session_id, source, history_file, session_dir, created_at_ms, workspace_dir, recorded_at_ms)
         VALUES (@setKey, @conversationId, @sessionId, @source, @historyFile, @sessionDir, @createdAtMs, @workspaceDir, @recordedAtMs)`,
      ),
      insertEntry: db.prepare<[number | bigint, string, number, string]>('INSERT INTO warning_entries (set_id, code, count, samples_json) VALUES (?, ?, ?, ?)'),
      dirsOf: db.prepare<[string], { session_dir: string }>('SELECT session_dir FROM warning_sets WHERE source = ? AND conversation_id IS NULL AND session_dir IS NOT NULL'),
      list: db.prepare<WarningFilterParams, WarningRow>(
        `SELECT s.id, s.conversation_id, s.session_id, s.source, s.history_file, s.session_dir, s.created_at_ms,
                s.workspace_dir, e.code, e.count, e.samples_json
         FROM warning_sets s JOIN warning_entries e ON e.set_id = s.id
         WHERE (@conversationId IS NULL OR s.conversation_id = @conversationId)
           AND (@code IS NULL OR e.code = @code)
           AND (@sinceMs IS NULL OR coalesce(s.created_at_ms, s.recorded_at_ms) >= @sinceMs)
         ORDER BY s.created_at_ms IS NULL, s.created_at_ms, s.id`,
      ),
    };
  }

  /**
   * Replaces everything recorded for this conversation (or, without an id, this session dir) with
   * `entries`: counts describe the latest read, never a sum over runs, and an empty list clears.
   * With `sink`, only that sink's own set (what it noticed delivering) is replaced.
   */
  replace(owner: WarningOwner, entries: WarningEntry[], sink?: SinkName): void {
    const setKey = setKeyFor(owner, sink);
    const merged = new WarningCollector();
    merged.merge(entries.filter((e) => e.count > 0));
    const sessionDir = owner.sessionDir ?? null;
    this.inTransaction(() => {
      this.stmts.deleteEntries.run({ setKey, sessionDir });
      this.stmts.deleteSets.run({ setKey, sessionDir });
      if (merged.size === 0) return;
      const { lastInsertRowid } = this.stmts.insertSet.run({
        setKey,
        conversationId: owner.conversationId,
        sessionId: owner.sessionId,
        source: owner.source,
        historyFile: owner.historyFile ?? null,
        sessionDir,
        createdAtMs: owner.createdAtMs ?? null,
        workspaceDir: owner.workspaceDir ?? null,
        recordedAtMs: Date.now(),
      });
      for (const entry of merged.entries()) this.stmts.insertEntry.run(lastInsertRowid, entry.code, entry.count, JSON.stringify(entry.samples));
    });
  }

  /** The directories with warnings recorded from this source and no conversation (`source: 'directory'`). */
  dirsOf(source: string): string[] {
    return this.stmts.dirsOf.all(source).map((row) => row.session_dir);
  }

  /**
   * Conversations with warnings, oldest first (creation time, then insertion), entries in code order.
   * A conversation's sets (the reader's and each sink's) are listed as one.
   */
  list(filter: WarningFilter = {}): ConversationWarnings[] {
    const rows = this.stmts.list.all({ conversationId: filter.conversationId ?? null, code: filter.code ?? null, sinceMs: filter.sinceMs ?? null });
    const byOwner = new Map<string, { owner: ConversationWarnings; collector: WarningCollector }>();
    for (const row of rows) {
      const code = warningCodeSchema.safeParse(row.code);
      if (!code.success) continue;
      const samples: WarningEntry['samples'] = parseJsonColumn(row.samples_json, samplesSchema) ?? [];
      const ownerKey = row.conversation_id === null ? `s:${row.id}` : `c:${row.conversation_id}`;
      let set = byOwner.get(ownerKey);
      if (!set) {
        set = { owner: ownerOf(row), collector: new WarningCollector() };
        byOwner.set(ownerKey, set);
      }
      set.collector.merge([{ code: code.data, count: row.count, samples }]);
    }
    // The collector lists its entries in the contract's code order.
    return [...byOwner.values()].map(({ owner, collector }) => ({ ...owner, warnings: collector.entries() }));
  }
}

function ownerOf(row: WarningRow): ConversationWarnings {
  const set: ConversationWarnings = { conversationId: row.conversation_id, sessionId: row.session_id, source: row.source, warnings: [] };
  if (row.history_file !== null) set.historyFile = row.history_file;
  if (row.session_dir !== null) set.sessionDir = row.session_dir;
  if (row.created_at_ms !== null) set.createdAtMs = row.created_at_ms;
  if (row.workspace_dir !== null) set.workspaceDir = row.workspace_dir;
  return set;
}
