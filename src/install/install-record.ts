import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as z from 'zod';
import { writeFileAtomic } from './atomic-write.js';
import { PLUGIN_DIRS } from './local-plugin.js';

/**
 * What `everme install` created that did not exist before (paths relative to the data dir), so
 * uninstall can remove exactly that and leave what the user had. Sorted and timestamp-free: a
 * second install writes the same bytes.
 */
export const InstallRecord = z.object({
  schemaVersion: z.literal(1),
  created: z.array(z.string()),
  /**
   * The keys whose lines in everme.env are everme's, so `uninstall --purge` takes out those and no
   * more: every key install set in a file it created, only the keys it appended to one it did not
   * (EverMe's own, or the user's). Absent when there are none (earlier versions listed none for a
   * file install created).
   */
  envKeysAdded: z.array(z.string()).optional(),
  /**
   * everme.env was created by an install that recorded none of the keys it set (before
   * `envKeysAdded` covered a created file): see `UNRECORDED_INSTALL_KEYS`.
   */
  envKeysUnrecorded: z.literal(true).optional(),
  /**
   * The everme.env install appended keys to (one it did not create) had no final newline, so
   * `uninstall --purge` gives it back without one. Absent in older records: the file keeps a final
   * newline, as before.
   */
  envNoFinalNewline: z.literal(true).optional(),
});
export type InstallRecord = z.infer<typeof InstallRecord>;

export const TRACKED_PATHS = [
  'everme',
  'everme.env',
  'hooks',
  'mcp.json',
  'mcp.json.everme-backup',
  // The local plugin's directories, so uninstall removes exactly those install made.
  ...PLUGIN_DIRS,
] as const;
export type TrackedPath = (typeof TRACKED_PATHS)[number];

export function evermeDir(dataDir: string): string {
  return path.join(dataDir, 'everme');
}

export function installRecordPath(dataDir: string): string {
  return path.join(evermeDir(dataDir), 'install.json');
}

export function runtimeDir(dataDir: string): string {
  return path.join(evermeDir(dataDir), 'runtime');
}

export function readInstallRecord(dataDir: string): InstallRecord | undefined {
  try {
    const parsed = InstallRecord.safeParse(JSON.parse(readFileSync(installRecordPath(dataDir), 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What an older install's unrecorded file surely owes it: of the two keys install ever set
 * (`--api-key`, `--api-base`), the one EverMe's installer never writes (everme-gateway.md: it writes
 * EVERME_API_BASE, EVERME_AGENT_ID and EVERME_AGENT_TOKEN). A line the user added stays.
 */
export const UNRECORDED_INSTALL_KEYS: readonly string[] = ['EVERME_API_KEY'];

/**
 * Whether the record comes from an install that created everme.env but recorded no key it set: a
 * record of today lists `envKeysAdded` (empty too) for a file install created.
 */
export function envKeysUnrecorded(record: InstallRecord | undefined): boolean {
  if (record === undefined) return false;
  return record.envKeysUnrecorded === true || (record.created.includes('everme.env') && record.envKeysAdded === undefined);
}

export function renderInstallRecord(created: Iterable<string>, envKeysAdded: Iterable<string> = [], unrecorded = false, envNoFinalNewline = false): string {
  const keys = [...new Set(envKeysAdded)].sort();
  const paths = [...new Set(created)].sort();
  // Listed, even empty, for a file install created: its absence marks a record from before.
  const listed = keys.length > 0 || paths.includes('everme.env');
  const record: InstallRecord = { schemaVersion: 1, created: paths, ...(listed ? { envKeysAdded: keys } : {}), ...(unrecorded ? { envKeysUnrecorded: true as const } : {}), ...(envNoFinalNewline ? { envNoFinalNewline: true as const } : {}) };
  return `${JSON.stringify(record, null, 2)}\n`;
}

/** Writes the record only when it changes; returns whether it did. */
export function writeInstallRecord(dataDir: string, created: Iterable<string>, envKeysAdded: Iterable<string> = [], unrecorded = false, envNoFinalNewline = false): boolean {
  const next = renderInstallRecord(created, envKeysAdded, unrecorded, envNoFinalNewline);
  const file = installRecordPath(dataDir);
  let current: string | undefined;
  try {
    current = readFileSync(file, 'utf8');
  } catch {
    current = undefined;
  }
  if (current === next) return false;
  writeFileAtomic(file, next, { mode: 0o644 });
  return true;
}
