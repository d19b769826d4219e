import { stat } from 'node:fs/promises';
import path from 'node:path';
import * as z from 'zod';
import { isRecord } from '../core/json.js';
import type { WarningCollector } from '../core/warnings.js';
import { readLines, type Line, type LineReaderReport, type ReadLinesOptions, type ReadLinesResult } from './line-reader.js';
import type { HistoryItem } from './types.js';

export const MESSAGES_FILE = 'messages.jsonl';
export const SNAPSHOTS_DIR = 'snapshots';

const jsonObject = z.custom<Record<string, unknown>>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  'expected an object',
);

/** One line of messages.jsonl or of a snapshot: exactly the runtime's envelope, unknown keys ignored. */
export const envelopeSchema = z.looseObject({
  message_id: z.string().min(1),
  turn_id: z.string(),
  message: jsonObject,
  turn_config: z.unknown().optional(),
  history_artifact: z.unknown().optional(),
});

export type Envelope = z.infer<typeof envelopeSchema>;

/** compactionId becomes part of a path: only plain name characters, so it cannot climb out of snapshots/. */
const historyArtifactSchema = z.looseObject({
  parentSnapshot: z
    .looseObject({
      generation: z.int().nonnegative(),
      compactionId: z.string().regex(/^[A-Za-z0-9_-][A-Za-z0-9._-]*$/),
    })
    .optional(),
});

/** Runtime bookkeeping stored beside the conversation; never part of it. */
const NON_CONVERSATION_ROLES = new Set(['compactionSummary', 'custom']);

export function snapshotFileName(generation: number, compactionId: string): string {
  return `g${String(generation).padStart(12, '0')}--${compactionId}.jsonl`;
}

interface Located {
  envelope: Envelope;
  lineNo: number;
}

/**
 * The envelope when `json` plainly is one: checks exactly what `envelopeSchema` checks, without
 * its cost on every line of a cold import. Anything else goes to the schema, which decides.
 */
export function quickEnvelope(json: unknown): Envelope | undefined {
  if (!isRecord(json)) return undefined;
  const id = json['message_id'];
  if (typeof id !== 'string' || id.length === 0 || typeof json['turn_id'] !== 'string' || !isRecord(json['message'])) return undefined;
  // The loose schema would return a copy of this very object: nothing else is checked.
  return json as Envelope;
}

/** Returns the envelope, or `undefined` after counting why the line was dropped. */
function parseEnvelope(line: Line, relFile: string, warnings: WarningCollector | undefined): Envelope | undefined {
  let json: unknown;
  try {
    json = JSON.parse(line.line);
  } catch {
    warnings?.add('invalid_json', { file: relFile, line: line.lineNo });
    return undefined;
  }
  const quick = quickEnvelope(json);
  if (quick) return quick;
  const parsed = envelopeSchema.safeParse(json);
  if (!parsed.success) {
    warnings?.add('invalid_record', { file: relFile, line: line.lineNo });
    return undefined;
  }
  return parsed.data;
}

async function exists(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw err;
  }
}

/** The first valid envelope of a file, read silently: the full pass over the file reports its problems. */
async function peekFirstEnvelope(file: string, opts: ReadLinesOptions): Promise<Located | undefined> {
  for await (const line of readLines(file, opts)) {
    const envelope = parseEnvelope(line, '', undefined);
    if (envelope) return { envelope, lineNo: line.lineNo };
  }
  return undefined;
}

/** Path (relative to the session dir) of the snapshot a first envelope points to, if any. */
function parentSnapshotOf(first: Located, relFile: string, warnings: WarningCollector): string | undefined {
  if (first.envelope.history_artifact === undefined) return undefined;
  const artifact = historyArtifactSchema.safeParse(first.envelope.history_artifact);
  if (!artifact.success) {
    warnings.add('invalid_record', { file: relFile, line: first.lineNo });
    return undefined;
  }
  const parent = artifact.data.parentSnapshot;
  return parent && `${SNAPSHOTS_DIR}/${snapshotFileName(parent.generation, parent.compactionId)}`;
}

/**
 * The snapshot files that precede a file whose first envelope is `first`, oldest first. Snapshots are
 * written once and never change, so peeking at their first line and reading them later is safe.
 */
async function snapshotChain(
  sessionDir: string,
  first: Located,
  relFile: string,
  warnings: WarningCollector,
  opts: ReadLinesOptions,
): Promise<string[]> {
  const chain: string[] = [];
  const visited = new Set([relFile]);
  let current: Located | undefined = first;
  let currentRel = relFile;
  while (current) {
    const parentRel = parentSnapshotOf(current, currentRel, warnings);
    if (parentRel === undefined) break;
    if (visited.has(parentRel)) {
      // A chain that loops back would replay the same history forever.
      warnings.add('invalid_record', { file: currentRel, line: current.lineNo });
      break;
    }
    visited.add(parentRel);
    const parentFile = path.join(sessionDir, parentRel);
    if (!(await exists(parentFile))) {
      warnings.add('missing_snapshot', { file: parentRel, line: 0 });
      break;
    }
    chain.unshift(parentRel);
    current = await peekFirstEnvelope(parentFile, opts);
    currentRel = parentRel;
  }
  return chain;
}

/**
 * Ids seen in snapshot files: a message kept across a compaction appears again in the newer file and
 * must be yielded once. The head file's own ids are not kept (ids are unique within a file), so memory
 * does not grow with the size of messages.jsonl.
 */
type SeenIds = Set<string>;

function itemOf(envelope: Envelope, relFile: string, lineNo: number, seen: SeenIds, remember: boolean): HistoryItem | undefined {
  const id = envelope.message_id;
  if (seen.has(id)) return undefined;
  if (remember) seen.add(id);
  if (NON_CONVERSATION_ROLES.has(String(envelope.message.role))) return undefined;
  return { key: id, message: envelope.message, location: { file: relFile, line: lineNo } };
}

/** Oversized lines and symlinks, as warnings at the reader's position. */
export function readerReport(relFile: string, warnings: WarningCollector): LineReaderReport {
  return (code, lineNo) => warnings.add(code, { file: relFile, line: lineNo });
}

function tailReporter(relFile: string, warnings: WarningCollector): (result: ReadLinesResult) => void {
  return (result) => {
    if (result.incompleteTail) warnings.add('incomplete_tail', { file: relFile, line: result.tailLineNo });
  };
}

async function* readSnapshot(
  sessionDir: string,
  relFile: string,
  seen: SeenIds,
  warnings: WarningCollector,
  opts: ReadLinesOptions,
): AsyncGenerator<HistoryItem> {
  const onEnd = tailReporter(relFile, warnings);
  for await (const line of readLines(path.join(sessionDir, relFile), { ...opts, onEnd, report: readerReport(relFile, warnings) })) {
    const envelope = parseEnvelope(line, relFile, warnings);
    const item = envelope && itemOf(envelope, relFile, line.lineNo, seen, true);
    if (item) yield item;
  }
}

/**
 * The whole effective history of a messages.jsonl session, oldest first: when its first envelope
 * names a parent snapshot (a compaction), the snapshot chain is yielded before the file itself.
 * The head file is opened first and held, so a compaction that replaces it mid-read cannot mix an old
 * chain with a new file. Returns how the head file's read ended (`undefined` if it vanished).
 */
export async function* readMessagesHistory(
  sessionDir: string,
  warnings: WarningCollector,
  opts: ReadLinesOptions = {},
): AsyncGenerator<HistoryItem, ReadLinesResult | undefined> {
  const relFile = MESSAGES_FILE;
  let end: ReadLinesResult | undefined;
  const report = tailReporter(relFile, warnings);
  const onEnd = (result: ReadLinesResult): void => {
    end = result;
    report(result);
  };
  const seen: SeenIds = new Set();
  let opened = false;
  let chainDone = false;
  try {
    for await (const line of readLines(path.join(sessionDir, relFile), { ...opts, onEnd, report: readerReport(relFile, warnings) })) {
      opened = true;
      const envelope = parseEnvelope(line, relFile, warnings);
      if (!envelope) continue;
      if (!chainDone) {
        chainDone = true;
        const first = { envelope, lineNo: line.lineNo };
        for (const snapshot of await snapshotChain(sessionDir, first, relFile, warnings, opts)) {
          yield* readSnapshot(sessionDir, snapshot, seen, warnings, opts);
        }
      }
      const item = itemOf(envelope, relFile, line.lineNo, seen, false);
      if (item) yield item;
    }
  } catch (err) {
    // The session was deleted since its file was chosen: it simply has nothing to read.
    if (!opened && (err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return end;
}
