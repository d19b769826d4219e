import { closeSync, linkSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { hookStateDir } from '../store/hook-workspace.js';
import { makeDirs, PRIVATE_DIR_MODE } from '../core/private-dir.js';
import { claimantAlive, parseProcessStamp, processStamp, type ProcessStamp } from '../core/process-liveness.js';

/** A claim file without a pid yet is being written by its claimer, unless it is this old. */
const UNWRITTEN_CLAIM_GRACE_MS = 10_000;
/** A worker never lives forever, whatever the agent does: no new run starts past this. */
export const WORKER_MAX_LIFETIME_MS = 15 * 60 * 1000;
/** And a run that is stuck past the lifetime (a hanging request, a held lock) is cut off here. */
export const WORKER_HARD_STOP_MS = WORKER_MAX_LIFETIME_MS + 2 * 60 * 1000;
/**
 * A claim last written this long ago has no live owner, whatever its pid now names: a worker writes
 * its claim as it starts and is gone by its hard stop. The minute over it absorbs a slow start.
 */
const CLAIM_MAX_AGE_MS = WORKER_HARD_STOP_MS + 60_000;
/** How long a session id that no directory matched is not searched for through the whole tree again. */
const MISS_TTL_MS = 10 * 60 * 1000;

/** A session's worker claim: `<state>/hook/<session>.worker`, holding the owner's `processStamp`. */
const WORKER_SUFFIX = '.worker';

/** A positive integer from a small file; an empty or torn file (a write in progress) is undefined. */
function readNumber(file: string): number | undefined {
  try {
    const text = readFileSync(file, 'utf8').trim();
    if (!/^\d+$/.test(text)) return undefined;
    const n = Number(text);
    return Number.isSafeInteger(n) ? n : undefined;
  } catch {
    return undefined;
  }
}

/** The stamp in a claim file; an empty or torn file (a write in progress) is undefined. */
function readStamp(file: string): ProcessStamp | undefined {
  try {
    return parseProcessStamp(readFileSync(file, 'utf8').trim());
  } catch {
    return undefined;
  }
}

interface ClaimIdentity {
  ino: number;
  mtimeMs: number;
  /** The file's text, when it is a stamp. */
  owner: string | undefined;
}

function claimIdentity(file: string): ClaimIdentity | undefined {
  try {
    const st = statSync(file);
    const text = readFileSync(file, 'utf8').trim();
    return { ino: st.ino, mtimeMs: st.mtimeMs, owner: parseProcessStamp(text) ? text : undefined };
  } catch {
    return undefined;
  }
}

/** Whether a claim still stands: its owner runs (`claimantAlive`), or, not written yet, it is fresh. */
function claimStands(claim: ClaimIdentity, now = Date.now()): boolean {
  const age = now - claim.mtimeMs;
  if (claim.owner === undefined) return age < UNWRITTEN_CLAIM_GRACE_MS;
  return age < CLAIM_MAX_AGE_MS && claimantAlive(parseProcessStamp(claim.owner)!);
}

/**
 * The per-session debounce slot, in plain files so the hook never opens SQLite. The worker file is
 * created with O_EXCL: of any number of concurrent hooks exactly one wins and starts the worker;
 * the others leave a pending mark that the running worker picks up.
 */
export class HookSlot {
  readonly dir: string;
  private readonly workerFile: string;
  private readonly pendingFile: string;
  private readonly lastRunFile: string;
  private readonly sessionDirFile: string;
  private readonly diagFile: string;
  private readonly diagShownFile: string;
  private readonly missFile: string;

  constructor(stateDir: string, readonly sessionId: string) {
    this.dir = hookStateDir(stateDir);
    const base = path.join(this.dir, sessionId);
    this.workerFile = `${base}${WORKER_SUFFIX}`;
    this.pendingFile = `${base}.pending`;
    this.lastRunFile = `${base}.last`;
    this.sessionDirFile = `${base}.dir`;
    this.diagFile = `${base}.diag`;
    this.diagShownFile = `${base}.diag-last`;
    this.missFile = `${base}.miss`;
  }

  private ensureDir(): void {
    // Bounded (see makeDirs): a state dir the OS refuses throws at once instead of spinning.
    makeDirs(this.dir, PRIVATE_DIR_MODE);
  }

  /** True when this process now owns the worker slot. A slot whose owner died is taken over. */
  tryClaim(pid = process.pid): boolean {
    this.ensureDir();
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const fd = openSync(this.workerFile, 'wx', 0o600);
        try {
          writeSync(fd, processStamp(pid));
        } finally {
          closeSync(fd);
        }
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const seen = claimIdentity(this.workerFile);
      if (!seen) continue;
      if (claimStands(seen)) return false;
      if (!this.evictStale(seen)) return false;
    }
    return false;
  }

  /**
   * Removes a dead owner's claim without ever removing a live one: the claim is moved aside
   * atomically and, when it turns out to be a newer claim than the one judged dead (another hook
   * replaced it in between), linked back.
   */
  private evictStale(judged: ClaimIdentity): boolean {
    const aside = `${this.workerFile}.${process.pid}.stale`;
    try {
      renameSync(this.workerFile, aside);
    } catch {
      return true; // already gone: claim afresh
    }
    const moved = claimIdentity(aside);
    const same = moved !== undefined && moved.ino === judged.ino && moved.mtimeMs === judged.mtimeMs && moved.owner === judged.owner;
    if (!same) {
      try {
        linkSync(aside, this.workerFile);
      } catch {
        // someone claimed the slot meanwhile; theirs stands
      }
    }
    rmSync(aside, { force: true });
    return same;
  }

  /** Hands the claim to another process (the worker); replaced atomically so no reader sees it empty. */
  setOwner(pid: number): void {
    this.ensureDir();
    const tmp = `${this.workerFile}.${process.pid}.tmp`;
    writeFileSync(tmp, processStamp(pid), { mode: 0o600 });
    renameSync(tmp, this.workerFile);
  }

  /** Lets go of the slot only if this process still holds it: a successor's claim is never removed. */
  release(pid = process.pid): void {
    if (readStamp(this.workerFile)?.pid === pid) rmSync(this.workerFile, { force: true });
  }

  markPending(): void {
    this.ensureDir();
    writeFileSync(this.pendingFile, String(Date.now()), { mode: 0o600 });
  }

  /** Reads and clears the pending mark in one step from the worker's point of view. */
  takePending(): boolean {
    try {
      rmSync(this.pendingFile);
      return true;
    } catch {
      return false;
    }
  }

  hasPending(): boolean {
    try {
      statSync(this.pendingFile);
      return true;
    } catch {
      return false;
    }
  }

  lastRunMs(): number | undefined {
    return readNumber(this.lastRunFile);
  }

  markRunStart(ms = Date.now()): void {
    this.ensureDir();
    writeFileSync(this.lastRunFile, String(ms), { mode: 0o600 });
  }

  rememberedSessionDir(): string | undefined {
    try {
      return readFileSync(this.sessionDirFile, 'utf8').trim() || undefined;
    } catch {
      return undefined;
    }
  }

  rememberSessionDir(dir: string): void {
    this.ensureDir();
    writeFileSync(this.sessionDirFile, dir, { mode: 0o600 });
    rmSync(this.missFile, { force: true });
  }

  /** True when a whole-tree search for this id found nothing a short while ago. */
  recentlyMissed(now = Date.now()): boolean {
    const at = readNumber(this.missFile);
    return at !== undefined && now - at >= 0 && now - at < MISS_TTL_MS;
  }

  rememberMiss(now = Date.now()): void {
    this.ensureDir();
    writeFileSync(this.missFile, String(now), { mode: 0o600 });
  }

  /**
   * Leaves a one-line diagnostic for the next hook to show on stderr. A line identical to the last
   * one left is not shown again: every run rereads the whole session, so the same malformed record
   * would otherwise be reported after every tool call.
   */
  writeDiagnostic(line: string): void {
    const text = line.replace(/\s+/g, ' ').trim().slice(0, 300);
    if (!text) return;
    this.ensureDir();
    let shown: string | undefined;
    try {
      shown = readFileSync(this.diagShownFile, 'utf8');
    } catch {
      shown = undefined;
    }
    if (shown === text) return;
    writeFileSync(this.diagFile, text, { mode: 0o600 });
    writeFileSync(this.diagShownFile, text, { mode: 0o600 });
  }

  /** The diagnostic left by a worker, once: reading it removes it. */
  takeDiagnostic(): string | undefined {
    const taken = `${this.diagFile}.${process.pid}`;
    try {
      // Renamed first so two concurrent hooks cannot both print it.
      renameSync(this.diagFile, taken);
    } catch {
      return undefined;
    }
    try {
      return readFileSync(taken, 'utf8').trim() || undefined;
    } catch {
      return undefined;
    } finally {
      rmSync(taken, { force: true });
    }
  }
}

/** The pids of the workers holding a slot in this state dir (what must end before the dir is removed). */
export function workerSlotOwners(stateDir: string): number[] {
  const dir = hookStateDir(stateDir);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  // A pid of 0 would name a process group: never a worker.
  return names.filter((name) => name.endsWith(WORKER_SUFFIX)).flatMap((name) => {
    const pid = readStamp(path.join(dir, name))?.pid;
    return pid !== undefined && pid > 0 ? [pid] : [];
  });
}
