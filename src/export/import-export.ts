import { createHash } from 'node:crypto';
import { createReadStream, realpathSync } from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import type * as z from 'zod';
import { ExclusionPolicy } from '../config/exclude.js';
import { sessionIdOf } from '../core/conversation-id.js';
import { EvermeError } from '../core/errors.js';
import { holdsCredential, redactText } from '../core/redact.js';
import { totalsByCode, WarningCollector, type WarningCode, type WarningEntry } from '../core/warnings.js';
import type { KeyedMessage } from '../core/agent-message.js';
import { exclusionSource, type Settings } from '../config/settings.js';
import { admitWorkspace, gateAgentMessage } from '../memory/gate.js';
import { openDatabase } from '../store/database.js';
import { SessionMetaStore, type IndexFacts } from '../store/session-meta.js';
import { LocalStore } from '../store/local-store.js';
import { TombstoneStore } from '../store/tombstones.js';
import type { ConversationMeta } from '../store/store-types.js';
import { readLines } from '../transcript/line-reader.js';
import { canonicalMessage, exportLineSchema } from './export-line.js';

export interface ImportExportSummary {
  file: string;
  /** The same file (by content) was imported before: nothing was read or written. */
  alreadyImported: boolean;
  conversations: number;
  /** Messages new to the store (a message it already held is not counted or written twice). */
  messages: number;
  /** Conversations left out: forgotten here, or of an excluded workspace. */
  skipped: { forgotten: number; excluded: number };
  warnings: Partial<Record<WarningCode, number>>;
  /** The lines each warning was raised at, the first MAX_WARNING_SAMPLES of each (as `report` samples them). */
  warningLines: Partial<Record<WarningCode, number[]>>;
}

type Db = Database.Database;

/** Messages committed per transaction: bounds memory on a large export. */
const BATCH = 500;

async function digestOf(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) hash.update(chunk);
  return hash.digest('hex');
}

function factsOf(c: { title?: string; kind?: string; parentSessionId?: string }): { facts?: IndexFacts } {
  const facts: IndexFacts = {};
  if (c.title !== undefined) facts.title = c.title;
  if (c.kind !== undefined) facts.kind = c.kind;
  if (c.parentSessionId !== undefined) facts.parentSessionId = c.parentSessionId;
  return Object.keys(facts).length > 0 ? { facts } : {};
}

/** The export the user named, with the digest that tells a file imported before. */
async function locateExport(file: string): Promise<{ abs: string; digest: string }> {
  // The user named this file: a symlink to it is followed (the transcript reader never follows one).
  let abs = path.resolve(file);
  try {
    abs = realpathSync(abs);
  } catch {
    // reported below, where the file is read
  }
  try {
    return { abs, digest: await digestOf(abs) };
  } catch (err) {
    throw new EvermeError('invalid_args', `Cannot read the export ${abs}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, {
      hint: 'Pass the .jsonl file `everme export --format jsonl` wrote.',
    });
  }
}

type ExportLine = z.infer<typeof exportLineSchema>;
type ConversationLine = Pick<ExportLine, 'conversationId' | 'conversation'>;
/** A line read: its message is absent when the line was refused but its conversation's metadata was not. */
type ReadLine = ConversationLine & Partial<Pick<ExportLine, 'key' | 'message'>>;

const conversationLineSchema = exportLineSchema.pick({ conversationId: true, conversation: true });

/**
 * One line of the file, or undefined after its warning: a malformed line costs that line only. A
 * refused message (a role of a newer release, say) still gives its conversation's metadata: it is
 * what decides whether the conversation's workspace is excluded, and the next lines carry none.
 */
function parseExportLine(line: string, warn: (code: WarningCode) => void): ReadLine | undefined {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    warn('invalid_json');
    return undefined;
  }
  const parsed = exportLineSchema.safeParse(json);
  // An id is stored and shown as it is, so one that holds a credential cannot be masked: its line
  // is refused (an everme export never writes one; a file written by hand or another tool may).
  if (parsed.success && !idsOf(parsed.data).some(holdsCredential)) return withMaskedMeta(parsed.data);
  warn('invalid_record');
  if (parsed.success) return undefined;
  const meta = conversationLineSchema.safeParse(json);
  if (!meta.success || !meta.data.conversation || conversationIdsOf(meta.data).some(holdsCredential)) return undefined;
  return withMaskedMeta(meta.data);
}

/** The line's ids: the conversation's, the message's key, its session's and parent's, its tool calls'. */
function idsOf(line: ExportLine): string[] {
  const { key, message } = line;
  const ids = [...conversationIdsOf(line), key];
  if (message.role === 'tool') ids.push(message.toolCallId);
  if (message.role === 'assistant') for (const call of message.toolCalls ?? []) ids.push(call.id);
  return ids;
}

/** The conversation's id, its session's and parent's. */
function conversationIdsOf({ conversationId, conversation }: ConversationLine): string[] {
  const ids = [conversationId];
  if (conversation) ids.push(conversation.sessionId, ...(conversation.parentSessionId === undefined ? [] : [conversation.parentSessionId]));
  return ids;
}

/** The conversation's workspace, history file and kind, masked like its text (the title is masked where it is recorded). */
function withMaskedMeta<L extends ConversationLine>(line: L): L {
  const c = line.conversation;
  if (!c) return line;
  const masked = { ...c };
  if (c.workspaceDir !== undefined) masked.workspaceDir = redactText(c.workspaceDir);
  if (c.historyFile !== undefined) masked.historyFile = redactText(c.historyFile);
  if (c.kind !== undefined) masked.kind = redactText(c.kind);
  return { ...line, conversation: masked };
}

/** A conversation being read: its messages wait here until a batch is full or the conversation ends. */
interface Pending {
  conversation: ConversationMeta;
  messages: KeyedMessage[];
  facts?: IndexFacts;
  /** No line of the file named its metadata: what `conversation` says is made up, and never replaces what the store holds. */
  unnamed: boolean;
}

function pendingFor(conversationId: string, conversation: ExportLine['conversation']): Pending {
  return {
    conversation: conversation ? { conversationId, ...conversation } : { conversationId, sessionId: sessionIdOf(conversationId) ?? conversationId, source: 'messages' },
    messages: [],
    ...(conversation ? factsOf(conversation) : {}),
    unnamed: conversation === undefined,
  };
}

/** Whether a conversation is taken, decided at its first line: forgotten and excluded ones stay out, and are counted. */
async function conversationGate(db: Db, settings: Settings, summary: ImportExportSummary): Promise<(conversationId: string, workspaceDir: string | undefined) => boolean> {
  const tombstones = new TombstoneStore(db);
  const policy = await ExclusionPolicy.load(settings.exclude, undefined, exclusionSource(settings));
  const decided = new Map<string, boolean>();
  return (conversationId, workspaceDir) => {
    const known = decided.get(conversationId);
    if (known !== undefined) return known;
    let take = false;
    if (tombstones.isForgotten(conversationId)) summary.skipped.forgotten++;
    else if (!admitWorkspace(policy, workspaceDir).admitted) summary.skipped.excluded++;
    else {
      take = true;
      summary.conversations++;
    }
    decided.set(conversationId, take);
    return take;
  };
}

/** Commits what a conversation has pending, in one transaction, and counts the messages new to the store. */
function pendingWriter(db: Db, summary: ImportExportSummary): (pending: Pending | undefined) => void {
  const store = new LocalStore(db);
  const meta = new SessionMetaStore(db);
  const stored = db.prepare<[string], number>('SELECT 1 FROM conversations WHERE conversation_id = ?').pluck();
  const commit = db.transaction((p: Pending) => {
    if (!p.unnamed || stored.get(p.conversation.conversationId) === undefined) store.upsertConversation(p.conversation);
    // The title, kind and parent the exporting machine knew, unless this one knows the session itself.
    if (p.facts && meta.get(p.conversation.sessionId)?.index === undefined) meta.recordIndex(p.conversation.sessionId, p.facts);
    summary.messages += store.appendMessages(p.conversation.conversationId, p.messages);
  });
  return (pending) => {
    if (pending && pending.messages.length > 0) commit.immediate(pending);
    if (pending) pending.messages = [];
  };
}

function interrupted(): EvermeError {
  return new EvermeError('cancelled', 'Interrupted: the lines read so far are committed; run the same command again to continue');
}

/** One turn of the event loop: the only place a Ctrl-C's handler can run while the file is read. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Every line of the file into the store, through the gate, a batch at a time. */
async function loadLines(abs: string, db: Db, settings: Settings, summary: ImportExportSummary, signal: AbortSignal | undefined): Promise<void> {
  const warnings = new WarningCollector();
  const name = path.basename(abs);
  const taken = await conversationGate(db, settings, summary);
  if (signal?.aborted) throw interrupted();
  const flush = pendingWriter(db, summary);
  let pending: Pending | undefined;
  // Each conversation's metadata as the file named it, for its lines that come back after another
  // conversation's (an export names it on the first line only).
  const named = new Map<string, NonNullable<ExportLine['conversation']>>();
  let linesRead = 0;
  // An export is a finished file: its last line counts even without a newline, and a line over
  // the cap is reported, never dropped in silence.
  const lines = readLines(abs, { finished: true, signal, report: (code, line) => warnings.add(code, { file: name, line }) });
  for await (const { line, lineNo } of lines) {
    // The reader reads with synchronous calls, so Ctrl-C is let in once every BATCH lines (not on
    // each line). What was read is committed (a re-run skips it by key); the file is not marked done.
    if (signal && ++linesRead % BATCH === 0) {
      await nextTurn();
      if (signal.aborted) {
        flush(pending);
        throw interrupted();
      }
    }
    const parsed = parseExportLine(line, (code) => warnings.add(code, { file: name, line: lineNo }));
    if (!parsed) continue;
    const { conversationId, key, message } = parsed;
    if (parsed.conversation && !named.has(conversationId)) named.set(conversationId, parsed.conversation);
    const conversation = parsed.conversation ?? named.get(conversationId);
    if (pending?.conversation.conversationId !== conversationId) {
      flush(pending);
      pending = taken(conversationId, conversation?.workspaceDir) ? pendingFor(conversationId, conversation) : undefined;
      if (!pending) continue;
    }
    if (key === undefined || message === undefined) continue;
    // Re-import is an import: the file's text passes the same gate as a session's (a file written
    // by hand or by another tool may hold private spans or credentials).
    const gated = gateAgentMessage(canonicalMessage(message));
    if (gated.capped) warnings.add('oversized_unit', { file: name, line: lineNo });
    if (gated.message) pending.messages.push({ key, message: gated.message });
    if (pending.messages.length >= BATCH) flush(pending);
  }
  flush(pending);
  summary.warnings = totalsByCode(warnings.entries());
  summary.warningLines = linesByCode(warnings.entries());
}

function linesByCode(entries: readonly WarningEntry[]): Partial<Record<WarningCode, number[]>> {
  const lines: Partial<Record<WarningCode, number[]>> = {};
  for (const entry of entries) lines[entry.code] = entry.samples.map((s) => s.line);
  return lines;
}

/**
 * `everme import --from-export FILE`: a jsonl export into the embedded store, exactly once. A file
 * already imported (same bytes) is recognised by its digest; inside a file, a message the store
 * already holds (same conversation and key) is skipped, so an interrupted import can simply be run
 * again; `again` reads a file loaded before all the same. Forgotten conversations and excluded
 * workspaces stay out here too. A malformed line costs
 * that line (a warning with its line number, never its content).
 */
export async function importExport(settings: Settings, file: string, opts: { again?: boolean; signal?: AbortSignal } = {}): Promise<ImportExportSummary> {
  const { abs, digest } = await locateExport(file);
  const db = openDatabase(settings.stateDir);
  const summary: ImportExportSummary = { file: abs, alreadyImported: false, conversations: 0, messages: 0, skipped: { forgotten: 0, excluded: 0 }, warnings: {}, warningLines: {} };
  try {
    const seen = db.prepare<[string], number>('SELECT 1 FROM imported_exports WHERE digest = ?').pluck();
    // `again`: read a file loaded before (a conversation of it forgotten and undone comes back).
    if (!opts.again && seen.get(digest) !== undefined) return { ...summary, alreadyImported: true };
    await loadLines(abs, db, settings, summary, opts.signal);
    db.prepare<[string, number, number, number]>(
      `INSERT INTO imported_exports (digest, conversations, messages, imported_at_ms) VALUES (?, ?, ?, ?)
       ON CONFLICT (digest) DO UPDATE SET conversations = excluded.conversations, messages = excluded.messages, imported_at_ms = excluded.imported_at_ms`,
    ).run(
      digest,
      summary.conversations,
      summary.messages,
      Date.now(),
    );
    return summary;
  } finally {
    db.close();
  }
}
