/**
 * Temp dirs of the tests. Every one is made here, under the suite's own temp dir (global-setup.ts
 * points TMPDIR there), and removed after its test file by suite-setup.ts; the suite then checks
 * that no `everme-*` entry is left at all.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const made = new Set<string>();

/** A new empty dir `<tmp>/<prefix>XXXXXX`, removed after the test file. */
export function tempDir(prefix = 'everme-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.add(dir);
  return dir;
}

/**
 * Removes every dir tempDir made. A detached worker a test started may still be writing into one
 * (its slot released a moment later): the removal retries rather than leaves it behind.
 */
export function removeTempDirs(): void {
  for (const dir of made) {
    fs.rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    made.delete(dir);
  }
}
