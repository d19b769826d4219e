import { statSync } from 'node:fs';
import path from 'node:path';
import { WarningCollector } from '../core/warnings.js';
import { contentSignature, keyLedgerHistory, LEDGER_FILE, readLedger, withLegacyKeys } from './ledger-replay.js';
import type { SessionRef } from './types.js';

/**
 * A ledger-era session continued by a newer build has both files, and its history now comes from
 * `messages.jsonl`, keyed by `message_id`. What was delivered under ledger keys is matched to those
 * messages by content (`contentSignature`: role, timestamp, content digest), so that only what is
 * really new is sent.
 */
export interface LedgerCarryover {
  /** The delivered ledger key of a message with this content, used up once claimed; or undefined. */
  claim(message: Record<string, unknown>): string | undefined;
  /** A message of the newer file that no ledger key claimed (new, or delivered under its own key). */
  pass(): void;
  /**
   * The delivered ledger keys still part of the conversation, once the newer file has been read.
   * - The file claimed none: it started afresh (the reference does not say whether the runtime
   *   copies the ledger's history over), so the ledger still holds every one and all stay.
   * - It claimed some, and holds messages after the last of them: it carried the history over and
   *   went on from somewhere, so a ledger message it lacks was dropped by a rewind or retry (§3):
   *   only the claimed stay.
   * - It claimed some and ends with a claim: it may still be being copied, so all stay for now.
   */
  kept(): ReadonlySet<string>;
}

function hasBytes(file: string): boolean {
  try {
    const s = statSync(file);
    return s.isFile() && s.size > 0;
  } catch {
    return false;
  }
}

/**
 * Replays the session's ledger (ledger-era files are small) and indexes the keys among `delivered`
 * by content signature (a message's key, or the one an earlier release gave it: `legacyKey`);
 * undefined when there is no ledger or nothing was delivered under its keys. The ledger's own
 * warnings were recorded when it was the history; they are not recorded again.
 */
export async function openLedgerCarryover(session: SessionRef, delivered: ReadonlySet<string>): Promise<LedgerCarryover | undefined> {
  const file = path.join(session.dir, LEDGER_FILE);
  if (delivered.size === 0 || !hasBytes(file)) return undefined;
  let replay;
  try {
    replay = await readLedger(file, LEDGER_FILE, session.sessionId, new WarningCollector());
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const bySignature = new Map<string, string[]>();
  const all: string[] = [];
  const items = keyLedgerHistory(session.sessionId, replay.history, LEDGER_FILE);
  // Marks an earlier release wrote for a ledger read after a compaction are under its keys.
  if (replay.carried) withLegacyKeys(session.sessionId, replay.history, items);
  for (const item of items) {
    const key = delivered.has(item.key) ? item.key : item.legacyKey !== undefined && delivered.has(item.legacyKey) ? item.legacyKey : undefined;
    if (key === undefined) continue;
    all.push(key);
    const signature = contentSignature(item.message);
    if (signature === undefined) continue;
    const list = bySignature.get(signature);
    if (list) list.push(key);
    else bySignature.set(signature, [key]);
  }
  if (all.length === 0) return undefined;
  const claimed = new Set<string>();
  let passedSinceClaim = false;
  return {
    claim(message) {
      const signature = contentSignature(message);
      const key = signature === undefined ? undefined : bySignature.get(signature)?.shift();
      if (key !== undefined) {
        claimed.add(key);
        passedSinceClaim = false;
      }
      return key;
    },
    pass() {
      if (claimed.size > 0) passedSinceClaim = true;
    },
    kept: () => (passedSinceClaim ? claimed : new Set(all)),
  };
}
