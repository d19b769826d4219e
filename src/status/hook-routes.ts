import { existsSync, lstatSync, readFileSync } from 'node:fs';
import type { HookEvent } from '../hook/hook-events.js';
import { HookDocument, inspectPluginPath, PLUGIN_EVENTS, PLUGIN_NAME, pluginDir, pluginHooksPath } from '../install/local-plugin.js';
import { foreignHookFile, HOOK_EVENTS, hookFilePath, quotedWords, readHookCommand } from '../install/markdown-hooks.js';
import { listMcodePlugins, localPluginState, type McodeOptions, type McodePluginList } from '../install/mcode-plugins.js';
import { detectOfficialPlugin, type OfficialPluginDetection } from '../install/official-plugin.js';

/**
 * Each install route on its own, and what actually arrived through it. Files that exist prove
 * nothing: only the hook's own event log says the host runs them.
 */
export interface PluginRouteStatus {
  path: string;
  /** `conflict`: something that is not ours sits at the plugin path. */
  state: 'installed' | 'missing' | 'conflict';
  runnable: boolean;
  /** From `mcode plugin list --json`; `cannot_verify` when that gave no list (see `enabledUnverified`). */
  enabled: 'enabled' | 'disabled' | 'not_listed' | 'cannot_verify';
  /** Why the enabled state cannot be verified: `mcode` not on PATH, or how its run failed (timed out, exit status). */
  enabledUnverified?: string;
  events: string[];
  note?: string;
}

export interface MarkdownRouteStatus {
  installed: Array<{ event: string; file: string; runnable: boolean }>;
  /**
   * Hook paths taken by something that is not everme's hook: another tool's hook or a symlink
   * (`hook_file_conflict`, which install never overwrites), or what cannot be a hook file at all (a
   * directory, a file everme cannot read). The event is not captured on this route.
   */
  conflicts: Array<{ event: string; file: string; code: 'hook_file_conflict' | 'hook_file_unusable'; reason: string }>;
}

export interface HookArrival {
  /** `plugin`, `markdown`, or `unknown` for commands of installs older than the route tag. */
  route: string;
  /** The host's `hook_event_name`; `(unnamed)` for a payload that carried none. */
  event: string;
  count: number;
  lastAt: string;
}

export interface HookRouteWarning {
  code: 'no_hook_events' | 'plugin_disabled' | 'official_plugin_enabled';
  message: string;
  /** Events installed but never received. */
  missing?: string[];
}

export interface HookRoutesReport {
  plugin: PluginRouteStatus;
  markdown: MarkdownRouteStatus;
  arrivals: HookArrival[];
  /** MiniMax's own everme@official, as install detects it: enabled beside ours, every conversation is stored twice. */
  official: Pick<OfficialPluginDetection, 'status' | 'source' | 'message'>;
  warnings: HookRouteWarning[];
  /** Broken installs: make `everme status` exit non-zero. */
  problems: Array<{ what: string; hint: string }>;
}

/** The absolute paths a command names in single quotes (node, run.js) all exist. */
function commandRunnable(command: string | undefined): boolean {
  const paths = quotedWords(command ?? '');
  return paths.length >= 2 && paths.every((p) => existsSync(p));
}

function pluginRoute(dataDir: string, list: McodePluginList): PluginRouteStatus {
  const dir = pluginDir(dataDir);
  const state = inspectPluginPath(dataDir);
  // An `mcode` that is on PATH but timed out or failed is not an `mcode` that is missing: keep why.
  const verified = {
    enabled: localPluginState(list, PLUGIN_NAME),
    ...(list.kind === 'unavailable' ? { enabledUnverified: list.reason } : {}),
  } as const;
  if (state.kind === 'conflict') return { path: dir, state: 'conflict', runnable: false, ...verified, events: [], note: state.reason };
  let doc: HookDocument | undefined;
  try {
    const parsed = HookDocument.safeParse(JSON.parse(readFileSync(pluginHooksPath(dataDir), 'utf8')));
    doc = parsed.success ? parsed.data : undefined;
  } catch {
    doc = undefined;
  }
  if (!doc) return { path: dir, state: 'missing', runnable: false, ...verified, events: [] };
  const events = PLUGIN_EVENTS.filter((event) => (doc.hooks[event] ?? []).length > 0);
  const commands = Object.values(doc.hooks).flatMap((groups) => groups.flatMap((g) => g.hooks.map((h) => h.command)));
  return { path: dir, state: 'installed', runnable: commands.length > 0 && commands.every(commandRunnable), ...verified, events };
}

/** What sits at a hook path that is not a file `readFileSync` can read: undefined for a file or nothing. */
function unusableHookPath(file: string): string | undefined {
  try {
    const stat = lstatSync(file);
    if (stat.isDirectory()) return 'it is a directory, not a hook file';
  } catch {
    // Absent, or unreadable, which foreignHookFile names.
  }
  return undefined;
}

/** Each hook path as install judges it (`foreignHookFile`): everme's (runnable or not), someone else's, or unusable. */
function markdownRoute(dataDir: string): MarkdownRouteStatus {
  const route: MarkdownRouteStatus = { installed: [], conflicts: [] };
  for (const event of HOOK_EVENTS) {
    const file = hookFilePath(dataDir, event);
    if (!existsSync(file) && !isDanglingLink(file)) continue;
    const unusable = unusableHookPath(file);
    if (unusable !== undefined) {
      route.conflicts.push({ event, file, code: 'hook_file_unusable', reason: unusable });
      continue;
    }
    const foreign = foreignHookFile(file);
    if (foreign !== undefined) {
      const code = foreign.startsWith('everme cannot read it') ? 'hook_file_unusable' : 'hook_file_conflict';
      route.conflicts.push({ event, file, code, reason: foreign });
      continue;
    }
    route.installed.push({ event, file, runnable: commandRunnable(readHookCommand(readFileSync(file, 'utf8'))) });
  }
  return route;
}

/** A symlink to nothing: `existsSync` says absent, yet the path is taken, and install will not write through it. */
function isDanglingLink(file: string): boolean {
  try {
    return lstatSync(file).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Arrivals per route and event, from the event log: the host ran the hook, whatever came of it. */
export function hookArrivals(events: HookEvent[]): HookArrival[] {
  const byKey = new Map<string, HookArrival & { t: number }>();
  for (const e of events) {
    // A record naming neither (a hand-run `everme hook`, an old install's garbage input) says nothing about a route.
    if (e.event === undefined && e.route === undefined) continue;
    const route = e.route ?? 'unknown';
    const event = e.event ?? '(unnamed)';
    const key = `${route}\u0000${event}`;
    const seen = byKey.get(key);
    if (seen) {
      seen.count += 1;
      if (e.t > seen.t) seen.t = e.t;
    } else {
      byKey.set(key, { route, event, count: 1, t: e.t, lastAt: '' });
    }
  }
  return [...byKey.values()]
    .map(({ t, ...a }) => ({ ...a, lastAt: new Date(t).toISOString() }))
    .sort((a, b) => a.route.localeCompare(b.route) || a.event.localeCompare(b.event));
}

export async function collectHookRoutes(dataDir: string, events: HookEvent[], mcode: McodeOptions = {}): Promise<HookRoutesReport> {
  // Asked once: the answer says whether each plugin, ours and everme@official, is enabled.
  const list = await listMcodePlugins(mcode);
  const plugin = pluginRoute(dataDir, list);
  const { status, source, message } = await detectOfficialPlugin(dataDir, mcode, list);
  const official = { status, source, message };
  const markdown = markdownRoute(dataDir);
  const arrivals = hookArrivals(events);
  const warnings: HookRouteWarning[] = [];
  const problems: HookRoutesReport['problems'] = [];

  const pluginInstalled = plugin.state === 'installed';
  if (!pluginInstalled && markdown.installed.length === 0) {
    problems.push({ what: 'no everme hooks are installed', hint: 'Run `everme install` to capture sessions as you work.' });
  }
  if (plugin.state === 'conflict') {
    problems.push({ what: `the ${PLUGIN_NAME} plugin could not be installed: ${plugin.note ?? 'the path is taken'}`, hint: 'Move that path away, then run `everme install` again.' });
  }
  if (pluginInstalled && !plugin.runnable) {
    problems.push({ what: `the ${PLUGIN_NAME} plugin points at a runtime that is missing (${plugin.path})`, hint: 'Run `everme install` again to restage the runtime.' });
  }
  for (const hook of markdown.installed) {
    if (!hook.runnable) problems.push({ what: `the ${hook.event} hook points at a runtime that is missing (${hook.file})`, hint: 'Run `everme install` again to restage the runtime.' });
  }
  for (const taken of markdown.conflicts) {
    // Install never overwrites another tool's hook: "run install again" alone would go round in a loop.
    problems.push({
      what:
        taken.code === 'hook_file_conflict'
          ? `${taken.file} is not everme's ${taken.event} hook (hook_file_conflict): ${taken.reason}`
          : `${taken.file} cannot be everme's ${taken.event} hook: ${taken.reason}`,
      hint: `Move ${taken.file} away (everme never overwrites or removes it), then run \`everme install\` again.`,
    });
  }
  if (status === 'enabled') {
    warnings.push({
      code: 'official_plugin_enabled',
      message: `${message}: every conversation is stored twice, under two identities. Keep one: disable the official plugin in MiniMax Code, or run \`everme uninstall\`.`,
    });
  }
  if (pluginInstalled && plugin.enabled === 'disabled') {
    warnings.push({
      code: 'plugin_disabled',
      message: `MiniMax Code lists ${PLUGIN_NAME}@local as disabled: builds that load hooks from plugins capture nothing. Enable it with \`mcode plugin enable ${PLUGIN_NAME}@local\`.`,
    });
  }
  const installedEvents = [...(pluginInstalled ? plugin.events : []), ...markdown.installed.map((h) => h.event)];
  if (installedEvents.length > 0 && arrivals.length === 0) {
    const missing = [...new Set(installedEvents)];
    warnings.push({
      code: 'no_hook_events',
      missing,
      message: `hooks are installed, but MiniMax Code has not run one yet (never received: ${missing.join(', ')}). Start a MiniMax Code session (restart a running one) so it loads them, then run \`everme status\` again.`,
    });
  }
  return { plugin, markdown, arrivals, official, warnings, problems };
}

const ENABLED_TEXT: Record<Exclude<PluginRouteStatus['enabled'], 'cannot_verify'>, string> = {
  enabled: 'enabled in MiniMax Code',
  disabled: 'DISABLED in MiniMax Code',
  not_listed: 'not listed by `mcode plugin list`',
};

/** What `mcode plugin list` said, or why it said nothing: not on PATH, timed out, failed. */
function enabledText(p: PluginRouteStatus): string {
  if (p.enabled !== 'cannot_verify') return ENABLED_TEXT[p.enabled];
  return `enabled state cannot be verified (${p.enabledUnverified ?? '`mcode` is not on PATH'})`;
}

export function renderHookRoutes(r: HookRoutesReport): string[] {
  const plugin =
    r.plugin.state === 'installed'
      ? `${r.plugin.path}${r.plugin.runnable ? '' : ' (broken)'}, ${enabledText(r.plugin)}`
      : r.plugin.state === 'conflict'
        ? `not installed: ${r.plugin.note ?? 'the path is taken'}`
        : 'not installed';
  const markdownHooks = [
    ...r.markdown.installed.map((h) => `${h.event}${h.runnable ? '' : ' (broken)'}`),
    ...r.markdown.conflicts.map((c) => `${c.event} not installed (${c.file}: ${c.reason})`),
  ];
  const markdown = markdownHooks.length === 0 ? 'not installed' : markdownHooks.join(', ');
  const routes = [...new Set(['plugin', 'markdown', ...r.arrivals.map((a) => a.route)])];
  const lines = [`plugin hooks: ${plugin}`, `markdown hooks: ${markdown}`, `official plugin: ${r.official.message}`, 'hook events:'];
  for (const route of routes) {
    const got = r.arrivals.filter((a) => a.route === route);
    lines.push(`  ${route}: ${got.length === 0 ? 'none received' : got.map((a) => `${a.event} ×${a.count} (last ${a.lastAt})`).join(', ')}`);
  }
  for (const w of r.warnings) lines.push(`warning: ${w.message}`);
  return lines;
}
