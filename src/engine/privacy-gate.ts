import type Database from 'better-sqlite3';
import { statSync } from 'node:fs';
import { describeRule, ExclusionPolicy, type ExclusionSource } from '../config/exclude.js';
import { exclusionSource, type Settings } from '../config/settings.js';
import { EvermeError } from '../core/errors.js';
import { conversationIdFor } from '../core/conversation-id.js';
import { MASK_PREFIX } from '../core/secret-rules.js';
import { admitWorkspace } from '../memory/admission.js';
import { hookWorkspaceFile, recordedHookWorkspace, type RecordedWorkspace } from '../store/hook-workspace.js';
import { maskedIndexFacts, maskedWorkspace, sameIndexFacts, SessionMetaStore, type IndexFacts } from '../store/session-meta.js';
import { SessionScopeStore } from '../store/session-scope.js';
import type { SessionStore } from '../store/session-store.js';
import { TombstoneStore } from '../store/tombstones.js';
import type { WriteTurn } from '../store/write-turn.js';
import type { SessionIndexRead } from '../transcript/session-index.js';
import { workspaceFromFiles } from '../transcript/session-workspace.js';
import type { SessionRef } from '../transcript/types.js';
import { decideWorkspace, SessionCatalog, skippedKinds, unknownWhy, workspaceClaim, type SkippedKind, type WorkspaceClaim, type WorkspaceDecision } from './session-catalog.js';

/**
 * One way of knowing a session's workspace: a claim with the source it came from and, when known,
 * when that source said it. Every source is asked; `decideWorkspace` picks among their claims (see
 * there for the trust order). None answering means unknown, and unknown is never guessed.
 */
export type WorkspaceSource = (session: SessionRef, purpose?: ClaimPurpose) => WorkspaceClaim | undefined | Promise<WorkspaceClaim | undefined>;

/**
 * Why a source is asked. `decide`: the session is about to be read and delivered, so the claim is
 * looked up live. `recheck`: the session did not change and nothing of it is delivered (`redecide`),
 * so a claim the run's listings missed, written meanwhile, may wait for the next run.
 */
export type ClaimPurpose = 'decide' | 'recheck';

export type ScopeDecision =
  | { status: 'included'; workspaceDir: string }
  | { status: 'excluded'; workspaceDir: string; rule: string }
  | { status: 'skipped'; kind: SkippedKind; workspaceDir?: string }
  | { status: 'unknown' };

/** What the session files say (ledger metadata, with the record's time); see `workspaceFromFiles`. */
export const fromSessionFiles: WorkspaceSource = async (session) => {
  const found = await workspaceFromFiles(session);
  if (found.workspaceDir === undefined) return undefined;
  const claim = workspaceClaim('ledger', found.workspaceDir, found.updatedAtMs);
  return found.earlierDirs ? { ...claim, earlierDirs: found.earlierDirs } : claim;
};

/** What MiniMax Code's session index says (this run's read, else an earlier one's). */
export function fromSessionIndex(catalog: SessionCatalog): WorkspaceSource {
  return (session) => catalog.indexClaim(session.sessionId);
}

/**
 * The `cwd` a hook payload carried for this session: as the hook worker recorded it (with the time
 * the hook first reported it), else as the hook itself wrote it down before deciding (a session the
 * hook kept out has no worker, and is known only there; the file's time is when it was written). A
 * workspace recorded by an older hook worker, before claims had sources, counts as a cwd of unknown
 * time. A masked cwd carries the hook's verdict when it kept the session out (`excludedBy`): the
 * path recorded is not the one the hook checked.
 */
export function fromRecordedCwd(catalog: SessionCatalog, stateDir?: string): WorkspaceSource {
  return (session, purpose = 'decide') => {
    const id = session.sessionId;
    const stored = catalog.stored(id);
    // Recorded by a worker, so the hook admitted the session then; it may have kept it out since (a
    // pattern added), and said so in its file. Only a masked path needs that: any other is checked.
    if (stored?.cwd) return stored.cwd.dir.includes(MASK_PREFIX) ? withVerdict(stored.cwd, hookRecord(catalog, stateDir, id, purpose)) : stored.cwd;
    // Never decided by sources, yet a workspace on the session: what an older hook worker recorded.
    if (stored?.workspaceFrom === undefined && stored?.decided !== undefined) return { from: 'cwd', dir: stored.decided };
    const record = hookRecord(catalog, stateDir, id, purpose);
    if (record === undefined || stateDir === undefined) return undefined;
    const atMs = fileTime(hookWorkspaceFile(stateDir, id));
    return withVerdict(atMs === undefined ? { from: 'cwd', dir: record.dir } : { from: 'cwd', dir: record.dir, atMs }, record);
  };
}

function hookRecord(catalog: SessionCatalog, stateDir: string | undefined, id: string, purpose: ClaimPurpose): RecordedWorkspace | undefined {
  if (stateDir === undefined) return undefined;
  // A no-op sync rechecks every session: one listing of the hook's directory, not a stat each.
  if (purpose === 'recheck' && catalog.listedHookCwd(id) === false) return undefined;
  return recordedHookWorkspace(stateDir, id);
}

/** The claim, with the hook's verdict when the hook's record is of the same (masked) path. */
function withVerdict(claim: WorkspaceClaim, record: RecordedWorkspace | undefined): WorkspaceClaim {
  return record?.excludedBy !== undefined && record.dir === claim.dir ? { ...claim, excludedBy: record.excludedBy } : claim;
}

function fileTime(file: string): number | undefined {
  try {
    return Math.floor(statSync(file).mtimeMs);
  } catch {
    return undefined;
  }
}

/** The ledger's own record, the session index, what the hook saw. */
export function defaultWorkspaceSources(catalog: SessionCatalog, stateDir?: string): WorkspaceSource[] {
  return [fromSessionFiles, fromSessionIndex(catalog), fromRecordedCwd(catalog, stateDir)];
}

/** Before the rule the hook matched, in the report: the path shown is not the one it matched. */
export const HOOK_VERDICT = 'excluded by the hook, which matched the path before it was masked: ';

export interface GateOptions {
  /** What the session index says: the gate's workspace source and the kinds filter read it. */
  catalog?: SessionCatalog;
  /** `EVERME_INCLUDE_KINDS`: side kinds (`peek`, `channel`, `cron`), `hidden` or `all` read too. */
  includeKinds?: readonly string[];
  /** Words of EVERME_INCLUDE_KINDS that name no kind: `ready()` refuses them. */
  unknownIncludeKinds?: readonly string[];
  /** Where the patterns were declared: a relative one resolves against that file (see `ExclusionPolicy.load`). */
  exclusionSource?: ExclusionSource;
}

/**
 * The user's say over what is delivered, checked by the pipeline before a session's history is
 * read: forgotten conversations (tombstones) and excluded workspaces. Records what it decided for
 * the report, except in a dry run, which writes nothing.
 */
export class PrivacyGate {
  private readonly tombstones: TombstoneStore;
  private readonly scopes: SessionScopeStore;
  private policy?: Promise<ExclusionPolicy>;
  /**
   * What was decided, written together by `commit()`: one write per session on the engine's
   * connection would contend with the store's writer thread for the lock on every session.
   */
  private pending: Array<() => void> = [];
  private readonly writeAll: Database.Transaction<(ops: Array<() => void>) => void>;

  private readonly catalog: SessionCatalog;
  private readonly meta: SessionMetaStore;
  private readonly include: ReadonlySet<string>;
  private readonly unknownKinds: readonly string[];
  private readonly exclusionSource: ExclusionSource;

  constructor(
    db: Database.Database,
    private readonly patterns: readonly string[],
    private readonly sources: readonly WorkspaceSource[],
    private readonly dryRun = false,
    /** Where a known workspace is remembered per session, so `forget --project` finds what only the gateway holds. */
    private readonly sessions?: SessionStore,
    /**
     * The main thread's write turn while the store's writer thread runs (see `WriteTurn`): a write
     * in the middle of a run waits for it, as the session locks do. Taken straight, SQLite's lock
     * made the writer thread's next commit wait in its busy handler, and on a slow machine (a 10x
     * import under the profiler) five sessions failed with `database is locked`.
     */
    private readonly turn: () => WriteTurn | undefined = () => undefined,
    options: GateOptions = {},
  ) {
    this.tombstones = new TombstoneStore(db);
    this.scopes = new SessionScopeStore(db);
    this.meta = new SessionMetaStore(db);
    this.catalog = options.catalog ?? new SessionCatalog(this.meta);
    this.include = new Set(options.includeKinds ?? []);
    this.unknownKinds = options.unknownIncludeKinds ?? [];
    this.exclusionSource = options.exclusionSource ?? {};
    this.writeAll = db.transaction((ops: Array<() => void>) => {
      for (const op of ops) op();
    });
  }

  /** Past this many decisions they are written at once, so a long run's memory stays bounded. */
  private static readonly MAX_PENDING = 1000;

  private later(op: () => void): void {
    if (this.dryRun) return;
    this.pending.push(op);
    if (this.pending.length >= PrivacyGate.MAX_PENDING) this.commitInTurn();
  }

  /** Writes started in the middle of a run that may still wait for their turn. */
  private readonly inFlight = new Set<Promise<void>>();

  /** A write in the middle of a run: in the main thread's turn while a writer thread runs. */
  private commitInTurn(): void {
    const turn = this.turn();
    if (!turn) return this.commit();
    const ops = this.pending;
    this.pending = [];
    const write = turn.runMain(() => this.writeAll.immediate(ops)).then(
      () => undefined,
      () => this.keep(ops),
    );
    this.inFlight.add(write);
    void write.finally(() => this.inFlight.delete(write));
  }

  /** Resolves once every write started in the middle of the run has ended: the run awaits it before it closes. */
  async settled(): Promise<void> {
    await Promise.all(this.inFlight);
  }

  /** Bounded: a store that stays locked keeps only the newest decisions. */
  private keep(ops: Array<() => void>): void {
    this.pending = [...ops, ...this.pending].slice(-PrivacyGate.MAX_PENDING * 4);
  }

  /**
   * Writes what the run decided (for the report); the pipeline calls it when a run ends. IMMEDIATE:
   * the transaction reads before it writes, and a deferred one could not wait for the writer
   * thread's lock (SQLite answers a stale read snapshot's upgrade with BUSY at once). These are
   * report records, never worth failing a delivery for: if the store stays locked past its busy
   * timeout they are kept and written with the next commit.
   */
  commit(): void {
    if (this.pending.length === 0) return;
    const ops = this.pending;
    this.pending = [];
    try {
      this.writeAll.immediate(ops);
    } catch {
      this.keep(ops);
    }
  }

  static open(
    db: Database.Database,
    settings: Settings,
    sessions: SessionStore,
    opts: { dryRun?: boolean; turn?: () => WriteTurn | undefined } = {},
  ): PrivacyGate {
    const catalog = new SessionCatalog(new SessionMetaStore(db), settings.stateDir);
    return new PrivacyGate(db, settings.exclude, defaultWorkspaceSources(catalog, settings.stateDir), opts.dryRun ?? false, sessions, opts.turn, {
      catalog,
      includeKinds: settings.includeKinds,
      ...(settings.unknownIncludeKinds ? { unknownIncludeKinds: settings.unknownIncludeKinds } : {}),
      exclusionSource: exclusionSource(settings),
    });
  }

  /**
   * Loads the exclusion policy now: a pattern it refuses (a relative path the environment declared)
   * fails the run before any session is read, rather than each session one by one.
   */
  async ready(): Promise<void> {
    // A misspelt kind (`peeks`) would otherwise leave those sessions skipped while the user believes
    // the setting reads them.
    if (this.unknownKinds.length > 0) {
      throw new EvermeError('invalid_args', `EVERME_INCLUDE_KINDS names no session kind: ${this.unknownKinds.map((w) => JSON.stringify(w)).join(', ')}`, {
        code: 'include_kind_unknown',
        hint: 'Use any of peek, channel, cron, hidden, or all, separated by commas.',
        detail: { unknown: [...this.unknownKinds] },
      });
    }
    await this.loadPolicy();
  }

  private loadPolicy(): Promise<ExclusionPolicy> {
    return (this.policy ??= ExclusionPolicy.load(this.patterns, undefined, this.exclusionSource));
  }

  /** The session index as this run read it (once per run; a hook worker reads it once for its session). */
  useSessionIndex(read: SessionIndexRead | undefined): void {
    this.catalog.useIndex(read);
  }

  sessionIndex(): SessionIndexRead | undefined {
    return this.catalog.indexRead();
  }

  /** What the index says about a session (this run, else recorded earlier). */
  indexFacts(sessionId: string): IndexFacts | undefined {
    return this.catalog.facts(sessionId);
  }

  /**
   * Records what the session index says about every session of the run (title, kind, its workspace
   * claim): a session whose files did not change is never read, yet its title or its kind may have.
   * Writes only what differs.
   */
  noteSessions(sessions: readonly SessionRef[]): void {
    if (sessions.length >= PrivacyGate.PRELOAD_AFTER) this.catalog.preload();
    // A forgotten session's title and claims left the store with it: they are not recorded again.
    const forgotten = this.tombstones.count() > 0 ? this.tombstones.forgottenIds() : undefined;
    for (const session of sessions) {
      const id = session.sessionId;
      if (forgotten?.has(conversationIdFor(id))) continue;
      const read = this.catalog.freshFacts(id);
      // Compared as stored: a path masked there would otherwise differ from the index's on every run.
      const fresh = read && maskedIndexFacts(read);
      if (!fresh || sameIndexFacts(this.catalog.stored(id)?.index, fresh)) continue;
      this.later(() => this.meta.recordIndex(id, fresh));
      this.catalog.patch(id, { index: fresh });
    }
  }

  /**
   * Decides again the workspace of a session whose files did not change (so `scope` does not run for
   * it): the index or a hook may say something new. The files are not read: the ledger's claim is
   * the one recorded when they last were. The exclusion check (a stat per directory) runs only for
   * a decision that would change something: a no-op sync decides again what it decided, in memory.
   * Done at once, without a promise, when no source makes it wait and nothing changed (the sources
   * a recheck asks answer from memory and the run's listings): a bulk run passes thousands of
   * unchanged sessions without a turn of the event loop each.
   */
  redecide(session: SessionRef): Promise<void> | undefined {
    if (!this.sessions) return undefined;
    const answers = this.sources.filter((source) => source !== fromSessionFiles).map((source) => source(session, 'recheck'));
    if (answers.some((answer) => answer instanceof Promise)) return Promise.all(answers.map((answer) => Promise.resolve(answer))).then((claims) => this.decideAgain(session.sessionId, claims));
    return this.decideAgain(session.sessionId, answers as (WorkspaceClaim | undefined)[]);
  }

  private decideAgain(id: string, answers: readonly (WorkspaceClaim | undefined)[]): Promise<void> | undefined {
    const ledger = this.catalog.storedLedgerClaim(id);
    const claims: WorkspaceClaim[] = ledger ? [ledger] : [];
    for (const claim of answers) if (claim !== undefined && claim.dir.trim() !== '') claims.push(claim);
    const decision = decideWorkspace(claims);
    if (!decision || !this.catalog.decisionDiffers(id, decision)) return undefined;
    return this.ruleAmong(decision, this.catalog.facts(id)).then((rule) => {
      if (rule === undefined) this.recordDecision(id, decision);
    });
  }

  /** Ends a run's use of what `noteSessions` read at once, and of the exclusion answers it kept. */
  endRun(): void {
    this.catalog.release();
    this.rules.clear();
  }

  /** Above this many sessions `noteSessions` reads every stored session at once. */
  private static readonly PRELOAD_AFTER = 64;

  private recordDecision(sessionId: string, decision: WorkspaceDecision): void {
    if (!this.catalog.decisionDiffers(sessionId, decision)) return;
    this.later(() => this.meta.recordDecision(sessionId, decision.dir, decision.from, decision.conflict));
    this.catalog.patch(sessionId, {
      decided: decision.dir,
      workspaceFrom: decision.from,
      ...(decision.conflict ? { conflict: decision.conflict } : { conflict: undefined }),
    });
  }

  /**
   * The exclusion rule that keeps the session out, if any. Every directory a source named is
   * checked, and the project a worktree session belongs to: when sources disagree, any of them
   * naming an excluded workspace is enough (an exclusion errs on the side of leaving out).
   */
  private async ruleAmong(decision: WorkspaceDecision, facts: IndexFacts | undefined): Promise<{ dir: string; rule: string } | undefined> {
    const policy = await this.loadPolicy();
    // Each path as the host wrote it, before masking: a pattern or an `.everme-ignore` is about the
    // real directory. The decision's own dir is one of its claims'.
    const dirs = [
      ...decision.claims.flatMap((c) => [c.hostDir ?? c.dir, ...(c.earlierDirs ?? [])]),
      ...(facts?.projectWorkspaceDir ? [facts.projectWorkspaceDir] : []),
    ];
    for (const dir of new Set(dirs)) {
      let rule = this.rules.get(dir);
      if (rule === undefined) {
        const admission = admitWorkspace(policy, dir);
        // Recorded and shown as the path is: a pattern or an ignore file's path names the directory.
        rule = admission.admitted ? null : maskedWorkspace(describeRule(admission.rule));
        this.rules.set(dir, rule);
      }
      // Recorded for the report and shown: masked, as every recorded path is.
      if (rule !== null) return { dir: maskedWorkspace(dir), rule };
    }
    // A path the hook checked before masking it: no check of the masked one can see its pattern or
    // ignore file, so the hook's word stands (an exclusion errs on the side of leaving out).
    const hooked = decision.claims.find((c) => c.excludedBy !== undefined);
    if (hooked?.excludedBy !== undefined) return { dir: hooked.dir, rule: `${HOOK_VERDICT}${hooked.excludedBy}` };
    return undefined;
  }

  /**
   * What the policy said of each directory during this run (null: not excluded): thousands of
   * sessions share a few projects, and each answer costs a stat for `.everme-ignore`. Forgotten at
   * the end of the run, so a hook worker's next run sees an ignore file added meanwhile.
   */
  private rules = new Map<string, string | null>();

  /** The conversations forgotten so far, read at once (see `RunSnapshot`). */
  forgottenIds(): Set<string> {
    return this.tombstones.forgottenIds();
  }

  forgotten(conversationId: string): boolean {
    return this.tombstones.isForgotten(conversationId);
  }

  /** Every source's claim about the session's workspace, and the decision among them. */
  async workspaceOf(session: SessionRef): Promise<WorkspaceDecision | undefined> {
    const claims: WorkspaceClaim[] = [];
    for (const source of this.sources) {
      const claim = await source(session, 'decide');
      if (claim !== undefined && claim.dir.trim() !== '') claims.push(claim);
    }
    return decideWorkspace(claims);
  }

  async scope(session: SessionRef): Promise<ScopeDecision> {
    const id = session.sessionId;
    const decision = await this.workspaceOf(session);
    const facts = this.catalog.facts(id);
    const base = { sessionId: id, sessionDir: session.dir, createdAtMs: session.createdAtMs };
    const ledger = decision?.claims.find((c) => c.from === 'ledger');
    const stored = this.catalog.stored(id)?.ledger;
    if (ledger && (stored?.dir !== ledger.dir || stored.atMs !== ledger.atMs)) {
      this.later(() => this.meta.recordLedger(id, ledger.dir, ledger.atMs));
      this.catalog.patch(id, { ledger });
    }
    const excluded = decision ? await this.ruleAmong(decision, facts) : undefined;
    if (decision && excluded) {
      const record = { ...base, status: 'excluded' as const, workspaceDir: excluded.dir, rule: excluded.rule };
      if (this.scopes.differs(record)) this.later(() => this.scopes.record(record));
      return { status: 'excluded', workspaceDir: excluded.dir, rule: excluded.rule };
    }
    const kinds = skippedKinds(facts, this.include);
    const kind = kinds[0];
    if (kind) {
      // Every name EVERME_INCLUDE_KINDS needs for it (`peek,hidden`): the report's hint is built from these.
      const record = { ...base, status: 'kind_skipped' as const, rule: kinds.join(','), ...(decision ? { workspaceDir: decision.dir } : {}) };
      if (this.scopes.differs(record)) this.later(() => this.scopes.record(record));
      return { status: 'skipped', kind, ...(decision ? { workspaceDir: decision.dir } : {}) };
    }
    if (decision === undefined) {
      const record = { ...base, status: 'workspace_unknown' as const, rule: unknownWhy(this.catalog.indexRead(), facts) };
      if (this.scopes.differs(record)) this.later(() => this.scopes.record(record));
      return { status: 'unknown' };
    }
    // Checked now (reads), queued only when something must change: a run with nothing new writes nothing.
    if (this.scopes.has(id)) this.later(() => this.scopes.clear(id));
    if (this.sessions) this.recordDecision(id, decision);
    return { status: 'included', workspaceDir: decision.dir };
  }
}

