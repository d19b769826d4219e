import { chmodSync, lstatSync, mkdirSync, readFileSync, readlinkSync, rmdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { EvermeError } from '../core/errors.js';
import { writeFileAtomic } from './atomic-write.js';

/**
 * What one path held before install touched it. Files are small (env, hooks, plugin documents,
 * mcp.json, the install record), so their bytes are kept in memory; the runtime, which is large, is
 * never snapshotted here: it is swapped aside and back instead (staging.ts).
 */
type PathState =
  | { kind: 'absent' }
  | { kind: 'file'; bytes: Buffer; mode: number }
  | { kind: 'dir'; mode: number }
  /** `file`: what the link resolved to when that is a regular file (everme writes through a link). */
  | { kind: 'link'; target: string; file?: { bytes: Buffer; mode: number } }
  /** A FIFO, socket or device: never read (a FIFO would block) and never written by install. */
  | { kind: 'other' };

export interface PathSnapshot {
  path: string;
  state: PathState;
}

function linkedFile(link: string): { file?: { bytes: Buffer; mode: number } } {
  let stats;
  try {
    stats = statSync(link);
  } catch {
    return {};
  }
  return stats.isFile() ? { file: { bytes: readFileSync(link), mode: stats.mode & 0o7777 } } : {};
}

function stateOf(file: string): PathState {
  let stats;
  try {
    stats = lstatSync(file);
  } catch (err) {
    // Below a file (ENOTDIR) nothing exists either; the step that needs a directory there says so.
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'absent' };
    throw err;
  }
  const mode = stats.mode & 0o7777;
  if (stats.isSymbolicLink()) return { kind: 'link', target: readlinkSync(file), ...linkedFile(file) };
  if (stats.isDirectory()) return { kind: 'dir', mode };
  if (!stats.isFile()) return { kind: 'other' };
  return { kind: 'file', bytes: readFileSync(file), mode };
}

/**
 * The state of each path, read before anything is written. A path that cannot be read is refused
 * here, naming it, while nothing has been written yet: a file install could replace (by rename)
 * but not read back could never be put back as it was.
 */
export function snapshotPaths(paths: readonly string[]): PathSnapshot[] {
  return paths.map((p) => {
    try {
      return { path: p, state: stateOf(p) };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new EvermeError('io', `cannot read ${p} before changing it: ${(err as Error).message}`, {
        code: code?.toLowerCase() ?? 'io',
        hint: `Make ${p} readable (or move it away), then run the command again; nothing was changed.`,
        detail: { path: p },
        cause: err,
      });
    }
  });
}

function sameState(a: PathState, b: PathState): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === 'file' && b.kind === 'file') return a.mode === b.mode && a.bytes.equals(b.bytes);
  if (a.kind === 'dir' && b.kind === 'dir') return a.mode === b.mode;
  if (a.kind === 'link' && b.kind === 'link') return a.target === b.target && (a.file === undefined || (b.file !== undefined && a.file.mode === b.file.mode && a.file.bytes.equals(b.file.bytes)));
  return true;
}

function restoreOne(snapshot: PathSnapshot): void {
  const { path: p, state: was } = snapshot;
  const now = stateOf(p);
  if (sameState(was, now)) return;
  switch (was.kind) {
    case 'absent':
      // Created by this run; a directory is removed only once empty (its deeper paths come first).
      if (now.kind === 'dir') rmdirSync(p);
      else rmSync(p, { force: true });
      return;
    case 'file':
      if (now.kind === 'dir') throw new Error(`${p} is now a directory`);
      writeFileAtomic(p, was.bytes, { mode: was.mode });
      return;
    case 'dir':
      if (now.kind === 'absent') mkdirSync(p, { mode: was.mode });
      else if (now.kind !== 'dir') throw new Error(`${p} is no longer a directory`);
      chmodSync(p, was.mode);
      return;
    case 'link':
      if (now.kind === 'dir') throw new Error(`${p} is now a directory`);
      if (now.kind !== 'link' || now.target !== was.target) {
        rmSync(p, { force: true });
        symlinkSync(was.target, p);
      }
      // What install wrote through the link goes back into the file it points to.
      if (was.file) writeFileAtomic(p, was.file.bytes, { mode: was.file.mode });
      return;
    case 'other':
      // Install never writes over one; nothing of ours to take back.
      return;
  }
}

/**
 * Puts every path back as its snapshot found it, deepest first (files before the directories that
 * hold them), leaving anything that already matches untouched. Best effort: one path that cannot be
 * restored does not stop the others; the paths left as they are now are returned.
 */
export function restorePaths(snapshots: readonly PathSnapshot[]): string[] {
  const failed: string[] = [];
  const deepestFirst = [...snapshots].sort((a, b) => b.path.length - a.path.length);
  for (const snapshot of deepestFirst) {
    try {
      restoreOne(snapshot);
    } catch {
      failed.push(snapshot.path);
    }
  }
  return failed;
}
