import { createHash } from 'node:crypto';
import { open, stat } from 'node:fs/promises';
import type { SessionFingerprint } from './state-store.js';

const HEAD_BYTES = 4096;

/**
 * Size, mtime, inode and a hash of the head: enough to skip an unchanged session without reading
 * it, and to notice a file replaced by compaction or rewind even when its size happens to match.
 */
export async function fingerprintFile(file: string): Promise<SessionFingerprint> {
  const info = await stat(file);
  const handle = await open(file, 'r');
  try {
    const head = Buffer.alloc(Math.min(HEAD_BYTES, info.size));
    if (head.length > 0) await handle.read(head, 0, head.length, 0);
    return {
      file,
      size: info.size,
      mtimeMs: Math.trunc(info.mtimeMs),
      ino: info.ino,
      headHash: createHash('sha1').update(head).digest('hex'),
    };
  } finally {
    await handle.close();
  }
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
