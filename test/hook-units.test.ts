import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { hookEventsFile, readHookEvents, recordHookEvent } from '../src/hook/hook-events.js';
import { hookEventKind, hookRouteFromArgv, parseHookInput, readStdinCapped, recordedEventName } from '../src/hook/hook-input.js';
import { processStamp, processStartTime } from '../src/core/process-liveness.js';
import { HookSlot, WORKER_HARD_STOP_MS, workerSlotOwners } from '../src/hook/hook-slot.js';
import { findSessionDir } from '../src/hook/session-dir-finder.js';
import { ensureBuilt, newSessionId, todayUtc } from './support/hook-harness.js';
import { makeSession, repoRoot, tempDir } from './transcript-helpers.js';
import { Readable } from 'node:stream';

const made: string[] = [];
function dir(): string {
  const d = tempDir();
  made.push(d);
  return d;
}
afterEach(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The pid of a process that has certainly exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

const workerFile = (stateDir: string, sessionId: string) => path.join(stateDir, 'hook', `${sessionId}.worker`);

describe('HookSlot: the per-session claim', () => {
  it('names the pid holding each worker slot of a state dir, and never 0 or a claim still being written', () => {
    const stateDir = dir();
    expect(workerSlotOwners(stateDir)).toEqual([]);
    const [a, b, torn, zero] = [newSessionId(), newSessionId(), newSessionId(), newSessionId()];
    expect(new HookSlot(stateDir, a).tryClaim(111)).toBe(true);
    new HookSlot(stateDir, b).setOwner(222);
    writeFileSync(workerFile(stateDir, torn), '');
    writeFileSync(workerFile(stateDir, zero), '0');
    new HookSlot(stateDir, a).markPending();
    expect(workerSlotOwners(stateDir).sort()).toEqual([111, 222]);
  });

  it('lets a dead owner\'s claim be taken over, but never a live one', () => {
    const stateDir = dir();
    const id = newSessionId();
    mkdirSync(path.join(stateDir, 'hook'), { recursive: true });
    writeFileSync(workerFile(stateDir, id), String(process.pid));
    expect(new HookSlot(stateDir, id).tryClaim(424242)).toBe(false);
    expect(readFileSync(workerFile(stateDir, id), 'utf8')).toBe(String(process.pid));

    writeFileSync(workerFile(stateDir, id), String(deadPid()));
    expect(new HookSlot(stateDir, id).tryClaim()).toBe(true);
    expect(readFileSync(workerFile(stateDir, id), 'utf8')).toBe(processStamp());
  });

  it.skipIf(processStartTime(process.pid) === undefined)('takes over a dead owner\'s claim whose pid another process now has, but not its owner\'s', () => {
    const stateDir = dir();
    const id = newSessionId();
    mkdirSync(path.join(stateDir, 'hook'), { recursive: true });
    // This very process has the pid, but started long after the owner the claim records.
    writeFileSync(workerFile(stateDir, id), `${process.pid}@1`);
    expect(new HookSlot(stateDir, id).tryClaim(424242)).toBe(true);
    writeFileSync(workerFile(stateDir, id), processStamp());
    expect(new HookSlot(stateDir, id).tryClaim(424242)).toBe(false);
  });

  it('takes over a claim older than a worker can live, whatever process its pid now names', () => {
    const stateDir = dir();
    const id = newSessionId();
    mkdirSync(path.join(stateDir, 'hook'), { recursive: true });
    // A pid alone, as earlier builds (and systems without start times) write it, of a live process.
    writeFileSync(workerFile(stateDir, id), String(process.pid));
    const beforeHardStop = (Date.now() - WORKER_HARD_STOP_MS + 60_000) / 1000;
    utimesSync(workerFile(stateDir, id), beforeHardStop, beforeHardStop);
    expect(new HookSlot(stateDir, id).tryClaim(424242)).toBe(false);
    const pastHardStop = (Date.now() - WORKER_HARD_STOP_MS - 120_000) / 1000;
    utimesSync(workerFile(stateDir, id), pastHardStop, pastHardStop);
    expect(new HookSlot(stateDir, id).tryClaim(424242)).toBe(true);
  });

  it('treats a claim file that has no pid yet as being written, unless it is old', () => {
    const stateDir = dir();
    const id = newSessionId();
    mkdirSync(path.join(stateDir, 'hook'), { recursive: true });
    // The instant between O_EXCL create and the pid write: a hook that read "" as pid 0 (dead)
    // used to remove the winner's fresh claim and start a second worker.
    writeFileSync(workerFile(stateDir, id), '');
    expect(new HookSlot(stateDir, id).tryClaim()).toBe(false);
    expect(readFileSync(workerFile(stateDir, id), 'utf8')).toBe('');

    const longAgo = (Date.now() - 60_000) / 1000;
    utimesSync(workerFile(stateDir, id), longAgo, longAgo);
    expect(new HookSlot(stateDir, id).tryClaim()).toBe(true);
  });

  it('releases only its own claim, and hands a claim over without a moment of emptiness', () => {
    const stateDir = dir();
    const id = newSessionId();
    const slot = new HookSlot(stateDir, id);
    expect(slot.tryClaim()).toBe(true);
    slot.setOwner(424242);
    slot.release();
    expect(readFileSync(workerFile(stateDir, id), 'utf8')).toBe('424242');
    slot.release(424242);
    expect(existsSync(workerFile(stateDir, id))).toBe(false);
  });

  it('lets exactly one of 12 processes claiming at the same instant win', async () => {
    ensureBuilt();
    const stateDir = dir();
    const id = newSessionId();
    const moduleUrl = pathToFileURL(path.join(repoRoot, 'dist', 'src', 'hook', 'hook-slot.js')).href;
    const startAt = Date.now() + 2500;
    // Each claimer sleeps, then spins, up to the same instant, claims, and stays alive until every
    // claimer has answered (its stdin closes), so no claim can be taken over as stale.
    const script = `const { HookSlot } = await import(${JSON.stringify(moduleUrl)});
      await new Promise((r) => setTimeout(r, ${startAt} - Date.now() - 30));
      while (Date.now() < ${startAt}) {}
      const won = new HookSlot(${JSON.stringify(stateDir)}, ${JSON.stringify(id)}).tryClaim();
      process.stdout.write(won ? 'won' : 'lost');
      process.stdin.resume();`;
    const children = Array.from({ length: 12 }, () => spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] }));
    const results = await Promise.all(
      children.map(
        (child) =>
          new Promise<string>((resolve, reject) => {
            child.stdout.once('data', (b: Buffer) => resolve(b.toString()));
            child.on('error', reject);
            child.on('close', () => resolve('exited without answering'));
          }),
      ),
    );
    await Promise.all(children.map((child) => new Promise((resolve) => child.on('close', resolve).stdin.end())));
    expect(results.filter((r) => r === 'won')).toHaveLength(1);
    expect(results.filter((r) => r === 'lost')).toHaveLength(11);
  }, 20_000);

  it('keeps a pending mark until the worker takes it', () => {
    const slot = new HookSlot(dir(), newSessionId());
    expect(slot.hasPending()).toBe(false);
    slot.markPending();
    expect(slot.hasPending()).toBe(true);
    expect(slot.takePending()).toBe(true);
    expect(slot.hasPending()).toBe(false);
    expect(slot.takePending()).toBe(false);
  });

  it('shows a diagnostic once, and the same line left again is not shown again', () => {
    const slot = new HookSlot(dir(), newSessionId());
    slot.writeDiagnostic('everme: tool_call_missing_id×1');
    expect(slot.takeDiagnostic()).toBe('everme: tool_call_missing_id×1');
    expect(slot.takeDiagnostic()).toBeUndefined();
    slot.writeDiagnostic('everme: tool_call_missing_id×1');
    expect(slot.takeDiagnostic()).toBeUndefined();
    slot.writeDiagnostic('everme: tool_call_missing_id×2');
    expect(slot.takeDiagnostic()).toBe('everme: tool_call_missing_id×2');
  });

  it('remembers a miss for a while, and forgets it once the session is found', () => {
    const slot = new HookSlot(dir(), newSessionId());
    expect(slot.recentlyMissed()).toBe(false);
    slot.rememberMiss(1_000_000);
    expect(slot.recentlyMissed(1_000_000 + 60_000)).toBe(true);
    expect(slot.recentlyMissed(1_000_000 + 11 * 60_000)).toBe(false);
    slot.rememberSessionDir('/somewhere');
    expect(slot.recentlyMissed(1_000_000 + 60_000)).toBe(false);
  });
});

describe('findSessionDir: by name, cheapest first', () => {
  it('finds a session in today\'s directory, an old one by walking the tree, and skips the walk when told', () => {
    const dataDir = dir();
    const today = newSessionId();
    const old = newSessionId();
    const todayDir = makeSession(dataDir, todayUtc(), today);
    const oldDir = makeSession(dataDir, '2025/01/02', old);
    makeSession(dataDir, '2025/01/01', newSessionId());
    expect(findSessionDir(dataDir, today, { searchAll: false })).toBe(todayDir);
    expect(findSessionDir(dataDir, old, { searchAll: false })).toBeUndefined();
    expect(findSessionDir(dataDir, old)).toBe(oldDir);
    expect(findSessionDir(dataDir, newSessionId())).toBeUndefined();
  });

  it('trusts a remembered directory only while it still holds a manifest of that name', () => {
    const dataDir = dir();
    const id = newSessionId();
    const real = makeSession(dataDir, '2025/03/04', id);
    const stale = makeSession(dataDir, '2025/03/05', id, { manifest: null });
    expect(findSessionDir(dataDir, id, { remembered: real, searchAll: false })).toBe(real);
    expect(findSessionDir(dataDir, id, { remembered: stale })).toBe(real);
    const other = makeSession(dataDir, '2025/03/06', newSessionId());
    expect(findSessionDir(dataDir, id, { remembered: other })).toBe(real);
  });
});

describe('hook input', () => {
  it('takes only an object with a plausible session id, and says why it ignores anything else', () => {
    expect(parseHookInput('{"session_id":"mvs_abc","hook_event_name":"PostToolUse","cwd":"/p"}')).toEqual({
      ok: true,
      input: { sessionId: 'mvs_abc', event: 'PostToolUse', cwd: '/p' },
    });
    expect(parseHookInput('')).toEqual({ ok: false, reason: 'empty' });
    expect(parseHookInput('nope')).toEqual({ ok: false, reason: 'garbage' });
    expect(parseHookInput('"mvs_abc"')).toEqual({ ok: false, reason: 'garbage' });
    expect(parseHookInput('null')).toEqual({ ok: false, reason: 'garbage' });
    expect(parseHookInput('{"session_id":"a/../../b"}')).toEqual({ ok: false, reason: 'no_session' });
    expect(parseHookInput('{"session_id":42}')).toEqual({ ok: false, reason: 'no_session' });
    expect(parseHookInput('{}', true)).toEqual({ ok: false, reason: 'too_large' });
  });

  it('stops buffering stdin past the cap', async () => {
    const big = await readStdinCapped(Readable.from([Buffer.alloc(600), Buffer.alloc(600)]), 1000);
    expect(big).toEqual({ data: Buffer.alloc(0), tooLarge: true });
    const small = await readStdinCapped(Readable.from([Buffer.from('{"a"'), Buffer.from(':1}')]), 1000);
    expect(small.data.toString()).toBe('{"a":1}');
    expect(small.tooLarge).toBe(false);
  });
});

describe('hook events', () => {
  it('records outcome and latency per hook, skipping torn lines, and rotates a grown log', () => {
    const stateDir = dir();
    recordHookEvent(stateDir, { t: 1, outcome: 'claimed', ms: 12.5 });
    appendFileSync(hookEventsFile(stateDir), '{"t":2,"outc\n{"t":3,"outcome":"exploded","ms":1}\n');
    recordHookEvent(stateDir, { t: 4, outcome: 'ignored', ms: 3, reason: 'x'.repeat(500) });
    const events = readHookEvents(stateDir);
    expect(events.map((e) => [e.t, e.outcome])).toEqual([
      [1, 'claimed'],
      [4, 'ignored'],
    ]);
    expect(events[1]!.reason).toHaveLength(200);

    appendFileSync(hookEventsFile(stateDir), `${JSON.stringify({ t: 5, outcome: 'debounced', ms: 1 })}\n`.repeat(8000));
    recordHookEvent(stateDir, { t: 6, outcome: 'failed', ms: 2, reason: 'boom' });
    expect(existsSync(`${hookEventsFile(stateDir)}.1`)).toBe(true);
    const after = readHookEvents(stateDir);
    expect(after.at(-1)).toEqual({ t: 6, outcome: 'failed', ms: 2, reason: 'boom' });
    expect(after.length).toBe(2 + 8000 + 1);
  });
});


/** The source files `entry` loads by its static imports, itself included, and the packages they name. */
function staticImports(entry: string): { seen: Set<string>; packages: Set<string> } {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    // Type-only imports vanish at compile time; everything else is loaded when the module is.
    for (const m of text.matchAll(/^import\s+(?!type\s)[^'"]*?from\s+'([^']+)'/gm)) {
      const spec = m[1]!;
      if (spec.startsWith('.')) visit(path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts')));
      else packages.add(spec);
    }
  };
  visit(entry);
  return { seen, packages };
}

describe('the hook hot path', () => {
  it('loads no package at all (no oclif, no SQLite, no zod): only node builtins and its own small modules', () => {
    const { seen, packages } = staticImports(path.join(repoRoot, 'src', 'hook', 'hook-entry.ts'));
    expect([...packages].filter((p) => !p.startsWith('node:'))).toEqual([]);
    // Each module earns its place: settings, data dir, errors, redaction of the one stderr line,
    // the event log, the slot, the session finder, the exclusion check (#12), the bounded private
    // mkdir (#11), the Stop/boundary marks (#10), the heap cap its worker is started with (#11),
    // (#29) the one admission decision plus the workspace it records before deciding, and (#28) the
    // one process-liveness check the slot shares with the locks.
    // Their cost is measured, not guessed: `npm run bench` prints the hook's wall time next to
    // `node -e 0`.
    expect(seen.size).toBeLessThanOrEqual(19);
  });

  it("SessionStart's recall opens the store through its reader and loads none of the migrations or what they run", () => {
    const { seen } = staticImports(path.join(repoRoot, 'src', 'recall', 'session-recall.ts'));
    const loaded = [...seen].map((file) => path.relative(path.join(repoRoot, 'src'), file));
    expect(loaded).toContain(path.join('store', 'database-reader.ts'));
    // Loading these cost SessionStart ~15 ms on the agent's path (the bench's SessionStart rows).
    for (const writerOnly of ['database.ts', 'term-index.ts', 'fts-rebuild.ts', 'fts-tokenizer.ts']) expect(loaded).not.toContain(path.join('store', writerOnly));
  });
});

describe('hook events and routes', () => {
  it('maps every host event to what it asks of us; a payload without a name is a tool call, any other name is not ours', () => {
    expect(['PreToolUse', 'PostToolUse', 'Stop', 'PreCompact', 'SessionEnd', 'SessionStart'].map(hookEventKind)).toEqual([
      'tool',
      'tool',
      'turn_end',
      'boundary',
      'boundary',
      'session_start',
    ]);
    expect(hookEventKind(undefined)).toBe('tool');
    for (const other of ['UserPromptSubmit', 'PermissionRequest', 'SubagentStart', 'SubagentStop', 'PostCompact', 'constructor', '__proto__', 'stop']) {
      expect(hookEventKind(other), other).toBe('unknown');
      expect(recordedEventName(other)).toBeUndefined();
    }
    expect(recordedEventName('Stop')).toBe('Stop');
  });

  it('reads the route from the command line and nothing else', () => {
    expect(hookRouteFromArgv(['--route=plugin'])).toBe('plugin');
    expect(hookRouteFromArgv(['--route=markdown'])).toBe('markdown');
    expect(hookRouteFromArgv([])).toBeUndefined();
    expect(hookRouteFromArgv(['--route=evil'])).toBeUndefined();
  });
});
