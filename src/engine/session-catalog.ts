import { maskedWorkspace, SessionMetaStore, type IndexFacts, type SessionMeta, type StoredClaim, type WorkspaceFrom } from '../store/session-meta.js';
import { listHookWorkspaces } from '../store/hook-workspace.js';
import type { SessionIndexRead } from '../transcript/session-index.js';

/**
 * What is known about each session beyond its history: what MiniMax Code's session index said this
 * run (else at an earlier run), and each source's claim about its workspace. The engine asks it for
 * a session's workspace claims and kind; the index is read once per run (or once per hook worker)
 * by the caller and handed in with `useIndex`.
 */

/**
 * One source's answer about a session's workspace, with the time that source said it (when known).
 * `dir` is masked (see `maskedWorkspace`): it is what is compared, recorded and shown. `hostDir`:
 * the path as the host wrote it, when masking changed it and the source read it this run; the
 * exclusion check reads it, never stored. `earlierDirs`: where the source said the session was
 * before (a moved ledger session), as the host wrote them; checked for exclusion, never stored.
 * `excludedBy`: the rule the hook matched against a cwd whose recorded path is masked (see
 * `recordHookWorkspace`); it stands for the check the masked path cannot have, never stored here.
 */
export type WorkspaceClaim = StoredClaim & { hostDir?: string; earlierDirs?: readonly string[]; excludedBy?: string };

/** A claim of a path as a source wrote it: masked for everything but the exclusion check. */
export function workspaceClaim(from: WorkspaceFrom, hostDir: string, atMs?: number): WorkspaceClaim {
  const dir = maskedWorkspace(hostDir);
  return { from, dir, ...(atMs === undefined ? {} : { atMs }), ...(dir === hostDir ? {} : { hostDir }) };
}

/**
 * The decided workspace and where it came from. The sources in trust order are the ledger's own
 * record, the session index, the hook's cwd. When they all name the same directory the first one
 * answers. When they disagree, the claim updated last wins (a claim without a time counts as older
 * than any with one; equal times go by trust order), and `conflict` keeps every claim for the report.
 */
export interface WorkspaceDecision {
  dir: string;
  from: WorkspaceFrom;
  claims: WorkspaceClaim[];
  conflict?: WorkspaceClaim[];
}

const TRUST: readonly WorkspaceFrom[] = ['ledger', 'index', 'cwd'];

/** Two spellings of one directory (a trailing separator) are one claim. */
function sameDir(a: string, b: string): boolean {
  const strip = (p: string): string => p.replace(/[\\/]+$/, '') || p;
  return strip(a) === strip(b);
}

export function decideWorkspace(claims: readonly WorkspaceClaim[]): WorkspaceDecision | undefined {
  const ordered = [...claims].sort((a, b) => TRUST.indexOf(a.from) - TRUST.indexOf(b.from));
  const first = ordered[0];
  if (!first) return undefined;
  if (ordered.every((c) => sameDir(c.dir, first.dir))) return { dir: first.dir, from: first.from, claims: ordered };
  let winner = first;
  for (const c of ordered.slice(1)) if ((c.atMs ?? Number.NEGATIVE_INFINITY) > (winner.atMs ?? Number.NEGATIVE_INFINITY)) winner = c;
  return { dir: winner.dir, from: winner.from, claims: ordered, conflict: ordered };
}

function sameClaims(a: readonly WorkspaceClaim[] | undefined, b: readonly WorkspaceClaim[] | undefined): boolean {
  const x = a ?? [];
  const y = b ?? [];
  return x.length === y.length && x.every((c, i) => c.from === y[i]!.from && c.dir === y[i]!.dir && c.atMs === y[i]!.atMs);
}

/** Kinds of session the host runs that are not someone's conversation with the agent. */
export const SIDE_KINDS = ['peek', 'channel', 'cron'] as const;
/** What `EVERME_INCLUDE_KINDS` may name: the side kinds, `hidden`, or `all`. */
export const INCLUDABLE = [...SIDE_KINDS, 'hidden'] as const;
export type SkippedKind = (typeof INCLUDABLE)[number];

/**
 * Which sessions are read by default: everything but the host's side sessions (`peek` side
 * questions, `channel` sessions driven from a chat app, `cron` scheduled runs) and sessions the host
 * hides from its own lists. `EVERME_INCLUDE_KINDS` names any of them to read them too. Every name
 * that keeps the session out, in `INCLUDABLE`'s order: a peek session the host hides needs both
 * `peek` and `hidden` named, and a hint that named only its kind would not read it.
 */
export function skippedKinds(facts: IndexFacts | undefined, include: ReadonlySet<string>): SkippedKind[] {
  if (!facts || include.has('all')) return [];
  const kinds: SkippedKind[] = [];
  const kind = SIDE_KINDS.find((k) => k === facts.kind);
  if (kind && !include.has(kind)) kinds.push(kind);
  if (facts.visibility === 'hidden' && !include.has('hidden')) kinds.push('hidden');
  return kinds;
}

/** Why a session's workspace is unknown, in words for the report. */
export function unknownWhy(read: SessionIndexRead | undefined, facts: IndexFacts | undefined): string {
  if (facts) return 'the session index names no workspace for it, and no hook reported a cwd';
  if (!read) return 'the session index was not read, and no hook reported a cwd';
  if (read.status === 'unavailable') return `the session index is unavailable (${read.reason}), and no hook reported a cwd`;
  return 'not in the session index, and no hook reported a cwd';
}

export class SessionCatalog {
  private read?: SessionIndexRead;
  private readonly meta: SessionMetaStore;
  /** Stored meta, read once for a run over many sessions (see `preload`), else per session. */
  private known?: Map<string, SessionMeta>;
  /** The sessions with a hook cwd file, listed once with `preload` (see `listedHookCwd`). */
  private hookCwds?: Set<string>;

  /** `stateDir`: where the hook writes down cwds (`hook-workspace.ts`); without it none are listed. */
  constructor(
    meta: SessionMetaStore,
    private readonly stateDir?: string,
  ) {
    this.meta = meta;
  }

  /** The run's read of the session index (undefined: not read). */
  useIndex(read: SessionIndexRead | undefined): void {
    this.read = read;
  }

  indexRead(): SessionIndexRead | undefined {
    return this.read;
  }

  /** Reads every session's stored meta at once: a run over many sessions does one query, not one per session. */
  preload(): void {
    this.known = this.meta.all();
    if (this.stateDir !== undefined) this.hookCwds = listHookWorkspaces(this.stateDir);
  }

  /** Back to per-session lookups (the run ended; another process may write meanwhile). */
  release(): void {
    this.known = undefined;
    this.hookCwds = undefined;
  }

  /**
   * Whether the run's listing holds a hook cwd file for the session; undefined when nothing was
   * listed. The listing may be a run late: a session about to be read must look at the file itself.
   */
  listedHookCwd(sessionId: string): boolean | undefined {
    return this.hookCwds?.has(sessionId);
  }

  stored(sessionId: string): SessionMeta | undefined {
    return this.known ? this.known.get(sessionId) : this.meta.get(sessionId);
  }

  /** This run's index row, else what an earlier run recorded (the host may have dropped the row). */
  facts(sessionId: string): IndexFacts | undefined {
    const row = this.read?.status === 'ok' ? this.read.sessions.get(sessionId) : undefined;
    return row ?? this.stored(sessionId)?.index;
  }

  /** The index row of this run only: what is new to record. */
  freshFacts(sessionId: string): IndexFacts | undefined {
    return this.read?.status === 'ok' ? this.read.sessions.get(sessionId) : undefined;
  }

  indexClaim(sessionId: string): WorkspaceClaim | undefined {
    const facts = this.facts(sessionId);
    if (facts?.workspaceDir === undefined) return undefined;
    return workspaceClaim('index', facts.workspaceDir, facts.updatedAtMs);
  }

  cwdClaim(sessionId: string): WorkspaceClaim | undefined {
    return this.stored(sessionId)?.cwd;
  }

  storedLedgerClaim(sessionId: string): WorkspaceClaim | undefined {
    return this.stored(sessionId)?.ledger;
  }

  /** Keeps the in-memory copy in step with a write queued for this session. */
  patch(sessionId: string, change: Partial<SessionMeta>): void {
    if (!this.known) return;
    this.known.set(sessionId, { ...(this.known.get(sessionId) ?? { sessionId }), ...change });
  }

  /** Whether recording `decision` would change what is stored. */
  decisionDiffers(sessionId: string, decision: WorkspaceDecision): boolean {
    const stored = this.stored(sessionId);
    return stored?.decided !== decision.dir || stored?.workspaceFrom !== decision.from || !sameClaims(stored?.conflict, decision.conflict);
  }
}

/** A project path as the report shows it next to another: the same when equal, else both. */
export function describeClaims(claims: readonly WorkspaceClaim[]): string {
  return claims.map((c) => `${c.from} ${c.dir}${c.atMs === undefined ? '' : ` (${new Date(c.atMs).toISOString().slice(0, 16).replace('T', ' ')} UTC)`}`).join('; ');
}
