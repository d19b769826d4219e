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

export function renderInstallRecord(created: Iterable<string>, envKeysAdded: Iterable<string> = []): string {
  const keys = [...new Set(envKeysAdded)].sort();
  const record: InstallRecord = { schemaVersion: 1, created: [...new Set(created)].sort(), ...(keys.length ? { envKeysAdded: keys } : {}) };
  return `${JSON.stringify(record, null, 2)}\n`;
}

/** Writes the record only when it changes; returns whether it did. */
export function writeInstallRecord(dataDir: string, created: Iterable<string>, envKeysAdded: Iterable<string> = []): boolean {
  const next = renderInstallRecord(created, envKeysAdded);
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
