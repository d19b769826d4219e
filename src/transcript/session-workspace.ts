import { existsSync } from 'node:fs';
import path from 'node:path';
import * as z from 'zod';
import { LEDGER_FILE } from './ledger-replay.js';
import { readLines } from './line-reader.js';
import { chooseHistoryFile } from './session-history.js';
import type { SessionRef } from './types.js';

/**
 * What the session files say about a session's workspace (its project directory).
 *
 * - Ledger era: `session.created` / `session.metadata_updated` carry `record.workspaceDir`. The first
 *   such event (normally line 1) answers, and reading stops there: an excluded session is never
 *   read past what it takes to learn its workspace.
 * - messages.jsonl era: neither the manifest nor the envelopes name a workspace (the reference is
 *   silent, and the system prompt in `turn_config` is prose, not a field): unknown here. The hook's
 *   payload `cwd` is the other source (see the engine's workspace lookup).
 */
const metadataEvent = z.looseObject({
  kind: z.enum(['session.created', 'session.metadata_updated']),
  sessionId: z.string(),
  schemaVersion: z.literal(1),
  createdAtMs: z.number().finite().optional().catch(undefined),
  record: z.looseObject({ workspaceDir: z.string().min(1), updatedAtMs: z.number().finite().optional().catch(undefined) }),
});

/** Cheap prefilter: a line without this cannot carry a workspace, so it is never parsed. */
const MARKER = '"workspaceDir"';

/** Bounds the scan of a ledger whose metadata is missing: past this many lines, unknown. */
const MAX_SCANNED_LINES = 200;

export interface FileWorkspace {
  workspaceDir?: string;
  /** The file it came from, relative to the session directory; absent when no file says. */
  from?: string;
  /** When the record said it: the record's `updatedAtMs`, else the event's `createdAtMs`. */
  updatedAtMs?: number;
}

async function ledgerWorkspace(file: string, sessionId: string): Promise<{ workspaceDir: string; updatedAtMs?: number } | undefined> {
  let scanned = 0;
  try {
    for await (const { line } of readLines(file, { highWaterMark: 64 * 1024 })) {
      if (++scanned > MAX_SCANNED_LINES) return undefined;
      if (!line.includes(MARKER)) continue;
      let json: unknown;
      try {
        json = JSON.parse(line);
      } catch {
        continue;
      }
      const event = metadataEvent.safeParse(json);
      if (event.success && event.data.sessionId === sessionId) {
        const at = event.data.record.updatedAtMs ?? event.data.createdAtMs;
        return at === undefined ? { workspaceDir: event.data.record.workspaceDir } : { workspaceDir: event.data.record.workspaceDir, updatedAtMs: at };
      }
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return undefined;
}

export async function workspaceFromFiles(session: SessionRef): Promise<FileWorkspace> {
  const choice = chooseHistoryFile(session.dir);
  // A ledger-era session reopened by a newer build keeps its ledger: its metadata still applies.
  const ledger = choice.source === 'ledger' && choice.file ? choice.file : path.join(session.dir, LEDGER_FILE);
  // A current session has no ledger: one stat, rather than a stream opened to fail.
  if (choice.source !== 'ledger' && !existsSync(ledger)) return {};
  const found = await ledgerWorkspace(ledger, session.sessionId);
  if (found !== undefined) return { ...found, from: LEDGER_FILE };
  return {};
}
