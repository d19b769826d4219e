import { closeSync, fchmodSync, fsyncSync, lstatSync, openSync, readlinkSync, realpathSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { EvermeError } from '../core/errors.js';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

export interface AtomicWriteOptions {
  /** Exact mode of the new file; the temp file is created with it, so it never exists wider. */
  mode: number;
}

/** A sibling temp name: same directory, so the final rename never crosses a filesystem. */
export function tempSiblingPath(file: string, tag = 'tmp'): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.everme-${tag}-${process.pid}-${randomBytes(4).toString('hex')}`);
}

/**
 * The file a write to `file` lands in: `file` itself or, when it is a symlink (mcp.json or
 * everme.env kept in a dotfiles repository), the file the link resolves to, so the link stays a
 * link. A link to nothing is refused, naming it: writing would replace the link with a file.
 */
export function writeTarget(file: string): string {
  try {
    if (!lstatSync(file).isSymbolicLink()) return file;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return file;
    throw err;
  }
  try {
    return realpathSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    throw new EvermeError('io', `${file} is a symbolic link to ${readlinkSync(file)}, which does not exist`, {
      code: 'dangling_symlink',
      hint: `Point ${file} at an existing file, or remove the link, then run the command again.`,
      detail: { path: file },
      cause: err,
    });
  }
}

/**
 * Writes through a temp sibling then renames over the target (through a symlink: see writeTarget), so a reader sees the old file or the
 * new one, never half of either. The temp file is opened exclusively with the final mode and
 * fchmod-ed to it (umask can only narrow the open mode; fchmod makes it exact).
 */
export function writeFileAtomic(target: string, data: string | Buffer, options: AtomicWriteOptions): void {
  const file = writeTarget(target);
  const tmp = tempSiblingPath(file);
  const fd = openSync(tmp, 'wx', options.mode);
  let open = true;
  let renamed = false;
  try {
    fchmodSync(fd, options.mode);
    const buffer = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    let offset = 0;
    while (offset < buffer.length) offset += writeSync(fd, buffer, offset, buffer.length - offset);
    fsyncSync(fd);
    closeSync(fd);
    open = false;
    renameSync(tmp, file);
    renamed = true;
  } finally {
    if (open) closeSync(fd);
    if (!renamed) rmSync(tmp, { force: true });
  }
}

/** Permission bits of an existing file, or undefined when it does not exist. */
export function existingMode(file: string): number | undefined {
  try {
    return statSync(file).mode & 0o777;
  } catch {
    return undefined;
  }
}
