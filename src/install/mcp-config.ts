import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { EvermeError } from '../core/errors.js';
import path from 'node:path';
import { isRecord } from '../core/json.js';
import { existingMode, writeFileAtomic } from './atomic-write.js';
import type { StepStatus } from './staging.js';

export const MCP_SERVER_NAME = 'everme-memory';
const NEW_FILE_MODE = 0o600;

export interface McpServerEntry {
  command: string;
  args: string[];
  env: Record<string, string>;
}

export function mcpConfigPath(dataDir: string): string {
  return path.join(dataDir, 'mcp.json');
}

export function mcpBackupPath(file: string): string {
  return `${file}.everme-backup`;
}

type JsonObject = Record<string, unknown>;

interface JsonFormat {
  indent: string;
  finalNewline: boolean;
}

export type McpDocument =
  | { kind: 'missing' }
  | { kind: 'invalid'; reason: string }
  | { kind: 'ok'; text: string; doc: JsonObject; servers: JsonObject | undefined; format: JsonFormat; mode: number };

/** The user's indentation and final newline, so a rewrite changes only the lines that change. */
function detectFormat(text: string): JsonFormat {
  const finalNewline = text.endsWith('\n');
  const body = text.trim();
  if (!/^\{[^\n]*\n/.test(body)) return { indent: /^\{\s*\}$/.test(body) ? '  ' : '', finalNewline };
  const indent = /^\{[^\n]*\r?\n([ \t]+)\S/.exec(body)?.[1] ?? '  ';
  return { indent, finalNewline };
}

function serialize(doc: JsonObject, format: JsonFormat): string {
  const text = format.indent ? JSON.stringify(doc, null, format.indent) : JSON.stringify(doc);
  return format.finalNewline ? `${text}\n` : text;
}

/**
 * Reads `mcp.json` the way an editor that must not lose anything would: a file that is not a JSON
 * object, or whose `mcpServers` is not an object, is reported and never rewritten.
 */
export function readMcpDocument(file: string): McpDocument {
  let text: string;
  try {
    // A directory (or a FIFO, whose read would block) there is as unusable as a file of bad JSON:
    // reported and skipped like one, so the other steps still run.
    const stat = statSync(file);
    if (!stat.isFile()) return { kind: 'invalid', reason: `it is ${stat.isDirectory() ? 'a directory' : 'not a regular file'}, not a JSON file` };
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' };
    // Node's read errors name no path: say which file, and what to do.
    throw new EvermeError('io', `cannot read ${file}: ${(err as Error).message}`, {
      code: (err as NodeJS.ErrnoException).code?.toLowerCase() ?? 'io',
      hint: 'Check that MiniMax Code\'s mcp.json is a file you can read and write.',
      cause: err,
    });
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return { kind: 'invalid', reason: `not valid JSON (${(err as Error).message})` };
  }
  if (!isRecord(doc)) return { kind: 'invalid', reason: 'the top level is not a JSON object' };
  const servers = doc.mcpServers;
  if (servers !== undefined && !isRecord(servers)) return { kind: 'invalid', reason: '"mcpServers" is not a JSON object' };
  return { kind: 'ok', text, doc, servers, format: detectFormat(text), mode: existingMode(file) ?? NEW_FILE_MODE };
}

/**
 * Whether the server under our name is everme's: what install writes there, a node running a
 * staged everme runtime's `mcp` command. Anything else under that name (EverMe's hosted server
 * registered by hand, say) is the user's, never merged into and never removed.
 */
export function isEvermeMcpEntry(entry: unknown): boolean {
  if (!isRecord(entry) || typeof entry.command !== 'string' || !Array.isArray(entry.args)) return false;
  const [runJs, command] = entry.args as unknown[];
  return typeof runJs === 'string' && runJs.endsWith('/everme/runtime/bin/run.js') && command === 'mcp';
}

/** Our entry merged over whatever the user added to it (a timeout, `enabled`), keys in their order. */
function mergedEntry(previous: unknown, entry: McpServerEntry): JsonObject {
  const base = isRecord(previous) ? previous : {};
  const env = isRecord(base.env) ? base.env : {};
  return { ...base, command: entry.command, args: entry.args, env: { ...env, ...entry.env } };
}

export type McpUpsertResult =
  | { status: StepStatus; path: string; backup?: string }
  /** `foreign`: a server of someone else's holds our name; `invalid`: the file cannot be edited safely. */
  | { status: 'skipped'; path: string; reason: string; why: 'invalid' | 'foreign' };

function foreignServerReason(entry: unknown): string {
  const runs = isRecord(entry) && typeof entry.command === 'string' ? `it runs ${entry.command}` : isRecord(entry) && typeof entry.url === 'string' ? `it points at ${entry.url}` : 'it is not the server everme writes';
  return `its "${MCP_SERVER_NAME}" server is not everme's (${runs})`;
}

/** Sets `mcpServers["everme-memory"]`, keeping every other server and key; backs the pre-everme file up when it changes. */
export function upsertMcpServer(file: string, entry: McpServerEntry, dryRun: boolean): McpUpsertResult {
  const current = readMcpDocument(file);
  if (current.kind === 'invalid') return { status: 'skipped', path: file, reason: current.reason, why: 'invalid' };
  if (current.kind === 'missing') {
    const text = serialize({ mcpServers: { [MCP_SERVER_NAME]: mergedEntry(undefined, entry) } }, { indent: '  ', finalNewline: true });
    if (!dryRun) writeFileAtomic(file, text, { mode: NEW_FILE_MODE });
    return { status: 'created', path: file };
  }
  const servers: JsonObject = { ...(current.servers ?? {}) };
  if (MCP_SERVER_NAME in servers && !isEvermeMcpEntry(servers[MCP_SERVER_NAME])) {
    return { status: 'skipped', path: file, reason: foreignServerReason(servers[MCP_SERVER_NAME]), why: 'foreign' };
  }
  servers[MCP_SERVER_NAME] = mergedEntry(servers[MCP_SERVER_NAME], entry);
  const next = serialize({ ...current.doc, mcpServers: servers }, current.format);
  if (next === current.text) return { status: 'unchanged', path: file };
  const backup = mcpBackupPath(file);
  // Once our entry is in the file, the backup already holds the file as it was before everme:
  // keep that one, it is what uninstall can restore byte for byte.
  const keepOriginal = current.servers !== undefined && MCP_SERVER_NAME in current.servers && existsSync(backup);
  if (!dryRun) {
    if (!keepOriginal) writeFileAtomic(backup, current.text, { mode: current.mode });
    writeFileAtomic(file, next, { mode: current.mode });
  }
  return { status: 'updated', path: file, ...(keepOriginal ? {} : { backup }) };
}

export interface McpRemoveOptions {
  /** install created mcp.json: it goes away when nothing but our entry is left in it. */
  fileCreatedByInstall: boolean;
  /** install created the backup: it goes away with the entry. */
  backupCreatedByInstall: boolean;
  dryRun: boolean;
}

export type McpRemoveResult =
  | { status: 'removed' | 'file_removed' | 'absent'; path: string; restoredFromBackup: boolean }
  | { status: 'foreign'; path: string; reason: string }
  | { status: 'skipped'; path: string; reason: string };

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * An earlier everme merged its entry into a server of the user's under our name: the backup is the
 * file as it was when, with that server of theirs put back, it equals the file now.
 */
function mergedIntoForeign(previousDoc: JsonObject, theirs: unknown, current: Extract<McpDocument, { kind: 'ok' }>): boolean {
  if (isEvermeMcpEntry(theirs)) return false;
  return sameJson(previousDoc, { ...current.doc, mcpServers: { ...current.servers, [MCP_SERVER_NAME]: theirs } });
}

/**
 * Takes our entry out again. When the backup is the file as it was before install (same content
 * once our entry is gone), its bytes are put back exactly, so the user's formatting survives.
 */
export function removeMcpServer(file: string, options: McpRemoveOptions): McpRemoveResult {
  const backup = mcpBackupPath(file);
  const dropBackup = (): void => {
    if (options.backupCreatedByInstall && !options.dryRun) rmSync(backup, { force: true });
  };
  const current = readMcpDocument(file);
  if (current.kind === 'invalid') return { status: 'skipped', path: file, reason: current.reason };
  if (current.kind === 'missing' || !current.servers || !(MCP_SERVER_NAME in current.servers)) {
    dropBackup();
    return { status: 'absent', path: file, restoredFromBackup: false };
  }
  if (!isEvermeMcpEntry(current.servers[MCP_SERVER_NAME])) return { status: 'foreign', path: file, reason: foreignServerReason(current.servers[MCP_SERVER_NAME]) };
  const servers: JsonObject = { ...current.servers };
  delete servers[MCP_SERVER_NAME];
  const stripped: JsonObject = { ...current.doc, mcpServers: servers };

  const previous = readMcpDocument(backup);
  // A file that had no "mcpServers" before install gained one only for our entry.
  const { mcpServers: _dropped, ...withoutServers } = stripped;
  const backupMatches =
    previous.kind === 'ok' &&
    (previous.servers && MCP_SERVER_NAME in previous.servers
      ? mergedIntoForeign(previous.doc, previous.servers[MCP_SERVER_NAME], current)
      : sameJson(previous.doc, stripped) || (previous.servers === undefined && Object.keys(servers).length === 0 && sameJson(previous.doc, withoutServers)));
  const onlyOurs = Object.keys(servers).length === 0 && Object.keys(current.doc).length === 1;

  if (options.fileCreatedByInstall && onlyOurs) {
    if (!options.dryRun) rmSync(file, { force: true });
    dropBackup();
    return { status: 'file_removed', path: file, restoredFromBackup: false };
  }
  if (!options.dryRun) {
    const text = backupMatches && previous.kind === 'ok' ? previous.text : serialize(stripped, current.format);
    writeFileAtomic(file, text, { mode: current.mode });
  }
  dropBackup();
  return { status: 'removed', path: file, restoredFromBackup: backupMatches };
}
