import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { z } from 'zod';

/**
 * MiniMax's marketplace build of EverMe (`everme@official`) captures the same conversations under
 * its own identity. Both running means every conversation is stored twice, so install warns. Every
 * probe here is best effort: nothing it meets may fail the install.
 */
export type OfficialPluginStatus = 'enabled' | 'installed' | 'disabled' | 'not_detected';

export interface OfficialPluginDetection {
  status: OfficialPluginStatus;
  /** Where the answer came from: `mcode plugin list`, or files in the data dir. */
  source: 'mcode' | 'data-dir';
  /** What was seen, as paths and facts (never file content). */
  evidence: string[];
}

export interface DetectOptions {
  /** PATH to look for `mcode` on; defaults to the process's. */
  pathEnv?: string;
  timeoutMs?: number;
}

const OFFICIAL_ID = 'everme@official';

const PluginEntry = z.object({
  id: z.string().optional().catch(undefined),
  name: z.string().optional().catch(undefined),
  pluginId: z.string().optional().catch(undefined),
  marketplace: z.string().optional().catch(undefined),
  source: z.string().optional().catch(undefined),
  enabled: z.boolean().optional().catch(undefined),
  status: z.string().optional().catch(undefined),
  state: z.string().optional().catch(undefined),
});

const PluginList = z.union([
  z.array(z.unknown()),
  z.object({ plugins: z.array(z.unknown()) }).transform((v) => v.plugins),
  z.object({ installed: z.array(z.unknown()) }).transform((v) => v.installed),
  z.object({ data: z.object({ plugins: z.array(z.unknown()) }) }).transform((v) => v.data.plugins),
]);

function findOnPath(command: string, pathEnv: string): string | undefined {
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

function isOfficialEverme(entry: z.infer<typeof PluginEntry>): boolean {
  const ids = [entry.id, entry.pluginId, entry.name].filter((v): v is string => typeof v === 'string').map((v) => v.toLowerCase());
  if (ids.includes(OFFICIAL_ID)) return true;
  if (!ids.includes('everme')) return false;
  const origin = (entry.marketplace ?? entry.source ?? 'official').toLowerCase();
  return origin.includes('official');
}

function isDisabled(entry: z.infer<typeof PluginEntry>): boolean {
  if (entry.enabled === false) return true;
  return [entry.status, entry.state].some((v) => typeof v === 'string' && /disabled|inactive|off/i.test(v));
}

/** `mcode plugin list --json`, when `mcode` is on PATH and answers in time with something readable. */
function detectWithMcode(options: DetectOptions): OfficialPluginDetection | undefined {
  const mcode = findOnPath('mcode', options.pathEnv ?? process.env.PATH ?? '');
  if (!mcode) return undefined;
  let stdout: string;
  try {
    const result = spawnSync(mcode, ['plugin', 'list', '--json'], {
      encoding: 'utf8',
      timeout: options.timeoutMs ?? 3000,
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 4 * 1024 * 1024,
    });
    if (result.error || result.status !== 0) return undefined;
    stdout = result.stdout;
  } catch {
    return undefined;
  }
  const list = PluginList.safeParse(parseJsonLeniently(stdout));
  if (!list.success) return undefined;
  for (const item of list.data) {
    const entry = PluginEntry.safeParse(item);
    if (!entry.success || !isOfficialEverme(entry.data)) continue;
    const disabled = isDisabled(entry.data);
    return {
      status: disabled ? 'disabled' : 'enabled',
      source: 'mcode',
      evidence: [`\`${mcode} plugin list --json\` lists ${OFFICIAL_ID} as ${disabled ? 'disabled' : 'enabled'}`],
    };
  }
  return { status: 'not_detected', source: 'mcode', evidence: [`\`${mcode} plugin list --json\` does not list ${OFFICIAL_ID}`] };
}

type Verdict = 'enabled' | 'disabled' | undefined;

const EVERME_KEY = /^everme(@official)?$/i;

function flag(value: unknown): Verdict {
  if (value === true || value === 1 || value === '1' || value === 'true') return 'enabled';
  if (value === false || value === 0 || value === '0' || value === 'false') return 'disabled';
  if (typeof value === 'string' && /^(enabled|active|on)$/i.test(value)) return 'enabled';
  if (typeof value === 'string' && /^(disabled|inactive|off)$/i.test(value)) return 'disabled';
  return undefined;
}

function parseMaybeJson(value: unknown): unknown {
  if (typeof value !== 'string' || !/^\s*[[{]/.test(value)) return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/**
 * Looks through whatever shape the runtime's plugin state has for a statement about everme:
 * an object naming everme with an `enabled`/`status` field, a map keyed by everme, or a list of
 * enabled/disabled plugin ids. The schema is private to MiniMax, so nothing is assumed beyond that.
 */
function scanForEverme(value: unknown, depth = 0): Verdict {
  if (depth > 12) return undefined;
  const node = parseMaybeJson(value);
  if (Array.isArray(node)) {
    for (const item of node) {
      const verdict = scanForEverme(item, depth + 1);
      if (verdict) return verdict;
    }
    return undefined;
  }
  if (typeof node !== 'object' || node === null) return undefined;
  const record = node as Record<string, unknown>;
  const names = ['id', 'name', 'pluginId', 'plugin_id', 'plugin', 'key'].map((k) => record[k]);
  if (names.some((n) => typeof n === 'string' && EVERME_KEY.test(n))) {
    const verdict = flag(record.enabled) ?? flag(record.status) ?? flag(record.state);
    if (verdict) return verdict;
  }
  for (const [key, child] of Object.entries(record)) {
    if (EVERME_KEY.test(key)) {
      const inner = parseMaybeJson(child);
      const verdict =
        flag(inner) ??
        (typeof inner === 'object' && inner !== null
          ? flag((inner as Record<string, unknown>).enabled) ?? flag((inner as Record<string, unknown>).status)
          : undefined);
      if (verdict) return verdict;
    }
    const list = parseMaybeJson(child);
    if (Array.isArray(list) && list.some((v) => typeof v === 'string' && EVERME_KEY.test(v))) {
      if (/disabled/i.test(key)) return 'disabled';
      if (/enabled|installed|active/i.test(key)) return 'enabled';
    }
    const verdict = scanForEverme(child, depth + 1);
    if (verdict) return verdict;
  }
  return undefined;
}

async function readRuntimeState(file: string): Promise<Verdict> {
  if (!existsSync(file)) return undefined;
  try {
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      const table = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'local_runtime_plugin_official_state'")
        .get();
      if (!table) return undefined;
      const rows = db.prepare('SELECT * FROM local_runtime_plugin_official_state LIMIT 1000').all();
      let verdict: Verdict;
      for (const row of rows) {
        const found = scanForEverme(row);
        if (found === 'enabled') return 'enabled';
        verdict = found ?? verdict;
      }
      return verdict;
    } finally {
      db.close();
    }
  } catch {
    return undefined;
  }
}

function officialCacheEntries(dataDir: string): string[] {
  const dir = path.join(dataDir, 'v2', 'plugin-cache', 'official');
  try {
    return readdirSync(dir)
      .filter((name) => /^everme/i.test(name))
      .map((name) => path.join(dir, name));
  } catch {
    return [];
  }
}

export function runtimeStatePath(dataDir: string): string {
  return path.join(dataDir, 'v2', 'sqlite', 'runtime-state.sqlite');
}

/** Whether MiniMax's own everme plugin is active: `mcode` first, else the data dir's traces. */
export async function detectOfficialPlugin(dataDir: string, options: DetectOptions = {}): Promise<OfficialPluginDetection> {
  const viaMcode = detectWithMcode(options);
  if (viaMcode) return viaMcode;
  const evidence: string[] = [];
  const cached = officialCacheEntries(dataDir);
  if (cached.length > 0) evidence.push(`plugin cache: ${cached.join(', ')}`);
  const state = await readRuntimeState(runtimeStatePath(dataDir));
  if (state) evidence.push(`${runtimeStatePath(dataDir)} marks ${OFFICIAL_ID} as ${state}`);
  const status: OfficialPluginStatus =
    state === 'enabled' ? 'enabled' : state === 'disabled' ? 'disabled' : cached.length > 0 ? 'installed' : 'not_detected';
  return { status, source: 'data-dir', evidence };
}
