import { redactText } from '../core/redact.js';
import { MASK_PREFIX } from '../core/secret-rules.js';

/**
 * A workspace path as it is stored and shown: masked like any text, since a directory can be named
 * after a token (`~/projects/ghp_…`). The exclusion check reads the path as the host wrote it
 * (privacy-gate.ts); everything recorded holds this. Its own module, free of zod and SQLite, so the
 * hook's paths (its recorded cwd, SessionStart's project listing) mask a path the one way too.
 */
export function maskedWorkspace(dir: string): string {
  return redactText(dir);
}

/**
 * Whether a path names a directory only up to a mask: as given (a token in it) or as everme printed
 * it (`[REDACTED:…]` already). Two such directories can be one stored path.
 */
export function holdsMask(dir: string): boolean {
  return dir.includes(MASK_PREFIX) || maskedWorkspace(dir) !== dir;
}
