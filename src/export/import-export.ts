import { createHash } from 'node:crypto';
import { createReadStream, realpathSync } from 'node:fs';
import path from 'node:path';
import { ExclusionPolicy } from '../config/exclude.js';
import { sessionIdOf } from '../core/conversation-id.js';
import { EvermeError } from '../core/errors.js';
import { totalsByCode, WarningCollector, type WarningCode } from '../core/warnings.js';
import type { KeyedMessage } from '../core/agent-message.js';
import { exclusionSource, type Settings } from '../config/settings.js';
import { admitWorkspace, gateAgentMessage } from '../memory/gate.js';
import { openDatabase } from '../store/database.js';
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
}

/** Messages committed per transaction: bounds memory on a large export. */
const BATCH = 500;

async function digestOf(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) hash.update(chunk);
  return hash.digest('hex');
}

/**
 * `everme import --from-export FILE`: a jsonl export into the embedded store, exactly once. A file
 * already imported (same bytes) is recognised by its digest; inside a file, a message the store
 * already holds (same conversation and key) is skipped, so an interrupted import can simply be run
 * again. Forgotten conversations and excluded workspaces stay out here too. A malformed line costs
 * that line (a warning with its line number, never its content).
 */
export async function importExport(settings: Settings, file: string): Promise<ImportExportSummary> {
  // The user named this file: a symlink to it is followed (the transcript reader never follows one).
  let abs = path.resolve(file);
  try {
    abs = realpathSync(abs);
  } catch {
    // reported below, where the file is read
  }
  let digest: string;
  try {
    digest = await digestOf(abs);
  } catch (err) {
    throw new EvermeError('invalid_args', `Cannot read the export ${abs}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, {
      hint: 'Pass the .jsonl file `everme export --format jsonl` wrote.',
    });
  }
  const db = openDatabase(settings.stateDir);
  const summary: ImportExportSummary = { file: abs, alreadyImported: false, conversations: 0, messages: 0, skipped: { forgotten: 0, excluded: 0 }, warnings: {} };
  try {
    const seen = db.prepare<[string], number>('SELECT 1 FROM imported_exports WHERE digest = ?').pluck();
    if (seen.get(digest) !== undefined) return { ...summary, alreadyImported: true };

    const store = new LocalStore(db);
    const tombstones = new TombstoneStore(db);
    const policy = await ExclusionPolicy.load(settings.exclude, undefined, exclusionSource(settings));
    const warnings = new WarningCollector();
    const name = path.basename(abs);

    /** Per conversation: whether it is taken, decided at its first line. */
    const decided = new Map<string, boolean>();
    let pending: { conversation: ConversationMeta; messages: KeyedMessage[] } | undefined;
    const commit = db.transaction((p: { conversation: ConversationMeta; messages: KeyedMessage[] }) => {
      store.upsertConversation(p.conversation);
      summary.messages += store.appendMessages(p.conversation.conversationId, p.messages);
    });
    const flush = (): void => {
      if (pending && pending.messages.length > 0) commit.immediate(pending);
      if (pending) pending.messages = [];
    };

    // An export is a finished file: its last line counts even without a newline, and a line over
    // the cap is reported, never dropped in silence.
    const lines = readLines(abs, { finished: true, report: (code, line) => warnings.add(code, { file: name, line }) });
    for await (const { line, lineNo } of lines) {
      let json: unknown;
      try {
        json = JSON.parse(line);
      } catch {
        warnings.add('invalid_json', { file: name, line: lineNo });
        continue;
      }
      const parsed = exportLineSchema.safeParse(json);
      if (!parsed.success) {
        warnings.add('invalid_record', { file: name, line: lineNo });
        continue;
      }
      const { conversationId, conversation, key, message } = parsed.data;
      if (pending?.conversation.conversationId !== conversationId) {
        flush();
        let take = decided.get(conversationId);
        if (take === undefined) {
          const workspaceDir = conversation?.workspaceDir;
          if (tombstones.isForgotten(conversationId)) {
            take = false;
            summary.skipped.forgotten++;
          } else if (!admitWorkspace(policy, workspaceDir).admitted) {
            take = false;
            summary.skipped.excluded++;
          } else {
            take = true;
            summary.conversations++;
          }
          decided.set(conversationId, take);
        }
        pending = take
          ? {
              conversation: conversation
                ? { conversationId, ...conversation }
                : { conversationId, sessionId: sessionIdOf(conversationId) ?? conversationId, source: 'messages' },
              messages: [],
            }
          : undefined;
        if (!pending) continue;
      }
      // Re-import is an import: the file's text passes the same gate as a session's (a file written
      // by hand or by another tool may hold private spans or credentials).
      const gated = gateAgentMessage(canonicalMessage(message));
      if (gated.capped) warnings.add('oversized_unit', { file: name, line: lineNo });
      if (gated.message) pending.messages.push({ key, message: gated.message });
      if (pending.messages.length >= BATCH) flush();
    }
    flush();
    summary.warnings = totalsByCode(warnings.entries());
    db.prepare<[string, number, number, number]>('INSERT INTO imported_exports (digest, conversations, messages, imported_at_ms) VALUES (?, ?, ?, ?)').run(
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
