import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const PACKAGE_NAME = '@everme/minimaxcode';

/** The package.json in `dir`, parsed; undefined when absent or not JSON (callers check the fields they read). */
function readPackageJson(dir: string): Record<string, unknown> | undefined {
  try {
    const pkg: unknown = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
    return typeof pkg === 'object' && pkg !== null ? (pkg as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The directory whose package.json names this package, walking up from `start` (by default this
 * module: it runs from src/ in tests, from dist/ when built, from the staged runtime once
 * installed). Undefined when there is none above it.
 */
export function findPackageRoot(start: string = path.dirname(fileURLToPath(import.meta.url))): string | undefined {
  let dir = path.resolve(start);
  for (;;) {
    if (readPackageJson(dir)?.name === PACKAGE_NAME) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

function readVersion(): string {
  const root = findPackageRoot();
  const version = root === undefined ? undefined : readPackageJson(root)?.version;
  return typeof version === 'string' ? version : '0.0.0';
}

/** This package's version (the User-Agent, the MCP server's name); 0.0.0 when it cannot be read. */
export const PACKAGE_VERSION = readVersion();
