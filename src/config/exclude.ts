import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Picomatch from 'picomatch';

/** A file of this name at a workspace's root keeps that workspace out of memory. */
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

function compile(picomatch: typeof Picomatch, pattern: string, home: string): CompiledPattern {
  const expanded = stripTrailingSeparators(expandHome(pattern, home));
  // No separator at all (`client-*`): a directory name, matched against every directory of the path.
  if (!/[\\/]/.test(expanded)) {
    const isMatch = picomatch(expanded, { dot: true });
    return { pattern, matchesDir: (dir) => isMatch(path.basename(dir)) };
  }
  const absolute = path.resolve(expanded);
  // Only the wildcards users mean as such make a glob: a literal `(1)` in a path stays literal.
  if (!/[*?[\]{}]/.test(absolute)) return { pattern, matchesDir: (dir) => dir === absolute };
  const isMatch = picomatch(absolute, { dot: true });
  return { pattern, matchesDir: isMatch };
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

/**
 * Decides whether a workspace is excluded: by `EVERME_EXCLUDE` (the workspace itself or a parent
 * matches) or by an `.everme-ignore` at its root. Pure apart from one `existsSync`; built once per run.
 */
export class ExclusionPolicy {
  private constructor(private readonly patterns: CompiledPattern[]) {}

  /**
   * The glob matcher is loaded only when there are patterns: the hook's hot path loads no package
   * at all when nothing is configured.
   */
  static async load(patterns: readonly string[], home: string = os.homedir()): Promise<ExclusionPolicy> {
    if (patterns.length === 0) return new ExclusionPolicy([]);
    const { default: picomatch } = await import('picomatch');
    return new ExclusionPolicy(patterns.map((p) => compile(picomatch, p, home)));
  }

  get configured(): boolean {
    return this.patterns.length > 0;
  }

  ruleFor(workspace: string): ExclusionRule | undefined {
    const dir = stripTrailingSeparators(path.resolve(workspace));
    if (this.patterns.length > 0) {
      const dirs = selfAndParents(dir);
      for (const p of this.patterns) {
        if (dirs.some((d) => p.matchesDir(d))) return { kind: 'pattern', pattern: p.pattern };
      }
    }
    const file = path.join(dir, IGNORE_FILE);
    if (existsSync(file)) return { kind: 'ignore_file', file };
    return undefined;
  }
}

export function describeRule(rule: ExclusionRule): string {
  return rule.kind === 'pattern' ? `EVERME_EXCLUDE ${rule.pattern}` : rule.file;
}
