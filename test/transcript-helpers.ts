import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from './support/temp.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const minimaxFixtures = path.join(repoRoot, 'fixtures', 'minimax');
export const transcriptFixtures = path.join(repoRoot, 'fixtures', 'transcript');

export { tempDir };

/** A writable copy of a fixture tree. */
export function copyTree(src: string): string {
  const dest = tempDir();
  fs.cpSync(src, dest, { recursive: true });
  return dest;
}

export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

export function b64(sessionId: string): string {
  return Buffer.from(sessionId, 'utf8').toString('base64url');
}

/** Creates `<data>/v2/sessions/<date>/<time>-session_<b64>/` with a manifest (unless `manifest` is null). */
export function makeSession(
  dataDir: string,
  date: string,
  sessionId: string,
  opts: { createdAtMs?: number; time?: string; manifest?: string | null; files?: Record<string, string> } = {},
): string {
  const dir = path.join(dataDir, 'v2', 'sessions', ...date.split('/'), `${opts.time ?? '12-00-00-000'}-session_${b64(sessionId)}`);
  fs.mkdirSync(dir, { recursive: true });
  const manifest =
    opts.manifest === undefined
      ? JSON.stringify({
          schemaVersion: 1,
          sessionId,
          createdAtMs: opts.createdAtMs ?? Date.UTC(2026, 8, 1),
          updatedAtMs: opts.createdAtMs ?? Date.UTC(2026, 8, 1),
          source: 'local-runtime',
          layout: 'v2-final-dated-session',
          paths: { sessionDir: '/elsewhere/not/here', ledger: '/elsewhere/not/here/ledger.jsonl' },
        })
      : opts.manifest;
  if (manifest !== null) fs.writeFileSync(path.join(dir, 'manifest.json'), manifest);
  for (const [name, content] of Object.entries(opts.files ?? {})) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), content);
  }
  return dir;
}

export function jsonl(records: unknown[]): string {
  return records.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n') + '\n';
}
