import { redactText } from '../core/redact.js';

/**
 * A workspace path as it is stored and shown: masked like any text, since a directory can be named
 * after a token (`~/projects/ghp_…`). The exclusion check reads the path as the host wrote it
 * (privacy-gate.ts); everything recorded holds this. Its own module, free of zod and SQLite, so the
 * hook's paths (its recorded cwd, SessionStart's project listing) mask a path the one way too.
 */
export function maskedWorkspace(dir: string): string {
  return redactText(dir);
}
