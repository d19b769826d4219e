import { accessSync, constants } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import * as z from 'zod';

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

export type McodePluginList =
  | { kind: 'listed'; mcode: string; entries: McodePluginEntry[] }
  | { kind: 'unavailable'; reason: string; mcode?: string };

export const DEFAULT_MCODE_TIMEOUT_MS = 3000;

type McodeRun = { kind: 'answered'; stdout: string } | { kind: 'failed'; why: string };

/**
 * Runs `mcode` in its own process group and kills the whole group at the deadline: a wrapper
 * script's children would otherwise keep the pipe open (and this process waiting) past it.
 */
function runMcode(mcode: string, timeoutMs: number): Promise<McodeRun> {
  return new Promise((resolve) => {
    let stdout = '';
    let settled = false;
    const finish = (run: McodeRun): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(run);
    };
    let child: ChildProcess;
    try {
      child = spawn(mcode, ['plugin', 'list', '--json'], { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
    } catch {
      resolve({ kind: 'failed', why: 'could not be started' });
      return;
    }
    const timer = setTimeout(() => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      child.stdout?.destroy();
      finish({ kind: 'failed', why: `timed out after ${timeoutMs / 1000} s` });
    }, timeoutMs);
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      if (stdout.length < 4 * 1024 * 1024) stdout += chunk;
    });
    child.on('error', () => finish({ kind: 'failed', why: 'could not be started' }));
    child.on('close', (code) => finish(code === 0 ? { kind: 'answered', stdout } : { kind: 'failed', why: `exited with status ${code ?? 'signal'}` }));
  });
}

/**
 * The one place `mcode plugin list --json` is run (install's official-plugin check and status's
 * plugin-route check both ask it). Never throws and never waits past the timeout.
 */
export async function listMcodePlugins(options: McodeOptions = {}): Promise<McodePluginList> {
  const mcode = findOnPath('mcode', options.pathEnv ?? process.env.PATH ?? '');
  if (!mcode) return { kind: 'unavailable', reason: '`mcode` is not on PATH' };
  const command = `\`${mcode} plugin list --json\``;
  const run = await runMcode(mcode, options.timeoutMs ?? DEFAULT_MCODE_TIMEOUT_MS);
  if (run.kind === 'failed') return { kind: 'unavailable', mcode, reason: `${command} ${run.why}` };
  const list = PluginList.safeParse(parseJsonLeniently(run.stdout));
  if (!list.success) return { kind: 'unavailable', mcode, reason: `${command} printed no plugin list` };
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
