import type Database from 'better-sqlite3';
import { sameFileStamp, type FileStamp } from '../core/file-stamp.js';

/**
 * What identifies a session in its manifest.json (see `transcript/manifest.ts`), kept with the
 * file's stat when it was read: while size, mtime and inode stay the same the file is not read again.
 */
export interface KnownManifest extends FileStamp {
  sessionId: string;
  createdAtMs: number;
  updatedAtMs?: number;
}

interface ManifestRow {
  name: string;
  size: number;
  mtime_ms: number;
  ino: number;
  session_id: string;
  created_at_ms: number;
  updated_at_ms: number | null;
}

function knownOf(row: ManifestRow): KnownManifest {
  const known: KnownManifest = { size: row.size, mtimeMs: row.mtime_ms, ino: row.ino, sessionId: row.session_id, createdAtMs: row.created_at_ms };
  if (row.updated_at_ms !== null) known.updatedAtMs = row.updated_at_ms;
  return known;
}

function sameKnown(a: KnownManifest, b: KnownManifest): boolean {
  return sameFileStamp(a, b) && a.sessionId === b.sessionId && a.createdAtMs === b.createdAtMs && a.updatedAtMs === b.updatedAtMs;
}

/**
 * The manifests of the session directories a walk found, by day directory: a no-op sync over 3,000
 * sessions opened, stat'ed, read, closed and parsed every manifest.json (~120 ms), where one stat
 * of each tells that nothing changed. Only a walk updates it; what changed is written at `flush`.
 */
export class SessionManifestStore {
  private readonly stmts;
  private pending: { dayDir: string; put: [string, KnownManifest][]; gone: string[] }[] = [];

  /** `readonly`: a dry run reads what earlier runs kept and writes nothing. */
  constructor(
    private readonly db: Database.Database,
    private readonly readonly = false,
  ) {
    this.stmts = {
      inDay: db.prepare<[string], ManifestRow>(
        'SELECT name, size, mtime_ms, ino, session_id, created_at_ms, updated_at_ms FROM session_manifests WHERE day_dir = ?',
      ),
      put: db.prepare<[string, string, number, number, number, string, number, number | null]>(
        `INSERT INTO session_manifests (day_dir, name, size, mtime_ms, ino, session_id, created_at_ms, updated_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (day_dir, name) DO UPDATE SET size = excluded.size, mtime_ms = excluded.mtime_ms, ino = excluded.ino,
           session_id = excluded.session_id, created_at_ms = excluded.created_at_ms, updated_at_ms = excluded.updated_at_ms`,
      ),
      drop: db.prepare<[string, string]>('DELETE FROM session_manifests WHERE day_dir = ? AND name = ?'),
    };
  }

  /** The manifests known in one day directory, by session directory name. */
  knownIn(dayDir: string): Map<string, KnownManifest> {
    const known = new Map<string, KnownManifest>();
    for (const row of this.stmts.inDay.iterate(dayDir)) known.set(row.name, knownOf(row));
    return known;
  }

  /**
   * The day directory as the walk found it now (`now`: every session directory whose manifest it
   * could read), against what was known of it before: what differs is kept for `flush`, and a
   * directory gone or no longer readable is forgotten.
   */
  update(dayDir: string, before: ReadonlyMap<string, KnownManifest>, now: ReadonlyMap<string, KnownManifest>): void {
    if (this.readonly) return;
    const put: [string, KnownManifest][] = [];
    for (const [name, known] of now) {
      const was = before.get(name);
      if (was === undefined || !sameKnown(was, known)) put.push([name, known]);
    }
    const gone = [...before.keys()].filter((name) => !now.has(name));
    if (put.length > 0 || gone.length > 0) this.pending.push({ dayDir, put, gone });
  }

  /** Writes what the walk changed, in one transaction. */
  flush(): void {
    const pending = this.pending;
    this.pending = [];
    if (pending.length === 0) return;
    this.db.transaction(() => {
      for (const { dayDir, put, gone } of pending) {
        for (const [name, k] of put) this.stmts.put.run(dayDir, name, k.size, k.mtimeMs, k.ino, k.sessionId, k.createdAtMs, k.updatedAtMs ?? null);
        for (const name of gone) this.stmts.drop.run(dayDir, name);
      }
    })();
  }
}
