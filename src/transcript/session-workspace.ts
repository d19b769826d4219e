import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import * as z from 'zod';
import { parseJsonAs } from '../core/json.js';
import { LEDGER_FILE } from './ledger-replay.js';
import { readLines } from './line-reader.js';
import { chooseHistoryFile } from './session-history.js';
import type { SessionRef } from './types.js';

/**
 * What the session files say about a session's workspace (its project directory).
 *
 * - Ledger era: `session.created` / `session.metadata_updated` carry `record.workspaceDir`, and the
 *   latest one counts (§4: the record is the session's metadata, a rename moves the project). The
 *   first (normally line 1) is read as a stream; a later `session.metadata_updated` is looked for
 *   in the file's bytes, which few ledgers hold, so no line is parsed for nothing.
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
  /**
   * The other directories the ledger named before its last record (a session that moved): not the
   * workspace, but what was said there is in the history, so exclusion checks them too.
   */
  earlierDirs?: string[];
  /** The file it came from, relative to the session directory; absent when no file says. */
  from?: string;
  /** When the record said it: the record's `updatedAtMs`, else the event's `createdAtMs`. */
  updatedAtMs?: number;
}

type LedgerClaim = { workspaceDir: string; updatedAtMs?: number };

/** The workspace one line's metadata event names for this session, if it is one. */
function claimOf(line: string, sessionId: string): LedgerClaim | undefined {
  const event = parseJsonAs(line, metadataEvent);
  if (event?.sessionId !== sessionId) return undefined;
  const at = event.record.updatedAtMs ?? event.createdAtMs;
  return at === undefined ? { workspaceDir: event.record.workspaceDir } : { workspaceDir: event.record.workspaceDir, updatedAtMs: at };
}

async function firstLedgerClaim(file: string, sessionId: string): Promise<LedgerClaim | undefined> {
  let scanned = 0;
  for await (const { line } of readLines(file, { highWaterMark: 64 * 1024 })) {
    if (++scanned > MAX_SCANNED_LINES) return undefined;
    if (!line.includes(MARKER)) continue;
    const claim = claimOf(line, sessionId);
    if (claim) return claim;
  }
  return undefined;
}

const UPDATE_KIND = Buffer.from('"session.metadata_updated"');
/** Ledger-era files are small; one past this is searched no further than its first record. */
const MAX_UPDATE_SEARCH_BYTES = 32 * 1024 * 1024;

/** The `session.metadata_updated` claims of the file, in file order (seq order, as the runtime writes it). */
function laterLedgerClaims(file: string, sessionId: string): LedgerClaim[] {
  if (statSync(file).size > MAX_UPDATE_SEARCH_BYTES) return [];
  const bytes = readFileSync(file);
  const claims: LedgerClaim[] = [];
  for (let at = bytes.indexOf(UPDATE_KIND); at !== -1; at = bytes.indexOf(UPDATE_KIND, at + 1)) {
    const start = bytes.lastIndexOf(0x0a, at) + 1;
    const newline = bytes.indexOf(0x0a, at);
    const claim = claimOf(bytes.toString('utf8', start, newline === -1 ? bytes.length : newline), sessionId);
    if (claim) claims.push(claim);
  }
  return claims;
}

/**
 * The session's metadata as a replay leaves it: the last record in the file's (seq) order, with the
 * directories the records before it named.
 */
async function ledgerWorkspace(file: string, sessionId: string): Promise<(LedgerClaim & { earlierDirs: string[] }) | undefined> {
  try {
    const first = await firstLedgerClaim(file, sessionId);
    const claims = [...(first ? [first] : []), ...laterLedgerClaims(file, sessionId)];
    const last = claims.at(-1);
    if (!last) return undefined;
    const earlierDirs = [...new Set(claims.map((c) => c.workspaceDir))].filter((dir) => dir !== last.workspaceDir);
    return { ...last, earlierDirs };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export async function workspaceFromFiles(session: SessionRef): Promise<FileWorkspace> {
  const choice = chooseHistoryFile(session.dir);
  // A ledger-era session reopened by a newer build keeps its ledger: its metadata still applies.
  const ledger = choice.source === 'ledger' && choice.file ? choice.file : path.join(session.dir, LEDGER_FILE);
  // A current session has no ledger: one stat, rather than a stream opened to fail.
  if (choice.source !== 'ledger' && !existsSync(ledger)) return {};
  const found = await ledgerWorkspace(ledger, session.sessionId);
  if (found === undefined) return {};
  const { earlierDirs, ...claim } = found;
  return { ...claim, from: LEDGER_FILE, ...(earlierDirs.length > 0 ? { earlierDirs } : {}) };
}
