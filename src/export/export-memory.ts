import { createWriteStream, type WriteStream } from 'node:fs';
import path from 'node:path';
import { EvermeError, stdoutUnwritable } from '../core/errors.js';
import { makeDirs, PRIVATE_DIR_MODE } from '../core/private-dir.js';
import type { Settings } from '../config/settings.js';
import { resolveConversationId } from '../store/conversation-ids.js';
import { openDatabase } from '../store/database.js';
import { ExportReader, type ExportFilter } from '../store/export-reader.js';
import { conversationMeta, exportLine } from './export-line.js';
import { MarkdownFileNames, markdownHeader, markdownMessage } from './markdown.js';

export type ExportFormat = 'jsonl' | 'markdown';

/** The jsonl export's file name when `--out` names a directory. */
export const JSONL_FILE = 'everme-export.jsonl';

export interface ExportProgress {
  conversationsTotal: number;
  conversationsDone: number;
  messages: number;
  bytes: number;
}

export interface ExportOptions {
  format: ExportFormat;
  filter: ExportFilter;
  /** A directory, or `-` for stdout (jsonl only). */
  out: string;
  signal?: AbortSignal;
  onProgress?: (p: ExportProgress) => void;
}

export interface ExportSummary {
  format: ExportFormat;
  conversations: number;
  messages: number;
  bytes: number;
  /** Where it went: `-` (stdout), or the files written. */
  out: string;
  files: string[];
}

/** A stream that is waited for when its buffer is full: memory stays bounded whatever the consumer's pace. */
class Output {
  bytes = 0;
  /** The reader went away (`everme export | head`): like any Unix filter, stop quietly. */
  closed = false;

  constructor(private readonly stream: NodeJS.WritableStream, private readonly owned: boolean) {
    if (!owned) {
      stream.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'EPIPE') this.closed = true;
      });
    }
  }

  static file(file: string): Output {
    return new Output(createWriteStream(file, { mode: 0o600 }), true);
  }

  async write(text: string): Promise<void> {
    if (this.closed) return;
    this.bytes += Buffer.byteLength(text);
    if (!this.stream.write(text)) {
      await new Promise<void>((resolve, reject) => {
        const done = (): void => {
          this.stream.off('error', onError);
          this.stream.off('drain', done);
          resolve();
        };
        const onError = (err: NodeJS.ErrnoException): void => {
          this.stream.off('drain', done);
          if (err.code === 'EPIPE') {
            this.closed = true;
            resolve();
          } else reject(this.owned ? err : stdoutUnwritable(err));
        };
        this.stream.once('error', onError);
        this.stream.once('drain', done);
      });
    }
  }

  async close(): Promise<void> {
    if (!this.owned) return;
    const stream = this.stream as WriteStream;
    await new Promise<void>((resolve, reject) => {
      stream.once('error', reject);
      stream.end(() => resolve());
    });
  }
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new EvermeError('cancelled', 'Interrupted: the export is incomplete');
}

/**
 * `everme export`: the embedded store's conversations as jsonl (the gateway's message shape, one per
 * line) or markdown (one file per conversation). Reads one page at a time inside one read
 * transaction (a consistent snapshot, even while a hook worker writes), so the same store always
 * gives the same bytes and memory does not grow with the store.
 */
export async function exportMemory(settings: Settings, opts: ExportOptions): Promise<ExportSummary> {
  if (opts.format === 'markdown' && opts.out === '-') {
    throw new EvermeError('invalid_args', 'A markdown export is one file per conversation', { hint: 'Pass --out DIR.' });
  }
  const db = openDatabase(settings.stateDir, { readonly: true });
  const summary: ExportSummary = { format: opts.format, conversations: 0, messages: 0, bytes: 0, out: opts.out, files: [] };
  try {
    db.exec('BEGIN');
    // `--conversation ID` means the id as it was shown (a re-imported id keeps its own form).
    const filter: ExportFilter =
      opts.filter.conversationId === undefined ? opts.filter : { ...opts.filter, conversationId: resolveConversationId(db, opts.filter.conversationId) };
    const reader = new ExportReader(db);
    const progress: ExportProgress = { conversationsTotal: 0, conversationsDone: 0, messages: 0, bytes: 0 };
    if (opts.onProgress) progress.conversationsTotal = reader.count(filter);
    // Not mkdirSync's `recursive`, which never returns under a path the kernel refuses oddly
    // (`--out /proc/1/x` spun a core until killed): one mkdir a component, any refusal thrown.
    if (opts.out !== '-') makeDirs(opts.out, PRIVATE_DIR_MODE);

    let shared: Output | undefined;
    const names = new MarkdownFileNames();
    if (opts.format === 'jsonl') {
      shared = opts.out === '-' ? new Output(process.stdout, false) : Output.file(path.join(opts.out, JSONL_FILE));
      if (opts.out !== '-') summary.files.push(path.join(opts.out, JSONL_FILE));
    }
    try {
      for (const conversation of reader.conversations(filter)) {
        throwIfAborted(opts.signal);
        if (shared?.closed) break;
        let output = shared;
        if (!output) {
          const file = path.join(opts.out, names.next(conversation.conversationId));
          summary.files.push(file);
          output = Output.file(file);
          await output.write(markdownHeader(conversation));
        }
        let first = true;
        for (const page of reader.messages(conversation.conversationId)) {
          for (const { key, message } of page) {
            if (opts.format === 'jsonl') {
              await output.write(
                exportLine({ conversationId: conversation.conversationId, ...(first ? { conversation: conversationMeta(conversation) } : {}), key, message }),
              );
            } else {
              await output.write(markdownMessage(message));
            }
            first = false;
            summary.messages++;
          }
          progress.messages = summary.messages;
        }
        if (output !== shared) {
          await output.close();
          summary.bytes += output.bytes;
        }
        summary.conversations++;
        progress.conversationsDone = summary.conversations;
        progress.bytes = summary.bytes + (shared?.bytes ?? 0);
        opts.onProgress?.(progress);
      }
    } finally {
      if (shared) {
        await shared.close();
        summary.bytes += shared.bytes;
      }
    }
    return summary;
  } finally {
    if (db.inTransaction) db.exec('COMMIT');
    db.close();
  }
}
