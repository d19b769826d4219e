import { accessSync, constants } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { z } from 'zod';

/**
 * `mcode plugin list --json`, read leniently: the reference documents the command but not its
 * output's shape, so an entry is any object naming a plugin, and the list is found in the few
 * shapes a CLI plausibly prints. Best effort: any failure means "cannot verify".
 */
export const McodePluginEntry = z.object({
  id: z.string().optional().catch(undefined),
  name: z.string().optional().catch(undefined),
  pluginId: z.string().optional().catch(undefined),
  marketplace: z.string().optional().catch(undefined),
  source: z.string().optional().catch(undefined),
  enabled: z.boolean().optional().catch(undefined),
  status: z.string().optional().catch(undefined),
  state: z.string().optional().catch(undefined),
});
export type McodePluginEntry = z.infer<typeof McodePluginEntry>;

const PluginList = z.union([
  z.array(z.unknown()),
  z.object({ plugins: z.array(z.unknown()) }).transform((v) => v.plugins),
  z.object({ installed: z.array(z.unknown()) }).transform((v) => v.installed),
  z.object({ data: z.object({ plugins: z.array(z.unknown()) }) }).transform((v) => v.data.plugins),
]);

export interface McodeOptions {
  /** PATH to look for `mcode` on; defaults to the process's. */
  pathEnv?: string;
  timeoutMs?: number;
}

export function findOnPath(command: string, pathEnv: string): string | undefined {
  for (const dir of pathEnv.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

function parseJsonLeniently(text: string): unknown {
  const trimmed = text.trim();
  for (const start of [0, trimmed.search(/[[{]/)]) {
    if (start < 0) continue;
    try {
      return JSON.parse(trimmed.slice(start));
    } catch {
      // try the next start
    }
  }
  return undefined;
}

export type McodePluginList = { kind: 'listed'; mcode: string; entries: McodePluginEntry[] } | { kind: 'unavailable'; reason: string };

export function listMcodePlugins(options: McodeOptions = {}): McodePluginList {
  const mcode = findOnPath('mcode', options.pathEnv ?? process.env.PATH ?? '');
  if (!mcode) return { kind: 'unavailable', reason: '`mcode` is not on PATH' };
  const result = spawnSync(mcode, ['plugin', 'list', '--json'], {
    encoding: 'utf8',
    timeout: options.timeoutMs ?? 3000,
    stdio: ['ignore', 'pipe', 'ignore'],
    maxBuffer: 4 * 1024 * 1024,
  });
  if (result.error || result.status !== 0) return { kind: 'unavailable', reason: '`mcode plugin list --json` failed' };
  const list = PluginList.safeParse(parseJsonLeniently(result.stdout));
  if (!list.success) return { kind: 'unavailable', reason: '`mcode plugin list --json` printed nothing readable' };
  const entries = list.data.flatMap((item) => {
    const entry = McodePluginEntry.safeParse(item);
    return entry.success ? [entry.data] : [];
  });
  return { kind: 'listed', mcode, entries };
}

export function entryDisabled(entry: McodePluginEntry): boolean {
  if (entry.enabled === false) return true;
  return [entry.status, entry.state].some((v) => typeof v === 'string' && /disabled|inactive|off/i.test(v));
}

/** Whether the host lists a local plugin (`NAME@local`, or NAME from a local source) and enables it. */
export function localPluginState(list: McodePluginList, name: string): 'enabled' | 'disabled' | 'not_listed' | 'cannot_verify' {
  if (list.kind === 'unavailable') return 'cannot_verify';
  const id = `${name}@local`.toLowerCase();
  for (const entry of list.entries) {
    const ids = [entry.id, entry.pluginId, entry.name].filter((v): v is string => typeof v === 'string').map((v) => v.toLowerCase());
    const origin = (entry.marketplace ?? entry.source ?? 'local').toLowerCase();
    if (ids.includes(id) || (ids.includes(name.toLowerCase()) && origin.includes('local'))) return entryDisabled(entry) ? 'disabled' : 'enabled';
  }
  return 'not_listed';
}
