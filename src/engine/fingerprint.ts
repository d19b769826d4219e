import { createHash } from 'node:crypto';
import { closeSync, constants, lstatSync, openSync, readSync } from 'node:fs';
import type { SessionFingerprint } from '../store/fingerprint-store.js';

const HEAD_BYTES = 4096;

/** The parts of a stat a fingerprint is made of. */
export interface FileStat {
  size: number;
  mtimeMs: number;
  ino: number;
}

/**
 * Size, mtime, inode and a hash of the head: enough to skip an unchanged session without reading
 * it, and to notice a file replaced by compaction or rewind even when its size happens to match.
 * Synchronous: it is a stat and one 4 KiB read, done for every session of every sync.
 */
export function fingerprintFile(file: string): SessionFingerprint {
  // lstat: a symlinked history file is fingerprinted as the link, never as what it points to.
  return fingerprintFromStat(file, lstatSync(file));
}

function openNoFollow(file: string): number | undefined {
  try {
    return openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch (err) {
    // A symlink: its target is never opened (the reader reports it as `symlinked_file`).
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') return undefined;
    throw err;
  }
}

export function fingerprintFromStat(file: string, info: FileStat): SessionFingerprint {
  const fd = openNoFollow(file);
  try {
    const head = Buffer.alloc(fd === undefined ? 0 : Math.min(HEAD_BYTES, info.size));
    if (fd !== undefined && head.length > 0) readSync(fd, head, 0, head.length, 0);
    return {
      file,
      size: info.size,
      mtimeMs: Math.trunc(info.mtimeMs),
      ino: info.ino,
      headHash: createHash('sha1').update(head).digest('hex'),
    };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The cheap check first: when path, size, mtime and inode all match what was committed, the file
 * was neither appended to nor replaced (a replacement is a rename, a new inode), so its head need
 * not be read again.
 */
export function unchangedByStat(stored: SessionFingerprint | undefined, file: string, info: FileStat): boolean {
  return (
    stored !== undefined &&
    stored.file === file &&
    stored.size === info.size &&
    stored.mtimeMs === Math.trunc(info.mtimeMs) &&
    stored.ino === info.ino
  );
}

export function sameFingerprint(a: SessionFingerprint | undefined, b: SessionFingerprint): boolean {
  return (
    a !== undefined &&
    a.file === b.file &&
    a.size === b.size &&
    a.mtimeMs === b.mtimeMs &&
    a.ino === b.ino &&
    a.headHash === b.headHash
  );
}
