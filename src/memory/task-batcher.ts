import type { AgentMessage, KeyedMessage } from '../core/agent-message.js';
import { jsonBytes } from '../core/json-bytes.js';
import { MAX_UTF8_PER_UNIT } from '../core/utf8.js';
import type { WarningCollector } from '../core/warnings.js';

/** The gateway's limits for one POST /mem/agent-memory body. */
export const MAX_REQUEST_BYTES = 64 * 1024;
export const MAX_REQUEST_MESSAGES = 500;

/**
 * Trim levels, tried in order for a task that does not fit one request: untouched, then every tool
 * result cut to 4, 3 and finally 2 KiB. Splitting a task always happens at the last level that was
 * needed, so nothing is cut further than the byte limit forces.
 */
const LEVEL_BUDGETS = [Number.POSITIVE_INFINITY, 4096, 3072, 2048] as const;
const LEVELS = LEVEL_BUDGETS.length;
const LAST_LEVEL = LEVELS - 1;

export interface PlannedRequest {
  messages: AgentMessage[];
  /** Parallel to `messages`. */
  keys: string[];
  /** UTF-8 length of the request body, counted with `"flush":false` (the longer spelling) and `"sync":true`. */
  bytes: number;
  /**
   * The tool results this request carries trimmed, whole, by their index in `messages`. The trim
   * exists for the gateway's request limit; the embedded store is the user's own index and keeps
   * them whole (up to the converter's 1 MiB cap), so `everme get` and search see every line.
   */
  whole?: Map<number, AgentMessage>;
}

export interface TaskBatcherOptions {
  conversationId: string;
  maxBytes?: number;
  maxMessages?: number;
  warnings: WarningCollector;
}

const utf8 = (text: string): number => Buffer.byteLength(text, 'utf8');

const MARKER_HEAD = '\n…[everme: ';
const MARKER_TAIL = ' bytes cut]…\n';
const MARKER_FIXED_BYTES = utf8(MARKER_HEAD) + utf8(MARKER_TAIL);

/** UTF-8 length of the code point starting at `i`, and how many UTF-16 units it spans. */
function codePointAt(text: string, i: number): { bytes: number; units: number } {
  const c = text.charCodeAt(i);
  if (c < 0x80) return { bytes: 1, units: 1 };
  if (c < 0x800) return { bytes: 2, units: 1 };
  if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
    const next = text.charCodeAt(i + 1);
    if (next >= 0xdc00 && next <= 0xdfff) return { bytes: 4, units: 2 };
  }
  // Lone surrogates count as the 3-byte U+FFFD that Buffer.byteLength charges for them.
  return { bytes: 3, units: 1 };
}

/** Same as codePointAt, for the code point that ends just before `end`. */
function codePointBefore(text: string, end: number): { bytes: number; units: number } {
  const c = text.charCodeAt(end - 1);
  if (c >= 0xdc00 && c <= 0xdfff && end >= 2) {
    const prev = text.charCodeAt(end - 2);
    if (prev >= 0xd800 && prev <= 0xdbff) return { bytes: 4, units: 2 };
  }
  return codePointAt(text, end - 1);
}

/**
 * Keeps the head and tail of a tool result around a marker naming how many bytes were cut, so the
 * command echo at the top and the error at the bottom both survive. Never splits a character.
 * `total` is the content's UTF-8 length when the caller knows it: a task tries three budgets on the
 * same output, and measuring a large one is a pass over all of it.
 */
export function trimToolContent(content: string, budget: number, total = utf8(content)): string {
  if (total <= budget) return content;
  // Sized with the digits of the whole length: the real cut count is smaller, never longer.
  const keep = Math.max(0, budget - MARKER_FIXED_BYTES - String(total).length);
  const headBudget = Math.ceil(keep / 2);
  const tailBudget = keep - headBudget;

  let headEnd = 0;
  let headBytes = 0;
  while (headEnd < content.length) {
    const cp = codePointAt(content, headEnd);
    if (headBytes + cp.bytes > headBudget) break;
    headBytes += cp.bytes;
    headEnd += cp.units;
  }
  let tailStart = content.length;
  let tailBytes = 0;
  while (tailStart > headEnd) {
    const cp = codePointBefore(content, tailStart);
    if (tailBytes + cp.bytes > tailBudget) break;
    tailBytes += cp.bytes;
    tailStart -= cp.units;
  }
  const cut = total - headBytes - tailBytes;
  return `${content.slice(0, headEnd)}${MARKER_HEAD}${cut}${MARKER_TAIL}${content.slice(tailStart)}`;
}

/** One message with its form and serialized size at every trim level still possible. */
interface Pending {
  key: string;
  role: AgentMessage['role'];
  message: AgentMessage;
  /** Index = level; emptied for levels the task can no longer use, so huge outputs are let go. */
  forms: (AgentMessage | undefined)[];
  sizes: number[];
  /** Trimmed forms are worked out only once a task fails to fit untouched (rare, and costly). */
  expanded: boolean;
}

function makePending(km: KeyedMessage): Pending {
  const { message } = km;
  return { key: km.key, role: message.role, message, forms: [message], sizes: [jsonBytes(message)], expanded: false };
}

function expand(p: Pending): void {
  if (p.expanded) return;
  p.expanded = true;
  const { message } = p;
  // Measured once for all levels; left at 0, unmeasured, when the result fits the smallest budget
  // whatever its characters are.
  const total = message.role === 'tool' && message.content.length * MAX_UTF8_PER_UNIT > LEVEL_BUDGETS[LAST_LEVEL]! ? utf8(message.content) : 0;
  for (let level = 1; level < LEVELS; level++) {
    const previous = p.forms[level - 1] ?? message;
    const budget = LEVEL_BUDGETS[level]!;
    let form: AgentMessage = message;
    if (message.role === 'tool' && total > budget) form = { ...message, content: trimToolContent(message.content, budget, total) };
    p.forms[level] = form;
    p.sizes[level] = previous === form ? p.sizes[level - 1]! : jsonBytes(form);
  }
}

/** Bytes of a run of messages inside `[...]`: their JSON plus the commas between them. */
function unitBytes(units: readonly Pending[], level: number): number {
  let sum = units.length > 0 ? units.length - 1 : 0;
  for (const p of units) sum += p.sizes[level]!;
  return sum;
}

interface OpenRequest {
  messages: AgentMessage[];
  keys: string[];
  /** Message bytes inside the array brackets. */
  inner: number;
  whole?: Map<number, AgentMessage>;
}

/**
 * Packs converted messages into gateway requests, whole tasks at a time, streaming: it holds the
 * current task (or, once a task is known to need splitting, only its current step) and the request
 * being filled. Every pushed key comes out in exactly one request, in order.
 */
export class TaskBatcher {
  private readonly maxBytes: number;
  private readonly maxMessages: number;
  private readonly warnings: WarningCollector;
  /**
   * Bytes of the body without any message: `{"conversationId":…,"flush":false,"sync":true,"messages":[]}`.
   * `sync` is counted always: whether a request carries it is decided only when it is sent.
   */
  private readonly overhead: number;

  private task: Pending[] = [];
  private taskInner: number[] = new Array<number>(LEVELS).fill(0);
  /** Whether the task's trimmed forms (levels 1…) have been worked out. */
  private taskExpanded = false;
  /** The first trim level at which the task's bytes still fit one request. */
  private minLevel = 0;
  /** Set once even 2 KiB trimming cannot fit the task: its steps then stream out one by one. */
  private splitting = false;
  private step: Pending[] = [];
  private open: OpenRequest = { messages: [], keys: [], inner: 0 };

  constructor(opts: TaskBatcherOptions) {
    this.maxBytes = opts.maxBytes ?? MAX_REQUEST_BYTES;
    this.maxMessages = opts.maxMessages ?? MAX_REQUEST_MESSAGES;
    this.warnings = opts.warnings;
    this.overhead = utf8(JSON.stringify({ conversationId: opts.conversationId, flush: false, sync: true, messages: [] }));
  }

  push(km: KeyedMessage): PlannedRequest[] {
    const out: PlannedRequest[] = [];
    if (km.message.role === 'user') this.finishTask(out);
    const p = makePending(km);
    if (this.splitting) {
      expand(p);
      p.forms.fill(undefined, 0, LAST_LEVEL);
      if (this.startsStep(p, this.step)) {
        this.place(this.step, LAST_LEVEL, out);
        this.step = [];
      }
      this.step.push(p);
      return out;
    }
    this.addToTask(p);
    if (this.minLevel === LEVELS) this.startSplitting(out);
    return out;
  }

  end(): PlannedRequest[] {
    const out: PlannedRequest[] = [];
    this.finishTask(out);
    this.emitOpen(out);
    return out;
  }

  private fitsAlone(inner: number, count: number): boolean {
    return this.overhead + inner <= this.maxBytes && count <= this.maxMessages;
  }

  private addToTask(p: Pending): void {
    const first = this.task.length === 0;
    this.task.push(p);
    if (this.taskExpanded) expand(p);
    const levels = this.taskExpanded ? LEVELS : 1;
    for (let level = 0; level < levels; level++) {
      this.taskInner[level]! += p.sizes[level]! + (first ? 0 : 1);
    }
    if (!this.taskExpanded && this.overhead + this.taskInner[0]! > this.maxBytes) {
      this.taskExpanded = true;
      for (const q of this.task) expand(q);
      for (let level = 1; level < LEVELS; level++) this.taskInner[level] = unitBytes(this.task, level);
    }
    while (this.minLevel < LEVELS && this.overhead + this.taskInner[this.minLevel]! > this.maxBytes) {
      // This level can never fit again (tasks only grow), so its full-size outputs need not be kept;
      // the last level stays, it is what a split task is sent with.
      if (this.minLevel < LAST_LEVEL) for (const q of this.task) q.forms[this.minLevel] = undefined;
      this.minLevel++;
    }
  }

  private startSplitting(out: PlannedRequest[]): void {
    this.splitting = true;
    this.emitOpen(out);
    const steps = this.stepsOf(this.task);
    this.step = steps.pop() ?? [];
    for (const s of steps) this.place(s, LAST_LEVEL, out);
    this.resetTask();
  }

  private finishTask(out: PlannedRequest[]): void {
    if (this.splitting) {
      if (this.step.length > 0) this.place(this.step, LAST_LEVEL, out);
      this.step = [];
      this.splitting = false;
      return;
    }
    if (this.task.length === 0) return;
    const level = this.minLevel;
    if (this.task.length <= this.maxMessages) {
      this.place(this.task, level, out);
    } else {
      // Too many messages even though the bytes fit: split at steps, trimmed no further than the bytes forced.
      this.emitOpen(out);
      for (const s of this.stepsOf(this.task)) this.place(s, level, out);
    }
    this.resetTask();
  }

  private resetTask(): void {
    this.task = [];
    this.taskInner = new Array<number>(LEVELS).fill(0);
    this.taskExpanded = false;
    this.minLevel = 0;
  }

  /** A step is a user message alone, an assistant with the tool results after it, or a run of orphan tool results. */
  private startsStep(p: Pending, current: readonly Pending[]): boolean {
    if (current.length === 0) return true;
    if (p.role !== 'tool') return true;
    return current[0]!.role === 'user';
  }

  private stepsOf(messages: readonly Pending[]): Pending[][] {
    const steps: Pending[][] = [];
    let current: Pending[] = [];
    for (const p of messages) {
      if (this.startsStep(p, current) && current.length > 0) {
        steps.push(current);
        current = [];
      }
      current.push(p);
    }
    if (current.length > 0) steps.push(current);
    return steps;
  }

  /** Adds a unit (whole task or step) to the open request, or starts a new one; never breaks the unit. */
  private place(unit: readonly Pending[], level: number, out: PlannedRequest[]): void {
    if (unit.length === 0) return;
    const inner = unitBytes(unit, level);
    const open = this.open;
    const joined = open.messages.length === 0 ? inner : open.inner + 1 + inner;
    if (this.fitsAlone(joined, open.messages.length + unit.length)) {
      this.append(unit, level, joined);
      return;
    }
    this.emitOpen(out);
    if (this.fitsAlone(inner, unit.length)) {
      this.append(unit, level, inner);
      return;
    }
    this.warnings.add('oversized_unit');
    this.append(unit, level, inner);
    this.emitOpen(out);
  }

  private append(unit: readonly Pending[], level: number, inner: number): void {
    for (const p of unit) {
      const form = p.forms[level]!;
      if (form !== p.message) (this.open.whole ??= new Map()).set(this.open.messages.length, p.message);
      this.open.messages.push(form);
      this.open.keys.push(p.key);
    }
    this.open.inner = inner;
  }

  private emitOpen(out: PlannedRequest[]): void {
    if (this.open.messages.length === 0) return;
    const { messages, keys, whole } = this.open;
    out.push({ messages, keys, bytes: this.overhead + this.open.inner, ...(whole ? { whole } : {}) });
    this.open = { messages: [], keys: [], inner: 0 };
  }
}

export function planRequests(
  conversationId: string,
  messages: Iterable<KeyedMessage>,
  opts: Omit<TaskBatcherOptions, 'conversationId'>,
): PlannedRequest[] {
  const batcher = new TaskBatcher({ ...opts, conversationId });
  const out: PlannedRequest[] = [];
  for (const m of messages) out.push(...batcher.push(m));
  out.push(...batcher.end());
  return out;
}
