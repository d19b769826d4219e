import { lstatSync } from 'node:fs';
import { entryPath } from '../core/entry-path.js';
import type { WarningCollector } from '../core/warnings.js';
import { keyLedgerHistory, LEDGER_FILE, readLedger, withLegacyKeys } from './ledger-replay.js';
import type { ReadLinesOptions } from './line-reader.js';
import { MESSAGES_FILE, readMessagesHistory } from './messages-history.js';
import type { HistoryItem, HistorySource, SessionRef } from './types.js';

export interface HistoryFileStat {
  size: number;
  mtimeMs: number;
  ino: number;
  dev: number;
}

export interface HistoryFileChoice {
  source: HistorySource;
  /** Absolute path of the chosen file; absent for `none`. */
  file?: string;
  /** The chosen file relative to the session directory, as warnings name it. */
  relFile?: string;
  /** The file as it was when chosen, so a caller can tell growth from replacement. */
  stat?: HistoryFileStat;
}

function fileStat(file: string): (HistoryFileStat & { regular: boolean }) | undefined {
  try {
    // lstat: a symlink is chosen as itself, so that reading it reports `symlinked_file` instead of
    // following it to a file outside the session (or silently falling back to another file). A
    // missing file is answered without an exception: every ledger-era session has no messages.jsonl,
    // and a no-op sync asks this of every session.
    const s = lstatSync(file, { throwIfNoEntry: false });
    if (s === undefined || !(s.isFile() || s.isSymbolicLink())) return undefined;
    return { size: s.size, mtimeMs: s.mtimeMs, ino: s.ino, dev: s.dev, regular: s.isFile() };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw err;
  }
}

export interface ChooseOptions {
  /**
   * The session had history (something of it was delivered): an existing but empty messages.jsonl,
   * with no ledger to fall back on, is then that history emptied by a rewind to before its first
   * message, read as empty so that what was delivered goes; otherwise it is a session not begun.
   */
  emptied?: boolean;
}

export interface HistoryOptions extends ChooseOptions {
  /**
   * Give a ledger message the key an earlier release gave it (`HistoryItem.legacyKey`) where it
   * differs: asked for when something was delivered, whose marks may be under those keys.
   */
  legacyKeys?: boolean;
}

/**
 * messages.jsonl when it has bytes (the runtime creates it empty), else ledger.jsonl, else nothing yet
 * (or, `emptied`, the empty messages.jsonl). Decided by the files in the directory, never by the
 * manifest's declared (absolute) paths or its era. Two stats; synchronous so that opening a history
 * needs no await.
 */
export function chooseHistoryFile(sessionDir: string, opts: ChooseOptions = {}): HistoryFileChoice {
  let emptyMessages: HistoryFileChoice | undefined;
  for (const [source, relFile] of [
    ['messages', MESSAGES_FILE],
    ['ledger', LEDGER_FILE],
  ] as const) {
    const file = entryPath(sessionDir, relFile);
    const found = fileStat(file);
    if (found === undefined) continue;
    const { regular, ...stat } = found;
    if (stat.size > 0) return { source, file, relFile, stat };
    if (source === 'messages' && regular) emptyMessages = { source, file, relFile, stat };
  }
  return (opts.emptied ? emptyMessages : undefined) ?? { source: 'none' };
}

export interface SessionHistory extends HistoryFileChoice {
  /**
   * The effective history, oldest first. Each call reads the file again. Warnings go to the
   * collector given to `openSessionHistory`.
   */
  items(): AsyncIterable<HistoryItem>;
  /** The project directory (ledger sessions only); known once `items()` has been read to the end. */
  workspaceDir(): string | undefined;
}

/** Chooses the file now (see `chooseHistoryFile`); reading starts when `items()` is iterated. */
export function openSessionHistory(
  session: SessionRef,
  warnings: WarningCollector,
  opts: ReadLinesOptions = {},
  choose: HistoryOptions = {},
): SessionHistory {
  const choice = chooseHistoryFile(session.dir, choose);
  let workspaceDir: string | undefined;

  async function* items(): AsyncGenerator<HistoryItem> {
    if (choice.source === 'messages') {
      yield* readMessagesHistory(session.dir, warnings, opts);
    } else if (choice.source === 'ledger' && choice.file && choice.relFile) {
      let replay;
      try {
        replay = await readLedger(choice.file, choice.relFile, session.sessionId, warnings, opts);
      } catch (err) {
        // The session was deleted since its file was chosen: it simply has nothing to read.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw err;
      }
      workspaceDir = replay.workspaceDir;
      const items = keyLedgerHistory(session.sessionId, replay.history, choice.relFile);
      if (choose.legacyKeys && replay.carried) withLegacyKeys(session.sessionId, replay.history, items);
      yield* items;
    }
  }

  return {
    ...choice,
    items,
    workspaceDir: () => workspaceDir,
  };
}
