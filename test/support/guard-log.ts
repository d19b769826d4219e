/** Reading what net-guard.mjs logged (one JSON line per blocked attempt), for suite-setup and global-setup. */
import fs from 'node:fs';
import * as z from 'zod';

const blockedSchema = z.object({
  kind: z.string(),
  target: z.string(),
  test: z.string().nullable(),
  pid: z.number(),
  argv: z.string(),
});
export type Blocked = z.infer<typeof blockedSchema>;

export function readGuardLog(file: string): Blocked[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => blockedSchema.parse(JSON.parse(line)));
}

export function describeBlocked(blocked: Blocked[]): string {
  return blocked.map((b) => `  ${b.kind} to ${b.target}, by pid ${b.pid} (${b.argv}), started by test "${b.test ?? 'unknown'}"`).join('\n');
}
