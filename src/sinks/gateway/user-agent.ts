import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root, found by walking up from this module (it runs from src/ in tests, dist/ when built). */
export function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string };
      if (pkg.name === '@everme/minimaxcode') return dir;
    } catch {
      // keep walking up
    }
    const parent = path.dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
}

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

export const VERSION = packageVersion();
export const USER_AGENT = `everme-minimaxcode/${VERSION} node/${process.versions.node}`;

/** EverMe's own clients name the agent they write for: `… (agentId=<id>)`, when the id is known. */
export function userAgentFor(agentId: string | undefined): string {
  // The id comes from a file the user (or EverMe's installer) wrote: keep it to one header-safe token.
  const id = agentId?.trim();
  return id && /^[\x21-\x7e]+$/.test(id) && !/[()]/.test(id) ? `${USER_AGENT} (agentId=${id})` : USER_AGENT;
}
