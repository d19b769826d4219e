import * as z from 'zod';
import { openRuntimeState, runtimeStatePath } from '../transcript/runtime-state.js';
import { entryDisabled, listMcodePlugins, type McodePluginEntry, type McodePluginList } from './mcode-plugins.js';

/**
 * MiniMax's marketplace build of EverMe (`everme@official`) captures the same conversations under
 * its own identity. Both running means every conversation is stored twice, so install warns. Every
 * probe here is best effort: nothing it meets may fail the install.
 *
 * Where the answer comes from: `mcode plugin list --json` when `mcode` is on PATH and answers in
 * time, else the runtime's own record, `<data>/v2/sqlite/runtime-state.sqlite`. The packages in
 * `<data>/v2/plugin-cache/official/` sit in digest-named directories, so they name no plugin.
 */
export type OfficialPluginStatus = 'enabled' | 'disabled' | 'not_detected';

export interface OfficialPluginDetection {
  status: OfficialPluginStatus;
  /** Where the answer came from; `none` when neither source could say. */
  source: 'mcode' | 'runtime-state' | 'none';
  /** One sentence for the user: what was found, and where. */
  message: string;
  /** What was seen, as commands, paths and facts (never file content). */
  evidence: string[];
}

export interface DetectOptions {
  /** PATH to look for `mcode` on; defaults to the process's. */
  pathEnv?: string;
  timeoutMs?: number;
}

const OFFICIAL_ID = 'everme@official';

function isOfficialEverme(entry: McodePluginEntry): boolean {
  const ids = [entry.id, entry.pluginId, entry.name].filter((v): v is string => typeof v === 'string').map((v) => v.toLowerCase());
  if (ids.includes(OFFICIAL_ID)) return true;
  if (!ids.includes('everme')) return false;
  const origin = (entry.marketplace ?? entry.source ?? 'official').toLowerCase();
  return origin.includes('official');
}

/** `mcode plugin list --json`, when `mcode` is on PATH and answers in time with something readable. */
function detectWithMcode(list: McodePluginList, evidence: string[]): OfficialPluginDetection | undefined {
  if (list.kind === 'unavailable') {
    // Not on PATH is no evidence; a command that failed or printed nothing readable is.
    if (list.mcode !== undefined) evidence.push(list.reason);
    return undefined;
  }
  const command = `\`${list.mcode} plugin list --json\``;
  for (const entry of list.entries) {
    if (!isOfficialEverme(entry)) continue;
    const status = entryDisabled(entry) ? 'disabled' : 'enabled';
    evidence.push(`${command} lists ${OFFICIAL_ID} as ${status}`);
    return { status, source: 'mcode', message: messageFor(status, 'mcode'), evidence };
  }
  evidence.push(`${command} does not list ${OFFICIAL_ID}`);
  return { status: 'not_detected', source: 'mcode', message: messageFor('not_detected', 'mcode'), evidence };
}

/**
 * One row per account and deployment (`principal_id`, `deployment`, `state_json`, `updated_at_ms`);
 * `state_json` is `{ schemaVersion: 1, installations: [{ name, installed, enabled, … }] }`, as the
 * public MiniMax Code source writes it. Read tolerantly: a row or an installation that does not
 * fit is skipped, never fatal.
 */
const StateRow = z.looseObject({ state_json: z.string(), updated_at_ms: z.number().optional().catch(undefined) });
const OfficialState = z.looseObject({ installations: z.array(z.unknown()) });
const Installation = z.looseObject({
  name: z.string(),
  installed: z.boolean().optional().catch(undefined),
  enabled: z.boolean().optional().catch(undefined),
});

type StateVerdict = { status: OfficialPluginStatus; evidence: string } | undefined;

function verdictOfRow(row: unknown, file: string): StateVerdict {
  const parsedRow = StateRow.safeParse(row);
  if (!parsedRow.success) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(parsedRow.data.state_json);
  } catch {
    return undefined;
  }
  const state = OfficialState.safeParse(json);
  if (!state.success) return undefined;
  for (const item of state.data.installations) {
    const installation = Installation.safeParse(item);
    if (!installation.success || !/^everme(@official)?$/i.test(installation.data.name)) continue;
    const { installed, enabled } = installation.data;
    if (installed === false) return { status: 'not_detected', evidence: `${file} lists ${OFFICIAL_ID} as not installed` };
    const status = enabled === true ? 'enabled' : 'disabled';
    return { status, evidence: `${file} lists ${OFFICIAL_ID} as installed and ${status}` };
  }
  return { status: 'not_detected', evidence: `${file} lists no ${OFFICIAL_ID} installation` };
}

/**
 * The runtime's record, opened read-only with a short busy timeout, without changing anything on
 * disk (see `openRuntimeState`). With several accounts on the machine the most recently updated
 * row is the account in use.
 */
function readRuntimeState(file: string): StateVerdict {
  const opened = openRuntimeState(file);
  if (!opened.ok) return undefined;
  try {
    const table = opened.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'local_runtime_plugin_official_state'").get();
    if (!table) return undefined;
    const rows = opened.db.prepare('SELECT * FROM local_runtime_plugin_official_state ORDER BY updated_at_ms DESC LIMIT 100').all();
    for (const row of rows) {
      const verdict = verdictOfRow(row, file);
      if (verdict) return verdict;
    }
    return undefined;
  } catch {
    // Not SQLite, another schema, locked past the timeout: the state simply says nothing.
    return undefined;
  } finally {
    opened.close();
  }
}

function messageFor(status: OfficialPluginStatus, source: OfficialPluginDetection['source']): string {
  const where = source === 'mcode' ? 'according to `mcode plugin list`' : source === 'runtime-state' ? "according to MiniMax Code's runtime state" : '';
  switch (status) {
    case 'enabled':
      return `${OFFICIAL_ID} is installed and enabled ${where}`;
    case 'disabled':
      return `${OFFICIAL_ID} is installed but disabled ${where}`;
    case 'not_detected':
      return source === 'none' ? `${OFFICIAL_ID} was not detected (neither \`mcode\` nor MiniMax Code's runtime state could tell)` : `${OFFICIAL_ID} is not installed ${where}`;
  }
}

/**
 * Whether MiniMax's own everme plugin is active: `mcode` first, else the runtime's SQLite state.
 * `listed`: what `mcode plugin list --json` already said (status asks it once for both plugins).
 */
export async function detectOfficialPlugin(dataDir: string, options: DetectOptions = {}, listed?: McodePluginList): Promise<OfficialPluginDetection> {
  const evidence: string[] = [];
  const viaMcode = detectWithMcode(listed ?? (await listMcodePlugins(options)), evidence);
  if (viaMcode) return viaMcode;
  const state = readRuntimeState(runtimeStatePath(dataDir));
  if (state) {
    evidence.push(state.evidence);
    return { status: state.status, source: 'runtime-state', message: messageFor(state.status, 'runtime-state'), evidence };
  }
  return { status: 'not_detected', source: 'none', message: messageFor('not_detected', 'none'), evidence };
}
