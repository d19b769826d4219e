import { existsSync, readFileSync } from 'node:fs';
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

/**
 * A file of this package's build, `dist/<rel>`, found from the package root rather than beside the
 * module asking: `npm run build` bundles the commands, so a module may run from a chunk under
 * dist/chunks/ or from sync's CommonJS bundle (a `.cjs`), away from the files it starts (a thread's
 * entry). Undefined when `fromUrl` is a source file (a test runner's sources have no build of their
 * own beside them: they plan and commit inline) or the file is not there.
 */
export function builtFile(fromUrl: string, rel: string): string | undefined {
  if (!/\.c?js$/.test(fromUrl)) return undefined;
  const root = findPackageRoot(path.dirname(fileURLToPath(fromUrl)));
  const file = root === undefined ? undefined : path.join(root, 'dist', rel);
  return file !== undefined && existsSync(file) ? file : undefined;
}

function readVersion(): string {
  const root = findPackageRoot();
  const version = root === undefined ? undefined : readPackageJson(root)?.version;
  return typeof version === 'string' ? version : '0.0.0';
}

/** This package's version (the User-Agent, the MCP server's name); 0.0.0 when it cannot be read. */
export const PACKAGE_VERSION = readVersion();
