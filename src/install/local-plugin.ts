import { lstatSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import * as z from 'zod';
import { writeFileAtomic } from './atomic-write.js';
import { isEvermeHookCommand } from './markdown-hooks.js';
import type { StepStatus } from './staging.js';

/**
 * Route A: a local MiniMax Code plugin at `<data>/plugins/everme-memory/`, the only place the
 * builds with public source load hooks from. everme writes a manifest and `hooks/hooks.json` there,
 * nothing else: the host watches the directory and copies it into a cache, so everything mutable and large
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
const MANIFEST_REL = '.claude-plugin/plugin.json' as const;
const HOOKS_REL = 'hooks/hooks.json' as const;

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
 * What is at the plugin path. `ours`: a real directory where each of our two files is absent or
 * holds what everme writes there (a manifest naming our plugin, a hook document every command of
 * which runs an everme runtime). Other entries beside them (a Finder `.DS_Store`, an editor's
 * `hooks.json.bak`) do not make it someone else's: they are left alone. A symlink, a file, or one of
 * our two paths holding something else belongs to someone else and is reported, never overwritten.
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

function parsedJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

/** Whether `file` (a regular file) holds what install writes there. */
function holdsOurs(rel: typeof MANIFEST_REL | typeof HOOKS_REL, file: string): boolean {
  if (rel === MANIFEST_REL) {
    const manifest = PluginManifest.safeParse(parsedJson(file));
    return manifest.success && manifest.data.name === PLUGIN_NAME;
  }
  const doc = HookDocument.safeParse(parsedJson(file));
  if (!doc.success) return false;
  const commands = Object.values(doc.data.hooks).flatMap((groups) => groups.flatMap((group) => group.hooks.map((hook) => hook.command)));
  return commands.length > 0 && commands.every(isEvermeHookCommand);
}

/** Why one of our two paths (or its directory) is not everme's, or undefined when it is (or is absent). */
function foreignAt(dir: string, rel: typeof MANIFEST_REL | typeof HOOKS_REL): string | undefined {
  const parent = lstatOrUndefined(path.join(dir, path.dirname(rel)));
  if (!parent) return undefined;
  if (!parent.isDirectory()) return `${path.dirname(rel)} is not a directory`;
  const st = lstatOrUndefined(path.join(dir, rel));
  if (!st) return undefined;
  if (!st.isFile()) return `${rel} is not a regular file`;
  if (holdsOurs(rel, path.join(dir, rel))) return undefined;
  return rel === MANIFEST_REL ? `${rel} is the manifest of another plugin` : `${rel} holds hooks everme did not write`;
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
  for (const rel of [MANIFEST_REL, HOOKS_REL] as const) {
    const foreign = foreignAt(dir, rel);
    if (foreign) return { kind: 'conflict', reason: `${dir} is not everme's: ${foreign}` };
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

export type PluginRemoveResult = { status: 'removed' | 'absent' | 'kept'; path: string; note?: string };

/** What is left under `dir` (relative paths, files before the directories they empty), for the report. */
function leftovers(dir: string, rel = ''): string[] {
  let names: string[];
  try {
    names = readdirSync(path.join(dir, rel)).sort();
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const childRel = rel ? `${rel}/${name}` : name;
    const inner = lstatOrUndefined(path.join(dir, childRel))?.isDirectory() ? leftovers(dir, childRel) : [];
    return inner.length > 0 ? inner : [childRel];
  });
}

/**
 * Removes each of our two files that holds what install writes (another plugin's manifest, or a
 * hook document with someone else's commands, stays), then each plugin directory install created
 * (deepest first) once nothing else is left in it: a `plugins` directory the user had, or one
 * holding other plugins, stays. Hooks of ours never outlive the runtime they run.
 */
export function removeLocalPlugin(dataDir: string, created: ReadonlySet<string>, dryRun: boolean): PluginRemoveResult {
  const dir = pluginDir(dataDir);
  const top = lstatOrUndefined(dir);
  if (!top) return { status: 'absent', path: dir };
  if (top.isSymbolicLink() || !top.isDirectory()) return { status: 'kept', path: dir, note: `not removed: ${dir} is ${top.isSymbolicLink() ? 'a symbolic link' : 'not a directory'}` };
  const gone = new Set<string>();
  for (const rel of [MANIFEST_REL, HOOKS_REL] as const) {
    const file = path.join(dir, rel);
    if (lstatOrUndefined(file) === undefined || foreignAt(dir, rel) !== undefined) continue;
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
  const left = gone.has(dir) ? [] : leftovers(dir).filter((rel) => !gone.has(path.join(dir, rel)));
  if (left.length === 0) return { status: gone.size > 0 ? 'removed' : 'absent', path: dir };
  const what = `${left.slice(0, 5).join(', ')}${left.length > 5 ? `, and ${left.length - 5} more` : ''}`;
  if (gone.size === 0) return { status: 'kept', path: dir, note: `not removed: nothing in it is everme's (${what})` };
  return { status: 'removed', path: dir, note: `everme's files removed; the directory stays: it still holds ${what}, which everme did not write` };
}
