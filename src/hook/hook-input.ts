/**
 * The hook's stdin, checked by hand rather than with zod: this runs before every tool call the
 * agent makes and must start in a few milliseconds. Only the session id matters to us.
 */
export const MAX_HOOK_INPUT_BYTES = 1024 * 1024;

const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** What a MiniMax session id can be: no path, no blanks (`forget --session` checks the same shape). */
export function isSessionId(id: string): boolean {
  return SESSION_ID.test(id);
}

export interface HookInput {
  sessionId: string;
  event?: string;
  cwd?: string;
}

/**
 * What an event asks of us. `tool`: the debounced capture of tool calls (and any payload without an
 * event name: the daemon's markdown hooks are not documented to send one). `turn_end` (Stop): the
 * finished turn, soon. `boundary` (PreCompact, SessionEnd): everything, flushed. `session_start`:
 * recall on stdout. Anything else (UserPromptSubmit, SubagentStop, …) is not ours: `unknown`.
 */
export type HookEventKind = 'tool' | 'turn_end' | 'boundary' | 'session_start' | 'unknown';

const EVENT_KINDS: Record<string, HookEventKind> = {
  PreToolUse: 'tool',
  PostToolUse: 'tool',
  Stop: 'turn_end',
  PreCompact: 'boundary',
  SessionEnd: 'boundary',
  SessionStart: 'session_start',
};

export function hookEventKind(event: string | undefined): HookEventKind {
  if (event === undefined) return 'tool';
  return Object.hasOwn(EVENT_KINDS, event) ? EVENT_KINDS[event]! : 'unknown';
}

/** Event names as recorded in the event log: bounded, and only the ones we know by name. */
export function recordedEventName(event: string | undefined): string | undefined {
  return event !== undefined && hookEventKind(event) !== 'unknown' ? event : undefined;
}

/** Which install route ran the hook, from the `--route=…` its command carries (older commands carry none). */
export type HookRoute = 'plugin' | 'markdown';

export function hookRouteFromArgv(argv: readonly string[]): HookRoute | undefined {
  for (const arg of argv) {
    if (arg === '--route=plugin') return 'plugin';
    if (arg === '--route=markdown') return 'markdown';
  }
  return undefined;
}

export type HookInputResult = { ok: true; input: HookInput } | { ok: false; reason: 'empty' | 'too_large' | 'garbage' | 'no_session' };

export function parseHookInput(raw: Buffer | string, tooLarge = false): HookInputResult {
  if (tooLarge) return { ok: false, reason: 'too_large' };
  const text = typeof raw === 'string' ? raw : raw.toString('utf8');
  if (text.trim() === '') return { ok: false, reason: 'empty' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'garbage' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, reason: 'garbage' };
  const record = value as Record<string, unknown>;
  const sessionId = record.session_id;
  if (typeof sessionId !== 'string' || !isSessionId(sessionId)) return { ok: false, reason: 'no_session' };
  return {
    ok: true,
    input: {
      sessionId,
      event: typeof record.hook_event_name === 'string' ? record.hook_event_name : undefined,
      cwd: typeof record.cwd === 'string' && record.cwd.length < 4096 ? record.cwd : undefined,
    },
  };
}

/** Reads stdin up to the cap; anything larger is not buffered further. */
export async function readStdinCapped(stream: NodeJS.ReadableStream, cap = MAX_HOOK_INPUT_BYTES): Promise<{ data: Buffer; tooLarge: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += buf.length;
    if (size > cap) return { data: Buffer.alloc(0), tooLarge: true };
    chunks.push(buf);
  }
  return { data: Buffer.concat(chunks), tooLarge: false };
}
