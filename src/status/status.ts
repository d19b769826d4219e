import { statSync } from 'node:fs';
import type { Settings, SinkName } from '../config/settings.js';
import { defaultSink, deliverySinks, envFilePath, maskToken, type CredentialSource } from '../config/settings.js';
import { envFileProblem } from '../config/env-file.js';
import { renderSinkStatus, sinkStatuses, type SinkStatus } from './sink-status.js';
import { readHookEvents, type HookOutcome } from '../hook/hook-events.js';
import { collectHookRoutes, renderHookRoutes, type HookRoutesReport } from './hook-routes.js';
import { isEvermeMcpEntry, MCP_SERVER_NAME, mcpConfigPath, readMcpDocument } from '../install/mcp-config.js';
import { databasePath, openDatabase } from '../store/database.js';
import { isDatabaseMissing, openReadonlyDatabase, type Db } from '../store/database-reader.js';
import { LocalStore } from '../store/local-store.js';
import { discoverSessions } from '../transcript/discover.js';
import { readSessionIndex } from '../transcript/session-index.js';
import { gatewayReadClientFor } from '../engine/engine-context.js';
import { RunStore, type RunRecord } from '../store/run-store.js';
import { WarningStore } from '../store/warning-store.js';
import { EvermeError, toEvermeError } from '../core/errors.js';
import { redactOutput } from '../core/redact-output.js';

export interface StatusProblem {
  what: string;
  hint: string;
}

export interface StatusReport {
  dataDir: string;
  stateDir: string;
  sessions: number;
  /** Directories of the date tree that could not be listed (`reason`: the error code): `sessions` misses theirs. */
  unreadableDirs: Array<{ path: string; reason: string }>;
  sink: SinkName;
  /** Every sink deliveries go to (the gateway with the embedded store, unless EVERME_LOCAL_STORE=0), each on its own. */
  sinks: SinkStatus[];
  gateway: { configured: boolean; apiBase?: string; reachable?: boolean; error?: { type: string; code: string; message: string } };
  /** Which credential is used (masked) and where it was found; absent when none is configured. */
  credential?: { variable: string; masked: string; source: CredentialSource; agentId?: string };
  lastImport?: RunSummaryView;
  lastSync?: RunSummaryView;
  lastHookRun?: RunSummaryView;
  /** Each route (plugin, markdown), the events that arrived per route, and warnings about them. */
  hooks: Omit<HookRoutesReport, 'problems'> & { latencyMs: { p50?: number; p95?: number; count: number }; outcomes: Partial<Record<HookOutcome, number>> };
  mcp: { registered: boolean; file: string; valid: boolean };
  /**
   * MiniMax Code's session index as status read it just now (read-only): which schema, how many
   * sessions it knows and how many of the sessions found it names; or why it could not be read.
   */
  sessionIndex:
    | { status: 'ok'; path: string; schema: string; columns: string[]; known: number; matched: number }
    | { status: 'unavailable'; path: string; reason: string; message: string };
  store: { file: string; bytes: number; conversations: number; messages: number };
  warnings: number;
  problems: StatusProblem[];
}

interface RunSummaryView {
  at: string;
  status?: string;
  since?: string;
}

function runView(run: RunRecord | undefined): RunSummaryView | undefined {
  if (!run) return undefined;
  return {
    at: new Date(run.finishedAtMs ?? run.startedAtMs).toISOString(),
    // No status: still running, unless its process is gone.
    status: run.status ?? (run.interrupted ? 'interrupted' : undefined),
    since: sinceOf(run),
  };
}

function sinceOf(run: RunRecord): string | undefined {
  return typeof run.params['since'] === 'string' ? run.params['since'] : undefined;
}

/**
 * An import killed before it finished left sessions undelivered. A sync over every session that ran
 * to its end after it, looking back at least as far, completed it (sync's horizon takes in that
 * import's --since); a `sync --session` delivered one session, not what the import left.
 */
function interruptedImportProblem(lastImport: RunRecord | undefined, runs: RunStore): StatusProblem | undefined {
  if (!lastImport?.interrupted) return undefined;
  const since = sinceOf(lastImport);
  const covers = (sync: RunRecord): boolean => {
    const syncSince = sinceOf(sync);
    return since !== undefined && syncSince !== undefined && sync.params['sessions'] === undefined && Date.parse(syncSince) <= Date.parse(since);
  };
  if (runs.finishedAfter('sync', lastImport.id).some(covers)) return undefined;
  return {
    what: `the import${since ? ` --since ${since}` : ''} started ${new Date(lastImport.startedAtMs).toISOString()} was interrupted (its process ended without finishing): sessions it had not reached are not captured`,
    hint: `Run \`everme sync\`: it looks back as far as that import did and delivers what it left${since ? ` (or run \`everme import --since ${since}\` again)` : ''}.`,
  };
}

function percentile(sorted: number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

function sessionIndexStatus(dataDir: string, found: string[]): StatusReport['sessionIndex'] {
  const index = readSessionIndex(dataDir);
  return index.status === 'ok'
    ? { status: 'ok', path: index.path, schema: index.schema.name, columns: index.schema.columns, known: index.known, matched: found.filter((id) => index.sessions.has(id)).length }
    : { status: 'unavailable', path: index.path, reason: index.reason, message: index.message };
}

function credentialStatus(settings: Settings): StatusReport['credential'] {
  if (!settings.credential) return undefined;
  return {
    variable: settings.credential.variable,
    masked: maskToken(settings.credential.token),
    source: settings.credential.source,
    ...(settings.agentId ? { agentId: settings.agentId } : {}),
  };
}

/** With a key: does the gateway answer (5 s at most)? */
async function gatewayStatus(settings: Settings, problems: StatusProblem[]): Promise<StatusReport['gateway']> {
  const gateway: StatusReport['gateway'] = { configured: Boolean(settings.apiKey) };
  if (!settings.apiKey) return gateway;
  // Shown by the command and by the viewer's health page: a password in the base is masked for both.
  const base = redactOutput(settings.apiBase);
  gateway.apiBase = base;
  try {
    // No rate-limit retries: the 5 s deadline ended a Retry-After wait, and the probe said `cancelled`.
    await gatewayReadClientFor(settings).context({}, AbortSignal.timeout(5000));
    gateway.reachable = true;
  } catch (err) {
    const e = toEvermeError(err);
    gateway.reachable = false;
    gateway.error = { type: e.type, code: e.code, message: e.message };
    problems.push(gatewayProblem(base, e));
  }
  return gateway;
}

/** Why the probe failed, as status says it: who refused what, and only a network failure is "did not answer". */
type ProbeFailure = 'rate_limit' | 'auth' | 'refused_base' | 'no_answer' | 'error';

function probeFailure(error: { type: string; code?: string }): ProbeFailure {
  if (error.type === 'rate_limit' || error.type === 'auth') return error.type;
  // The client refused the configured base before sending anything (plain http to another host).
  if (error.type === 'invalid_args') return 'refused_base';
  // `cancelled` here is the probe's own 5 s deadline: the gateway did not answer in time.
  if (error.type === 'network' || error.type === 'cancelled') return 'no_answer';
  return 'error';
}

/**
 * A gateway that rate limits did answer: it is no network problem, and it passes. A refused key
 * and a base everme refuses to send the key to are no network problem either: each says its fix.
 */
function gatewayProblem(base: string, e: EvermeError): StatusProblem {
  switch (probeFailure(e)) {
    case 'rate_limit':
      return { what: `the EverMe gateway at ${base} is rate limiting requests (rate_limit)`, hint: 'It answered; captured sessions wait and are sent by the next sync. Try again in a moment.' };
    case 'auth':
      return {
        what: `the EverMe gateway at ${base} refused the key (auth): ${e.message}`,
        hint: 'Check the credential named above (EVERME_AGENT_TOKEN or EVERME_API_KEY): `everme install --api-key <key>`.',
      };
    case 'refused_base':
      return { what: `the EverMe gateway at ${base} is not used: ${e.message} (${e.code})`, hint: e.hint ?? 'Check EVERME_API_BASE.' };
    case 'no_answer':
      return { what: `the EverMe gateway at ${base} did not answer (${e.type})`, hint: 'Check the network or EVERME_API_BASE; captured sessions wait and are sent by the next sync.' };
    case 'error':
      return { what: `the EverMe gateway at ${base} answered with an error (${e.type}): ${e.message}`, hint: 'Captured sessions wait and are sent by the next sync; if it persists, check EVERME_API_BASE.' };
  }
}

/** What the sink line says of the gateway (the command's text and the viewer's health page). */
export function gatewayLine(gateway: StatusReport['gateway']): string {
  if (gateway.reachable) return 'answers';
  const error: { type: string; code?: string; message?: string } = gateway.error ?? { type: 'unknown' };
  switch (probeFailure(error)) {
    case 'rate_limit':
      return 'is rate limiting (rate_limit)';
    case 'auth':
      return 'refused the key (auth)';
    case 'refused_base':
      return `is not used (${error.code ?? error.type}): ${error.message ?? ''}`;
    case 'no_answer':
      return `does not answer (${error.type})`;
    case 'error':
      return `answered with an error (${error.type})`;
  }
}

/** An everme.env that is not a file is read as empty: its credentials would silently not apply. */
function envFileStatus(dataDir: string, problems: StatusProblem[]): void {
  const file = envFilePath(dataDir);
  const problem = envFileProblem(file);
  if (problem !== undefined) problems.push({ what: `${file} ${problem}: its settings are not read`, hint: `Move ${file} away, then run \`everme install\` (or EverMe's installer) again.` });
}

function mcpStatus(dataDir: string, problems: StatusProblem[]): StatusReport['mcp'] {
  const mcpFile = mcpConfigPath(dataDir);
  const mcpDoc = readMcpDocument(mcpFile);
  if (mcpDoc.kind === 'invalid') {
    problems.push({ what: `${mcpFile} cannot be used: ${mcpDoc.reason}`, hint: 'Fix it by hand (move a directory there away); everme never rewrites a file it cannot parse.' });
  }
  return {
    file: mcpFile,
    valid: mcpDoc.kind !== 'invalid',
    registered: mcpDoc.kind === 'ok' && mcpDoc.servers !== undefined && isEvermeMcpEntry(mcpDoc.servers[MCP_SERVER_NAME]),
  };
}

type StoreFacts = Pick<StatusReport, 'sinks' | 'lastImport' | 'lastSync' | 'lastHookRun' | 'store' | 'warnings'>;

/** What the store holds and the runs it recorded; a store not made yet is the problem "nothing imported". */
function storeStatus(settings: Settings, sink: SinkName, problems: StatusProblem[], readonly: boolean): StoreFacts {
  const dbFile = databasePath(settings.stateDir);
  const deliverTo = deliverySinks(sink, settings);
  const facts: StoreFacts = { sinks: sinkStatuses(undefined, deliverTo), store: { file: dbFile, bytes: 0, conversations: 0, messages: 0 }, warnings: 0 };
  let db: Db;
  try {
    // A store not made yet is reported, never created (`r+`, or read-only for the viewer's page).
    db = readonly ? openReadonlyDatabase(settings.stateDir) : openDatabase(settings.stateDir, { mustExist: true });
  } catch (err) {
    if (!isDatabaseMissing(err)) throw err;
    problems.push({ what: 'nothing has been imported yet', hint: 'Run `everme import --since <YYYY-MM-DD>` for the cold start.' });
    return facts;
  }
  try {
    facts.sinks = sinkStatuses(db, deliverTo);
    const runs = new RunStore(db);
    Object.assign(facts.store, new LocalStore(db).counts());
    facts.store.bytes = fileSize(dbFile) + fileSize(`${dbFile}-wal`);
    facts.warnings = new WarningStore(db).list().reduce((sum, c) => sum + c.warnings.reduce((s, w) => s + w.count, 0), 0);
    const lastImport = runs.last('import');
    const lastSync = runs.last('sync');
    facts.lastImport = runView(lastImport);
    facts.lastSync = runView(lastSync);
    const interrupted = interruptedImportProblem(lastImport, runs);
    if (interrupted) problems.push(interrupted);
    facts.lastHookRun = runView(runs.last('hook'));
  } finally {
    db.close();
  }
  return facts;
}

/**
 * Everything a user needs to know whether capture works, and what to do when it does not: each
 * problem found comes with a hint, and any problem makes `everme status` exit non-zero.
 */
export async function collectStatus(settings: Settings, opts: { readonly?: boolean } = {}): Promise<StatusReport> {
  const problems: StatusProblem[] = [];
  const found: string[] = [];
  const unreadableDirs: StatusReport['unreadableDirs'] = [];
  const onUnreadableDir = (dir: string, reason: string): void => {
    unreadableDirs.push({ path: dir, reason });
  };
  for await (const session of discoverSessions(settings.dataDir, { onInvalidManifest: () => {}, onUnreadableDir })) found.push(session.sessionId);
  problems.push(...unreadableDirs.map(unreadableDirProblem));
  const sessionIndex = sessionIndexStatus(settings.dataDir, found);
  const sink = defaultSink(settings);
  const gateway = await gatewayStatus(settings, problems);
  const credential = credentialStatus(settings);

  const events = readHookEvents(settings.stateDir);
  const { problems: hookProblems, ...routes } = await collectHookRoutes(settings.dataDir, events);
  problems.push(...hookProblems);
  const latencies = events.map((e) => e.ms).sort((a, b) => a - b);
  const outcomes: Partial<Record<HookOutcome, number>> = {};
  for (const e of events) outcomes[e.outcome] = (outcomes[e.outcome] ?? 0) + 1;
  const mcp = mcpStatus(settings.dataDir, problems);
  envFileStatus(settings.dataDir, problems);
  const { sinks, lastImport, lastSync, lastHookRun, store, warnings } = storeStatus(settings, sink, problems, opts.readonly ?? false);

  return {
    dataDir: settings.dataDir,
    stateDir: settings.stateDir,
    sessions: found.length,
    unreadableDirs,
    sink,
    sinks,
    gateway,
    ...(credential ? { credential } : {}),
    lastImport,
    lastSync,
    lastHookRun,
    hooks: { ...routes, latencyMs: { p50: percentile(latencies, 50), p95: percentile(latencies, 95), count: latencies.length }, outcomes },
    mcp,
    sessionIndex,
    store,
    warnings,
    problems,
  };
}

/** The sessions under a directory nobody may list are not captured, and the count above them looks complete. */
function unreadableDirProblem({ path: dir, reason }: { path: string; reason: string }): StatusProblem {
  return {
    what: `a directory of the session tree cannot be read (${reason}): ${dir}`,
    hint: `The sessions under it are not counted or captured. Give your user read and search access to it (\`ls -ld ${dir}\`), then run \`everme sync\`.`,
  };
}

/** The failure `everme status` ends with when it found a problem: the first one named, all of them in the detail. */
export function statusOutcomeError(status: StatusReport): EvermeError | undefined {
  const first = status.problems[0];
  if (!first) return undefined;
  return new EvermeError('conflict', `${status.problems.length} problem(s): ${first.what}`, { code: 'status_problems', hint: first.hint, detail: { status } });
}

/** A failing status in text mode (all on stderr): the report, then every problem after the first (the error names that one). */
export function statusFailureText(status: StatusReport): string {
  return [renderStatus(status), ...status.problems.slice(1).map((p) => `problem: ${p.what}\n  hint: ${p.hint}`)].join('\n');
}

export function renderStatus(s: StatusReport): string {
  const mib = (b: number) => `${(b / 1024 / 1024).toFixed(1)} MiB`;
  const run = (r?: RunSummaryView) => (r ? `${r.at} (${r.status ?? 'running'})` : 'never');
  const lines = [
    `data dir:     ${s.dataDir} (${s.sessions} sessions${s.unreadableDirs.length > 0 ? `; ${s.unreadableDirs.length} ${s.unreadableDirs.length === 1 ? 'directory' : 'directories'} could not be read` : ''})`,
    `session index: ${sessionIndexLine(s.sessionIndex, s.sessions)}`,
    `sink:         ${s.sink}${s.gateway.configured ? ` → ${s.gateway.apiBase} ${gatewayLine(s.gateway)}` : ''}`,
    ...(s.sinks.length > 1 ? s.sinks.map(renderSinkStatus) : []),
    `credential:   ${credentialLine(s.credential)}`,
    `last import:  ${run(s.lastImport)}${s.lastImport?.since ? ` since ${s.lastImport.since}` : ''}`,
    `last sync:    ${run(s.lastSync)}`,
    ...renderHookRoutes({ ...s.hooks, problems: [] }),
    `hook latency: ${s.hooks.latencyMs.count === 0 ? 'no hook runs yet' : `p50 ${s.hooks.latencyMs.p50} ms, p95 ${s.hooks.latencyMs.p95} ms over ${s.hooks.latencyMs.count} runs`}`,
    `hook outcomes:${Object.keys(s.hooks.outcomes).length === 0 ? ' none' : Object.entries(s.hooks.outcomes).map(([k, v]) => ` ${k} ${v}`).join(',')}`,
    `mcp server:   ${s.mcp.registered ? 'registered' : 'not registered'} in ${s.mcp.file}`,
    `store:        ${s.store.file} (${mib(s.store.bytes)}, ${s.store.conversations} conversations, ${s.store.messages} messages)`,
    `warnings:     ${s.warnings}${s.warnings > 0 ? ' (see `everme report`)' : ''}`,
  ];
  return lines.join('\n');
}

function sessionIndexLine(index: StatusReport['sessionIndex'], found: number): string {
  if (index.status === 'unavailable') return `unavailable (${index.reason}: ${index.message}) at ${index.path}`;
  return `${index.path}, schema ${index.schema}, ${index.known} sessions known (${index.matched} of the ${found} found)`;
}

const SOURCE_NAMES: Record<CredentialSource, string> = { flag: 'the --api-key flag', env: 'the environment', 'everme.env': 'everme.env' };

function credentialLine(c: StatusReport['credential']): string {
  if (!c) return 'none (the local store is used)';
  return `${c.variable} ${c.masked} from ${SOURCE_NAMES[c.source]}${c.agentId ? `, agent ${c.agentId}` : ''}`;
}
