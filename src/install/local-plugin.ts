import { lstatSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import * as z from 'zod';
import { writeFileAtomic } from './atomic-write.js';
import type { StepStatus } from './staging.js';

/**
 * Route A: a local MiniMax Code plugin at `<data>/plugins/everme-memory/`, the only place the
 * builds with public source load hooks from. It holds a manifest and `hooks/hooks.json`, nothing
 * else: the host watches the directory and copies it into a cache, so everything mutable and large
 * (the runtime, the state) stays under `<data>/everme/`.
 */
export const PLUGIN_NAME = 'everme-memory';

/** Every event `everme hook` answers, in the order a session meets them. */
export const PLUGIN_EVENTS = ['SessionStart', 'PreToolUse', 'PostToolUse', 'Stop', 'PreCompact', 'SessionEnd'] as const;
export type PluginEvent = (typeof PLUGIN_EVENTS)[number];

/** Whole seconds, 1–10 (the host's bounds). SessionEnd's handlers share a 3 s budget, so ours asks no more. */
const TIMEOUT_SECONDS: Record<PluginEvent, number> = {
  SessionStart: 5,
  PreToolUse: 5,
  PostToolUse: 5,
  Stop: 5,
  PreCompact: 5,
  SessionEnd: 3,
};

const DESCRIPTION = 'Long-term memory for MiniMax Code (everme): captures every turn into memory and recalls it when a session starts';

/** The host's hook document (reference §5), as this project reads it back. */
export const HookDocument = z.object({
  hooks: z.record(
    z.string(),
    z.array(
      z.object({
        matcher: z.string().optional(),
        hooks: z.array(z.object({ type: z.literal('command'), command: z.string().min(1), timeout: z.number().int().min(1).max(10).optional() })),
      }),
    ),
  ),
});
export type HookDocument = z.infer<typeof HookDocument>;

const PluginManifest = z.looseObject({ name: z.string() });

/** Paths of the plugin relative to the data dir: directories first, in creation order. */
export const PLUGIN_DIRS = ['plugins', `plugins/${PLUGIN_NAME}`, `plugins/${PLUGIN_NAME}/.claude-plugin`, `plugins/${PLUGIN_NAME}/hooks`] as const;
const MANIFEST_REL = '.claude-plugin/plugin.json';
const HOOKS_REL = 'hooks/hooks.json';
/** What may be inside a plugin directory for it to count as ours. */
const OWN_ENTRIES = new Set(['.claude-plugin', MANIFEST_REL, 'hooks', HOOKS_REL]);

export function pluginDir(dataDir: string): string {
  return path.join(dataDir, 'plugins', PLUGIN_NAME);
}

export function pluginManifestPath(dataDir: string): string {
  return path.join(pluginDir(dataDir), MANIFEST_REL);
}

export function pluginHooksPath(dataDir: string): string {
  return path.join(pluginDir(dataDir), HOOKS_REL);
}

export function renderPluginManifest(version: string): string {
  return `${JSON.stringify({ name: PLUGIN_NAME, version, description: DESCRIPTION }, null, 2)}\n`;
}

export function renderPluginHooks(command: string): string {
  const doc: HookDocument = {
    hooks: Object.fromEntries(
      PLUGIN_EVENTS.map((event) => [event, [{ matcher: '*', hooks: [{ type: 'command', command, timeout: TIMEOUT_SECONDS[event] }] }]]),
    ),
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/**
 * What is at the plugin path. `ours`: a real directory holding nothing but (some of) our manifest
 * and hook document, the manifest (when present) naming our plugin. Anything else there belongs to
 * someone else and is reported, never overwritten: a symlink (the host rejects those anyway), a
 * file, or a directory with other content.
 */
export type PluginPathState =
  | { kind: 'absent' }
  | { kind: 'ours' }
  | { kind: 'conflict'; reason: string };

function lstatOrUndefined(p: string) {
  try {
    return lstatSync(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export function inspectPluginPath(dataDir: string): PluginPathState {
  const dir = pluginDir(dataDir);
  const top = lstatOrUndefined(dir);
  if (!top) {
    // A symlinked or file `plugins` parent is someone else's too.
    const parent = lstatOrUndefined(path.dirname(dir));
    if (parent && !parent.isDirectory()) return { kind: 'conflict', reason: `${path.dirname(dir)} is not a directory` };
    return { kind: 'absent' };
  }
  if (top.isSymbolicLink()) return { kind: 'conflict', reason: `${dir} is a symbolic link` };
  if (!top.isDirectory()) return { kind: 'conflict', reason: `${dir} is not a directory` };
  const walk = (rel: string): string | undefined => {
    for (const name of readdirSync(path.join(dir, rel))) {
      const childRel = rel ? `${rel}/${name}` : name;
      if (!OWN_ENTRIES.has(childRel)) return `it holds ${childRel}, which everme did not write`;
      const st = lstatSync(path.join(dir, childRel));
      const wantDir = childRel === '.claude-plugin' || childRel === 'hooks';
      if (st.isSymbolicLink() || (wantDir ? !st.isDirectory() : !st.isFile())) return `${childRel} is not what everme writes there`;
      if (wantDir) {
        const inner = walk(childRel);
        if (inner) return inner;
      }
    }
    return undefined;
  };
  const foreign = walk('');
  if (foreign) return { kind: 'conflict', reason: `${dir} is not everme's: ${foreign}` };
  const manifest = lstatOrUndefined(pluginManifestPath(dataDir));
  if (manifest) {
    let name: string | undefined;
    try {
      const parsed = PluginManifest.safeParse(JSON.parse(readFileSync(pluginManifestPath(dataDir), 'utf8')));
      name = parsed.success ? parsed.data.name : undefined;
    } catch {
      name = undefined;
    }
    if (name !== PLUGIN_NAME) return { kind: 'conflict', reason: `${dir} holds the manifest of another plugin` };
  }
  return { kind: 'ours' };
}

export type PluginWriteResult = { status: StepStatus; path: string } | { status: 'skipped'; path: string; reason: string };

function readIfPresent(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Writes (or leaves, when equal) the manifest and the hook document; never touches a path that is not ours. */
export function writeLocalPlugin(dataDir: string, opts: { version: string; command: string; dryRun: boolean }): PluginWriteResult {
  const dir = pluginDir(dataDir);
  const state = inspectPluginPath(dataDir);
  if (state.kind === 'conflict') return { status: 'skipped', path: dir, reason: state.reason };
  const files: Array<[string, string]> = [
    [pluginManifestPath(dataDir), renderPluginManifest(opts.version)],
    [pluginHooksPath(dataDir), renderPluginHooks(opts.command)],
  ];
  let changed = false;
  let anyExisted = false;
  for (const [file, next] of files) {
    const existing = readIfPresent(file);
    if (existing !== undefined) anyExisted = true;
    if (existing === next) continue;
    changed = true;
    if (!opts.dryRun) {
      mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 });
      writeFileAtomic(file, next, { mode: 0o644 });
    }
  }
  if (!changed) return { status: 'unchanged', path: dir };
  return { status: anyExisted ? 'updated' : 'created', path: dir };
}

export type PluginRemoveResult = { status: 'removed' | 'absent'; path: string } | { status: 'kept'; path: string; note: string };

/**
 * Removes our two files, then each plugin directory install created (deepest first) once nothing
 * else is left in it: a `plugins` directory the user had, or one holding other plugins, stays.
 */
export function removeLocalPlugin(dataDir: string, created: ReadonlySet<string>, dryRun: boolean): PluginRemoveResult {
  const dir = pluginDir(dataDir);
  const state = inspectPluginPath(dataDir);
  if (state.kind === 'absent') return { status: 'absent', path: dir };
  if (state.kind === 'conflict') return { status: 'kept', path: dir, note: `not removed: ${state.reason}` };
  const gone = new Set<string>();
  for (const file of [pluginManifestPath(dataDir), pluginHooksPath(dataDir)]) {
    if (lstatOrUndefined(file) === undefined) continue;
    if (!dryRun) rmSync(file, { force: true });
    gone.add(file);
  }
  for (const rel of [...PLUGIN_DIRS].reverse()) {
    if (!created.has(rel)) continue;
    const abs = path.join(dataDir, rel);
    let entries: string[];
    try {
      entries = readdirSync(abs);
    } catch {
      continue;
    }
    if (!entries.every((name) => gone.has(path.join(abs, name)))) continue;
    if (!dryRun) rmdirSync(abs);
    gone.add(abs);
  }
  return { status: 'removed', path: dir };
}
