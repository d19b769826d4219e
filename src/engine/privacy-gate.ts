import type Database from 'better-sqlite3';
import { describeRule, ExclusionPolicy, type ExclusionSource } from '../config/exclude.js';
import { exclusionSource, type Settings } from '../config/settings.js';
import { admitWorkspace } from '../memory/admission.js';
import { recordedHookWorkspace } from '../store/hook-workspace.js';
import { SessionScopeStore } from '../store/session-scope.js';
import type { SessionStore } from '../store/session-store.js';
import { TombstoneStore } from '../store/tombstones.js';
import type { WriteTurn } from '../store/write-turn.js';
import { workspaceFromFiles } from '../transcript/session-workspace.js';
import type { SessionRef } from '../transcript/types.js';

/**
 * One way of knowing a session's workspace. Sources are asked in order and the first answer wins;
 * none answering means unknown, and unknown is never guessed from anything else.
 */
export type WorkspaceSource = (session: SessionRef) => string | undefined | Promise<string | undefined>;

export type ScopeDecision =
  | { status: 'included'; workspaceDir: string }
  | { status: 'excluded'; workspaceDir: string; rule: string }
  | { status: 'unknown' };

/** What the session files say (ledger metadata); see `workspaceFromFiles`. */
export const fromSessionFiles: WorkspaceSource = async (session) => (await workspaceFromFiles(session)).workspaceDir;

/**
 * The `cwd` a hook payload carried for this session: as the hook worker recorded it in the store,
 * else as the hook itself wrote it down before deciding (a session the hook kept out has no
 * worker, and is known only there).
 */
export function fromRecordedCwd(sessions: SessionStore, stateDir?: string): WorkspaceSource {
  return (session) => sessions.workspaceFor(session.sessionId) ?? (stateDir === undefined ? undefined : recordedHookWorkspace(stateDir, session.sessionId));
}

/** Files first (they are the session's own record), then what the hook saw. */
export function defaultWorkspaceSources(sessions: SessionStore, stateDir?: string): WorkspaceSource[] {
  return [fromSessionFiles, fromRecordedCwd(sessions, stateDir)];
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
    /** Where the patterns were declared: a relative one resolves against that file (see `ExclusionPolicy.load`). */
    private readonly exclusionSource: ExclusionSource = {},
  ) {
    this.tombstones = new TombstoneStore(db);
    this.scopes = new SessionScopeStore(db);
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
    return new PrivacyGate(
      db,
      settings.exclude,
      defaultWorkspaceSources(sessions, settings.stateDir),
      opts.dryRun ?? false,
      sessions,
      opts.turn,
      exclusionSource(settings),
    );
  }

  /**
   * Loads the exclusion policy now: a pattern it refuses (a relative path the environment declared)
   * fails the run before any session is read, rather than each session one by one.
   */
  async ready(): Promise<void> {
    await this.loadPolicy();
  }

  private loadPolicy(): Promise<ExclusionPolicy> {
    return (this.policy ??= ExclusionPolicy.load(this.patterns, undefined, this.exclusionSource));
  }

  /** The conversations forgotten so far, read at once (see `RunSnapshot`). */
  forgottenIds(): Set<string> {
    return this.tombstones.forgottenIds();
  }

  forgotten(conversationId: string): boolean {
    return this.tombstones.isForgotten(conversationId);
  }

  async workspaceOf(session: SessionRef): Promise<string | undefined> {
    for (const source of this.sources) {
      const dir = await source(session);
      if (dir !== undefined && dir.trim() !== '') return dir;
    }
    return undefined;
  }

  async scope(session: SessionRef): Promise<ScopeDecision> {
    const workspaceDir = await this.workspaceOf(session);
    const base = { sessionId: session.sessionId, sessionDir: session.dir, createdAtMs: session.createdAtMs };
    if (workspaceDir === undefined) {
      const record = { ...base, status: 'workspace_unknown' as const };
      if (this.scopes.differs(record)) this.later(() => this.scopes.record(record));
      return { status: 'unknown' };
    }
    const policy = await this.loadPolicy();
    const admission = admitWorkspace(policy, workspaceDir);
    if (admission.admitted) {
      // Checked now (reads), queued only when something must change: a run with nothing new writes nothing.
      if (this.scopes.has(session.sessionId)) this.later(() => this.scopes.clear(session.sessionId));
      const sessions = this.sessions;
      if (sessions && sessions.workspaceFor(session.sessionId) !== workspaceDir) this.later(() => sessions.rememberWorkspace(session.sessionId, workspaceDir));
      return { status: 'included', workspaceDir };
    }
    const described = describeRule(admission.rule);
    const record = { ...base, status: 'excluded' as const, workspaceDir, rule: described };
    if (this.scopes.differs(record)) this.later(() => this.scopes.record(record));
    return { status: 'excluded', workspaceDir, rule: described };
  }
}
