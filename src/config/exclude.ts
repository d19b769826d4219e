import { existsSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Picomatch from 'picomatch';
import { EvermeError } from '../core/errors.js';

/** A file of this name in a workspace or any directory above it keeps that workspace out of memory. */
export const IGNORE_FILE = '.everme-ignore';

/**
 * `EVERME_EXCLUDE`: workspace paths or globs, separated by commas or newlines (a comma inside
 * `{a,b}` belongs to the glob). Empty items are dropped.
 */
export function parseExcludeList(raw: string | undefined): string[] {
  if (!raw) return [];
  const items: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of raw) {
    if (ch === '{') depth++;
    else if (ch === '}') depth = Math.max(0, depth - 1);
    if ((ch === ',' && depth === 0) || ch === '\n' || ch === '\r') {
      items.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  items.push(current);
  return items.map((item) => item.trim()).filter((item) => item.length > 0);
}

function expandHome(pattern: string, home: string): string {
  if (pattern === '~') return home;
  if (pattern.startsWith('~/') || pattern.startsWith('~\\')) return path.join(home, pattern.slice(2));
  return pattern;
}

/** A path as the user typed it: `~` expanded, then absolute (workspaces are recorded absolute). */
export function resolveUserPath(p: string, home: string = os.homedir()): string {
  return path.resolve(expandHome(p.trim(), home));
}

/** Why a workspace is excluded: the pattern as the user wrote it, or the ignore file. */
export type ExclusionRule = { kind: 'pattern'; pattern: string } | { kind: 'ignore_file'; file: string };

type Test = (candidate: string) => boolean;

interface CompiledPattern {
  pattern: string;
  /** Tested against the workspace and each of its parents (a project's subdirectories are in it). */
  matchesDir: Test;
}

function stripTrailingSeparators(p: string): string {
  const stripped = p.replace(/[\\/]+$/, '');
  return stripped === '' ? p.slice(0, 1) : stripped;
}

/** The path with symlinks resolved, when it exists; undefined when it does not (nothing to resolve). */
function realPath(p: string): string | undefined {
  try {
    return realpathSync.native(p);
  } catch {
    return undefined;
  }
}

/** The path as written and, when it differs, as it really is: a rule holds whichever way it is reached. */
function spellings(p: string): string[] {
  const real = realPath(p);
  return real === undefined || real === p ? [p] : [p, real];
}

const GLOB_CHARS = /[*?[\]{}]/;

/**
 * A pattern with a separator that is not absolute once `~` is expanded (`work/secret`,
 * `./secret`) means nothing on its own: it is resolved against the directory of the file that
 * declared it, and refused when the process environment declared it (its meaning would be whatever
 * directory the hook or the command happened to start in). `**\/name` is anchored at the root: it
 * means "anywhere".
 */
function absolutePattern(expanded: string, pattern: string, declaredIn: string | undefined): string {
  if (path.isAbsolute(expanded)) return path.resolve(expanded);
  if (expanded.startsWith('**/')) return `/${expanded}`;
  if (declaredIn !== undefined) return path.resolve(path.dirname(declaredIn), expanded);
  throw new EvermeError('invalid_args', `EVERME_EXCLUDE pattern ${JSON.stringify(pattern)} is a relative path`, {
    code: 'exclude_pattern_relative',
    hint: 'Write it as an absolute path or start it with ~/ (a bare name such as client-* matches a directory of that name anywhere).',
    detail: { pattern },
  });
}

function compile(picomatch: typeof Picomatch, pattern: string, home: string, declaredIn: string | undefined): CompiledPattern {
  const expanded = stripTrailingSeparators(expandHome(pattern, home));
  // No separator at all (`client-*`): a directory name, matched against every directory of the path.
  if (!/[\\/]/.test(expanded)) {
    const isMatch = picomatch(expanded, { dot: true });
    return { pattern, matchesDir: (dir) => isMatch(path.basename(dir)) };
  }
  const absolute = absolutePattern(expanded, pattern, declaredIn);
  // Only the wildcards users mean as such make a glob: a literal `(1)` in a path stays literal.
  if (!GLOB_CHARS.test(absolute)) {
    // A pattern that names a symlink also holds for the directory it points to.
    const targets = new Set(spellings(absolute));
    return { pattern, matchesDir: (dir) => targets.has(dir) };
  }
  // The same for a glob whose fixed base is (or passes through) a symlink.
  const { base, glob } = picomatch.scan(absolute);
  const realBase = base === '' ? undefined : realPath(base);
  const matchers = [picomatch(absolute, { dot: true })];
  if (realBase !== undefined && realBase !== base && glob !== '') matchers.push(picomatch(path.join(realBase, glob), { dot: true }));
  return { pattern, matchesDir: (dir) => matchers.some((m) => m(dir)) };
}

/** The directory and each of its parents, nearest first. */
function selfAndParents(dir: string): string[] {
  const out: string[] = [];
  let current = dir;
  for (;;) {
    out.push(current);
    const parent = path.dirname(current);
    if (parent === current) return out;
    current = parent;
  }
}

/** Where the patterns came from: a relative one resolves against the file that declared it. */
export interface ExclusionSource {
  /** The file that declared the patterns (`<data>/everme.env`); unset when the process environment did. */
  declaredIn?: string;
}

/**
 * Decides whether a workspace is excluded: by `EVERME_EXCLUDE` (the workspace itself or a parent
 * matches) or by an `.everme-ignore` in the workspace or any of its parents. The workspace is
 * checked as written and with its symlinks resolved, so a rule holds whichever way the directory
 * is reached. Built once per run.
 */
export class ExclusionPolicy {
  private constructor(private readonly patterns: CompiledPattern[]) {}

  /**
   * The glob matcher is loaded only when there are patterns: the hook's hot path loads no package
   * at all when nothing is configured. Throws `invalid_args` for a relative pattern the process
   * environment declared (see `absolutePattern`).
   */
  static async load(patterns: readonly string[], home: string = os.homedir(), source: ExclusionSource = {}): Promise<ExclusionPolicy> {
    if (patterns.length === 0) return new ExclusionPolicy([]);
    const { default: picomatch } = await import('picomatch');
    return new ExclusionPolicy(patterns.map((p) => compile(picomatch, p, home, source.declaredIn)));
  }

  get configured(): boolean {
    return this.patterns.length > 0;
  }

  /** Asked afresh each time: an `.everme-ignore` created in the middle of a run holds from then on. */
  ruleFor(workspace: string): ExclusionRule | undefined {
    const given = stripTrailingSeparators(path.resolve(workspace));
    const chains = spellings(given).map(selfAndParents);
    for (const p of this.patterns) {
      if (chains.some((dirs) => dirs.some((d) => p.matchesDir(d)))) return { kind: 'pattern', pattern: p.pattern };
    }
    for (const dirs of chains) {
      for (const dir of dirs) {
        const file = path.join(dir, IGNORE_FILE);
        if (existsSync(file)) return { kind: 'ignore_file', file };
      }
    }
    return undefined;
  }
}

export function describeRule(rule: ExclusionRule): string {
  return rule.kind === 'pattern' ? `EVERME_EXCLUDE ${rule.pattern}` : rule.file;
}
