/**
 * What a stat says of a file's contents without reading them: its size, its mtime and its inode.
 * Equal stamps are taken to mean the same contents (a rename over the file changes the inode, a
 * write the mtime); the one file `fingerprint.ts` compares at whole milliseconds keeps its own rule.
 */
export interface FileStamp {
  size: number;
  mtimeMs: number;
  ino: number;
}

export function sameFileStamp(a: FileStamp, b: FileStamp): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino;
}
