import {
  chmodSync,
  copyFileSync,
  existsSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import * as z from 'zod';
import { EvermeError } from '../core/errors.js';
import { findPackageRoot as findPackageRootFrom, PACKAGE_NAME } from '../core/package-root.js';
import { makeDirs, PRIVATE_DIR_MODE } from '../core/private-dir.js';

/** What of the package itself the runtime needs; everything else in the source tree is for building. */
const ROOT_ENTRIES = ['bin', 'dist', 'package.json', 'oclif.manifest.json'] as const;

const DEP_MAP = z.record(z.string(), z.string()).optional().catch(undefined);
const PackageJson = z.object({
  name: z.string().optional().catch(undefined),
  version: z.string().optional().catch(undefined),
  dependencies: DEP_MAP,
  optionalDependencies: DEP_MAP,
  peerDependencies: DEP_MAP,
});
type PackageJson = z.infer<typeof PackageJson>;

/** What `<runtime>/runtime.json` records (the hook reads `dataDir` from it: hook/hook-data-dir.ts). */
export interface RuntimeManifest {
  version: string;
  node: string;
  dataDir: string;
}

export const RUNTIME_MANIFEST_FILE = 'runtime.json';

export type StepStatus = 'created' | 'updated' | 'unchanged';

function readPackageJson(dir: string): PackageJson | undefined {
  try {
    const parsed = PackageJson.safeParse(JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** The directory holding this package (the one whose package.json names it), walking up from `start`. */
export function findPackageRoot(start?: string): string {
  const root = findPackageRootFrom(start);
  if (root === undefined) throw new EvermeError('internal', `cannot find the ${PACKAGE_NAME} package root above ${start ?? 'the everme modules'}`);
  return root;
}

/** Node's lookup: `<dir>/node_modules/<name>` for `dir` and each ancestor, skipping `node_modules` dirs themselves. */
export function resolvePackageDir(fromDir: string, name: string): string | undefined {
  let dir = fromDir;
  for (;;) {
    if (path.basename(dir) !== 'node_modules') {
      const candidate = path.join(dir, 'node_modules', name);
      if (isDirectory(candidate)) return realpathSync(candidate);
    }
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

export interface ClosurePackage {
  name: string;
  /** Real path of the package directory in the source install. */
  sourceDir: string;
  /** Where it goes, relative to the runtime root ('' for the package itself). */
  dest: string;
}

interface Edge {
  from: string;
  name: string;
  to: string;
}

/** Where an outside-the-root package lands: its path below the nearest `node_modules` of an ancestor of the root. */
function naturalDest(sourceDir: string, root: string, name: string): string {
  const rel = path.relative(root, sourceDir);
  if (!rel.startsWith('..') && !path.isAbsolute(rel)) return rel;
  // Hoisted above the root (npx cache, global prefix): keep what follows the ancestor's node_modules.
  let ancestor = path.dirname(root);
  for (;;) {
    const base = path.join(ancestor, 'node_modules') + path.sep;
    if (sourceDir.startsWith(base)) return path.join('node_modules', sourceDir.slice(base.length));
    const parent = path.dirname(ancestor);
    if (parent === ancestor) return path.join('node_modules', name);
    ancestor = parent;
  }
}

/** Node's lookup replayed inside the runtime tree, to prove every require finds the copy it found in the source. */
function resolveInDest(fromDest: string, name: string, dests: Set<string>): string | undefined {
  let dir = fromDest;
  for (;;) {
    if (path.basename(dir) !== 'node_modules') {
      const candidate = path.join(dir, 'node_modules', name);
      if (dests.has(candidate)) return candidate;
    }
    if (dir === '' || dir === '.') return undefined;
    const parent = path.dirname(dir);
    dir = parent === '.' ? '' : parent;
  }
}

/**
 * The production dependency closure of the package at `root`: `dependencies`, `optionalDependencies`
 * and (when installed) `peerDependencies`, recursively, each resolved as Node would resolve it from
 * the requiring package. Optional and peer dependencies that are not installed are skipped; a
 * missing regular dependency means the source install is broken.
 */
export function productionClosure(root: string): ClosurePackage[] {
  const realRoot = realpathSync(root);
  const bySource = new Map<string, ClosurePackage>();
  const destTaken = new Map<string, string>();
  const edges: Edge[] = [];
  const rootPkg: ClosurePackage = { name: readPackageJson(realRoot)?.name ?? PACKAGE_NAME, sourceDir: realRoot, dest: '' };
  bySource.set(realRoot, rootPkg);
  destTaken.set('', realRoot);
  const queue: ClosurePackage[] = [rootPkg];
  while (queue.length > 0) {
    const current = queue.shift()!;
    const manifest = readPackageJson(current.sourceDir);
    if (!manifest) throw new EvermeError('io', `unreadable package.json in ${current.sourceDir}`, { code: 'runtime_source_incomplete' });
    const wanted: Array<[string, boolean]> = [
      ...Object.keys(manifest.dependencies ?? {}).map((n): [string, boolean] => [n, true]),
      ...Object.keys(manifest.optionalDependencies ?? {}).map((n): [string, boolean] => [n, false]),
      ...Object.keys(manifest.peerDependencies ?? {}).map((n): [string, boolean] => [n, false]),
    ];
    const seen = new Set<string>();
    for (const [name, required] of wanted) {
      if (seen.has(name)) continue;
      seen.add(name);
      const found = resolvePackageDir(current.sourceDir, name);
      if (!found) {
        if (required && !(manifest.optionalDependencies && name in manifest.optionalDependencies)) {
          throw new EvermeError('io', `dependency ${name} of ${current.name} is not installed`, {
            code: 'runtime_source_incomplete',
            hint: 'Reinstall everme (npm install -g @everme/minimaxcode), then run `everme install` again.',
          });
        }
        continue;
      }
      let pkg = bySource.get(found);
      if (!pkg) {
        let dest = naturalDest(found, realRoot, name);
        const owner = destTaken.get(dest);
        if (owner !== undefined && owner !== found) dest = path.join(current.dest, 'node_modules', name);
        if (destTaken.has(dest)) {
          throw new EvermeError('internal', `cannot place ${name} in the runtime: ${dest} is already used`, {
            code: 'runtime_layout_unsupported',
          });
        }
        pkg = { name, sourceDir: found, dest };
        bySource.set(found, pkg);
        destTaken.set(dest, found);
        queue.push(pkg);
      }
      edges.push({ from: current.dest, name, to: pkg.dest });
    }
  }
  const dests = new Set(destTaken.keys());
  for (const edge of edges) {
    if (resolveInDest(edge.from, edge.name, dests) !== edge.to) {
      throw new EvermeError('internal', `the runtime would not resolve ${edge.name} from ${edge.from || 'the package'} as the source does`, {
        code: 'runtime_layout_unsupported',
      });
    }
  }
  return [...bySource.values()].sort((a, b) => a.dest.localeCompare(b.dest));
}

/** Type declarations and source maps: read by editors and debuggers, never by node at run time. */
const TYPINGS_AND_MAPS = /\.(d\.[cm]?ts|[cm]?js\.map)$/;

/** Native build leftovers (objects, static libraries, C sources) that a built addon never loads. */
function isNativeBuildJunk(relInPackage: string, isDir: boolean, hasBindingGyp: boolean): boolean {
  if (!hasBindingGyp) return false;
  const [top] = relInPackage.split(path.sep);
  if (top === 'deps') return true;
  return top === 'build' && !isDir && !relInPackage.endsWith('.node');
}

function collectFiles(dir: string, relBase: string, skip: (rel: string, isDir: boolean) => boolean, out: Map<string, string>, destBase: string, depth = 0): void {
  if (depth > 64) throw new EvermeError('internal', `directory nesting too deep under ${dir}`);
  const entries = readdirSync(path.join(dir, relBase)).sort();
  for (const entry of entries) {
    const rel = relBase ? path.join(relBase, entry) : entry;
    const abs = path.join(dir, rel);
    let stats;
    try {
      stats = statSync(abs);
    } catch {
      continue; // a dangling symlink has nothing to copy
    }
    if (stats.isDirectory()) {
      if (skip(rel, true)) continue;
      collectFiles(dir, rel, skip, out, destBase, depth + 1);
    } else if (stats.isFile()) {
      if (skip(rel, false)) continue;
      out.set(path.join(destBase, rel), abs);
    }
  }
}

/** Every file the runtime holds (runtime-relative path → source file), in a stable order. */
export function runtimeFiles(root: string, closure: ClosurePackage[]): Map<string, string> {
  const realRoot = realpathSync(root);
  for (const required of ['bin/run.js', 'dist', 'package.json']) {
    if (!existsSync(path.join(realRoot, required))) {
      throw new EvermeError('io', `everme is not built: ${path.join(realRoot, required)} is missing`, {
        code: 'runtime_source_incomplete',
        hint: 'Run `npm run build` in the everme checkout (or reinstall the published package).',
      });
    }
  }
  const files = new Map<string, string>();
  for (const entry of ROOT_ENTRIES) {
    const abs = path.join(realRoot, entry);
    if (!existsSync(abs)) continue;
    if (statSync(abs).isDirectory()) collectFiles(realRoot, entry, () => false, files, '');
    else files.set(entry, abs);
  }
  for (const pkg of closure) {
    if (pkg.dest === '') continue;
    const hasBindingGyp = existsSync(path.join(pkg.sourceDir, 'binding.gyp'));
    const skip = (rel: string, isDir: boolean): boolean =>
      (isDir && rel === 'node_modules') || (!isDir && TYPINGS_AND_MAPS.test(rel)) || isNativeBuildJunk(rel, isDir, hasBindingGyp);
    collectFiles(pkg.sourceDir, '', skip, files, pkg.dest);
  }
  return new Map([...files.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export function renderRuntimeManifest(manifest: RuntimeManifest): string {
  return `${JSON.stringify(manifest, null, 2)}\n`;
}

function listTree(dir: string, relBase = '', out: Map<string, string> = new Map()): Map<string, string> {
  for (const entry of readdirSync(path.join(dir, relBase), { withFileTypes: true })) {
    const rel = relBase ? path.join(relBase, entry.name) : entry.name;
    if (entry.isDirectory()) listTree(dir, rel, out);
    else out.set(rel, path.join(dir, rel));
  }
  return out;
}

/** Same bytes; modes are the runtime's own (see runtimeFileMode), not the source's. */
function sameFile(a: string, b: string): boolean {
  if (statSync(a).size !== statSync(b).size) return false;
  return readFileSync(a).equals(readFileSync(b));
}

const RUNTIME_DIR_MODE = 0o755;
const RUNTIME_FILE_MODE = 0o644;
const RUNTIME_EXEC_MODE = 0o755;

/** 0755 for what the source marks executable by anyone, else 0644. */
function runtimeFileMode(source: string): number {
  return (statSync(source).mode & 0o111) !== 0 ? RUNTIME_EXEC_MODE : RUNTIME_FILE_MODE;
}

function hasRuntimeMode(file: string, expected: number): boolean {
  try {
    return (statSync(file).mode & 0o777) === expected;
  } catch {
    return false;
  }
}

/** True when `runtimeDir` already holds exactly these files with these bytes and modes. */
function runtimeMatches(runtimeDir: string, files: Map<string, string>, manifestText: string): boolean {
  if (!isDirectory(runtimeDir)) return false;
  let present: Map<string, string>;
  try {
    present = listTree(runtimeDir);
  } catch {
    return false;
  }
  if (present.size !== files.size + 1) return false;
  const manifestPath = present.get(RUNTIME_MANIFEST_FILE);
  if (!manifestPath || readFileSync(manifestPath, 'utf8') !== manifestText) return false;
  for (const [rel, source] of files) {
    const target = present.get(rel);
    // A runtime with the right bytes but wider modes (an older install) is staged again.
    if (!target || !sameFile(source, target) || !hasRuntimeMode(target, runtimeFileMode(source))) return false;
  }
  return hasRuntimeMode(runtimeDir, RUNTIME_DIR_MODE);
}

/** Leftovers of an interrupted staging; they are ours by name and never live. */
function removeStaleSiblings(parent: string): void {
  let entries: string[];
  try {
    entries = readdirSync(parent);
  } catch {
    return;
  }
  for (const entry of entries) {
    if (/^\.runtime-(staging|old)-/.test(entry)) rmSync(path.join(parent, entry), { recursive: true, force: true });
  }
}

export interface StageOptions {
  sourceRoot: string;
  runtimeDir: string;
  node: string;
  dataDir: string;
  dryRun: boolean;
  /**
   * Keep the runtime this replaces, moved aside, until the caller settles the swap: install does,
   * so a later step's failure can put the previous runtime back (revertRuntime).
   */
  keepPrevious?: boolean;
}

/** A runtime this run put in place, and where the one it replaced waits (when kept). */
export interface RuntimeSwap {
  runtimeDir: string;
  previous?: string;
}

export interface StageResult {
  status: StepStatus;
  version: string;
  files: number;
  /** Set when a runtime was written and `keepPrevious` asked to settle it: commitRuntime or revertRuntime. */
  swap?: RuntimeSwap;
}

/** The new runtime stays: the previous one, kept aside, goes. */
export function commitRuntime(swap: RuntimeSwap): void {
  if (swap.previous !== undefined) rmSync(swap.previous, { recursive: true, force: true });
}

/** The new runtime goes and the previous one (if any) is renamed back, as it was, byte for byte. */
export function revertRuntime(swap: RuntimeSwap): void {
  rmSync(swap.runtimeDir, { recursive: true, force: true });
  if (swap.previous !== undefined) renameSync(swap.previous, swap.runtimeDir);
}

/**
 * Copies the package and its production dependencies into `runtimeDir`, so the hook and the MCP
 * server outlive the original install (npx cache, a moved checkout). The copy is built in a temp
 * sibling and swapped in by rename; an identical runtime is left untouched, byte for byte.
 */
export function stageRuntime(options: StageOptions): StageResult {
  const closure = productionClosure(options.sourceRoot);
  const files = runtimeFiles(options.sourceRoot, closure);
  const version = readPackageJson(realpathSync(options.sourceRoot))?.version ?? '0.0.0';
  const manifestText = renderRuntimeManifest({ version, node: options.node, dataDir: options.dataDir });
  const existed = isDirectory(options.runtimeDir);
  if (existed && runtimeMatches(options.runtimeDir, files, manifestText)) {
    return { status: 'unchanged', version, files: files.size };
  }
  const status: StepStatus = existed ? 'updated' : 'created';
  if (options.dryRun) return { status, version, files: files.size };

  const parent = path.dirname(options.runtimeDir);
  // The runtime's parent is the state dir (`<data>/everme`): private, whatever the umask.
  makeDirs(parent, PRIVATE_DIR_MODE);
  removeStaleSiblings(parent);
  const suffix = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const staging = path.join(parent, `.runtime-staging-${suffix}`);
  try {
    makeDirs(staging, RUNTIME_DIR_MODE);
    for (const [rel, source] of files) {
      const target = path.join(staging, rel);
      makeDirs(path.dirname(target), RUNTIME_DIR_MODE);
      copyFileSync(source, target);
      // Explicit modes, never the source's or the umask's: the hook executes this code, so no one
      // else may write it (an install under umask 000 copied world-writable files before).
      chmodSync(target, runtimeFileMode(source));
    }
    const manifestFile = path.join(staging, RUNTIME_MANIFEST_FILE);
    writeFileSync(manifestFile, manifestText, { mode: RUNTIME_FILE_MODE });
    chmodSync(manifestFile, RUNTIME_FILE_MODE);
    if (existed) {
      const old = path.join(parent, `.runtime-old-${suffix}`);
      renameSync(options.runtimeDir, old);
      try {
        renameSync(staging, options.runtimeDir);
      } catch (err) {
        // Never leave the data dir without the runtime its hooks point at.
        renameSync(old, options.runtimeDir);
        throw err;
      }
      if (options.keepPrevious) return { status, version, files: files.size, swap: { runtimeDir: options.runtimeDir, previous: old } };
      rmSync(old, { recursive: true, force: true });
    } else {
      renameSync(staging, options.runtimeDir);
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return { status, version, files: files.size, ...(options.keepPrevious ? { swap: { runtimeDir: options.runtimeDir } } : {}) };
}
