import { describe, expect, it } from 'vitest';
import type { AgentMessage, AgentToolMessage, KeyedMessage } from '../src/core/agent-message.js';
import { WarningCollector } from '../src/core/warnings.js';
import { TaskBatcher, planRequests, trimToolContent, type PlannedRequest } from '../src/memory/task-batcher.js';

const CID = 'minimaxcode-mvs_test';
const LIMIT = 65536;
const utf8 = (s: string): number => Buffer.byteLength(s, 'utf8');

let seq = 0;
const ts = (): number => 1789355112345 + seq++;
const user = (content: string): AgentMessage => ({ role: 'user', timestamp: ts(), content });
const assistant = (content: string, callIds: string[] = []): AgentMessage => ({
  role: 'assistant',
  timestamp: ts(),
  content,
  turnComplete: callIds.length === 0,
  ...(callIds.length > 0
    ? { toolCalls: callIds.map((id) => ({ id, type: 'function' as const, name: 'bash', arguments: JSON.stringify({ command: `echo ${id}` }) })) }
    : {}),
});
const tool = (toolCallId: string, content: string): AgentMessage => ({ role: 'tool', timestamp: ts(), toolCallId, content });
/** Tool output whose head and tail are recognisable. */
const output = (bytes: number, tag: string): string => `HEAD-${tag}-` + 'x'.repeat(bytes - 2 * (tag.length + 6)) + `-${tag}-TAIL`;

function keyed(messages: AgentMessage[], prefix = 'k'): KeyedMessage[] {
  return messages.map((message, i) => ({ key: `${prefix}${i}`, message }));
}

function bodyBytes(r: PlannedRequest, flush = false): number {
  return utf8(JSON.stringify({ conversationId: CID, flush, sync: true, messages: r.messages }));
}

/** The invariants every plan must keep: limits, exact byte accounting, every key once and in order. */
function checkPlan(input: KeyedMessage[], plan: PlannedRequest[], allowOversized = false): void {
  for (const r of plan) {
    expect(r.keys).toHaveLength(r.messages.length);
    expect(r.bytes).toBe(bodyBytes(r, false));
    expect(bodyBytes(r, true)).toBeLessThanOrEqual(r.bytes);
    if (!allowOversized) {
      expect(r.bytes).toBeLessThanOrEqual(LIMIT);
      expect(r.messages.length).toBeLessThanOrEqual(500);
    }
  }
  expect(plan.flatMap((r) => r.keys)).toEqual(input.map((m) => m.key));
  // Only tool result contents may differ from the input.
  const out = plan.flatMap((r) => r.messages);
  out.forEach((m, i) => {
    const original = input[i]!.message;
    if (m.role === 'tool' && original.role === 'tool') expect({ ...m, content: '' }).toEqual({ ...original, content: '' });
    else expect(m).toEqual(original);
  });
}

const toolContents = (plan: PlannedRequest[]): string[] =>
  plan.flatMap((r) => r.messages).flatMap((m) => (m.role === 'tool' ? [m.content] : []));

/** A task of one user message and `steps` assistant+result pairs with results of `resultBytes`. */
function task(tag: string, steps: number, resultBytes: number): AgentMessage[] {
  const messages: AgentMessage[] = [user(`task ${tag}`)];
  for (let i = 0; i < steps; i++) {
    messages.push(assistant(`step ${i}`, [`call_${tag}_${i}`]), tool(`call_${tag}_${i}`, output(resultBytes, `${tag}${i}`)));
  }
  return messages;
}

const cutMarker = /\n…\[everme: (\d+) bytes cut\]…\n/;

describe('trimToolContent', () => {
  it('keeps head and tail around a marker that counts the cut bytes exactly', () => {
    const original = output(10_000, 'T');
    const trimmed = trimToolContent(original, 4096);
    expect(utf8(trimmed)).toBeLessThanOrEqual(4096);
    expect(utf8(trimmed)).toBeGreaterThan(4096 - 8);
    const match = cutMarker.exec(trimmed)!;
    const head = trimmed.slice(0, match.index);
    const tail = trimmed.slice(match.index + match[0].length);
    expect(head.startsWith('HEAD-T-')).toBe(true);
    expect(tail.endsWith('-T-TAIL')).toBe(true);
    expect(original.startsWith(head) && original.endsWith(tail)).toBe(true);
    expect(Number(match[1])).toBe(10_000 - utf8(head) - utf8(tail));
  });

  it('returns content within the budget unchanged', () => {
    const exact = 'y'.repeat(2048);
    expect(trimToolContent(exact, 2048)).toBe(exact);
  });

  it('never splits a CJK character or an emoji surrogate pair, whatever the alignment', () => {
    for (const [unit, prefixes] of [['漢字', ['', 'a', 'ab']], ['😀🚀', ['', 'a', 'ab', 'abc']]] as const) {
      for (const prefix of prefixes) {
        const original = prefix + unit.repeat(3000) + prefix;
        for (const budget of [4096, 3072, 2048]) {
          const trimmed = trimToolContent(original, budget);
          expect(utf8(trimmed)).toBeLessThanOrEqual(budget);
          expect(trimmed).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
          expect(Buffer.from(trimmed, 'utf8').toString('utf8')).toBe(trimmed);
          const match = cutMarker.exec(trimmed)!;
          const head = trimmed.slice(0, match.index);
          const tail = trimmed.slice(match.index + match[0].length);
          expect(original.startsWith(head) && original.endsWith(tail)).toBe(true);
          expect(Number(match[1])).toBe(utf8(original) - utf8(head) - utf8(tail));
          // Dropping whole characters costs at most three bytes per side.
          expect(utf8(trimmed)).toBeGreaterThan(budget - 6 - String(utf8(original)).length);
        }
      }
    }
  });
});

describe('TaskBatcher', () => {
  it('packs whole small tasks into one request in order, untouched', () => {
    const input = keyed([...task('a', 2, 500), ...task('b', 3, 800), ...task('c', 1, 100)]);
    const plan = planRequests(CID, input, { warnings: new WarningCollector() });
    checkPlan(input, plan);
    expect(plan).toHaveLength(1);
    expect(plan[0]!.messages).toEqual(input.map((m) => m.message));
  });

  it('puts messages before the first user message into a task of their own', () => {
    const orphan = [assistant('resumed', ['call_0']), tool('call_0', output(30_000, 'o'))];
    const input = keyed([...orphan, ...task('a', 1, 40_000)]);
    const plan = planRequests(CID, input, { warnings: new WarningCollector() });
    checkPlan(input, plan);
    expect(plan.map((r) => r.keys)).toEqual([['k0', 'k1'], ['k2', 'k3', 'k4']]);
    expect(toolContents(plan)).toEqual([output(30_000, 'o'), output(40_000, 'a0')]);
  });

  it('starts a new request for a task that fits alone but not beside the previous one', () => {
    const input = keyed([...task('a', 1, 40_000), ...task('b', 1, 40_000), ...task('c', 1, 20_000)]);
    const plan = planRequests(CID, input, { warnings: new WarningCollector() });
    checkPlan(input, plan);
    expect(plan.map((r) => r.keys.length)).toEqual([3, 6]);
    expect(toolContents(plan)).toEqual([output(40_000, 'a0'), output(40_000, 'b0'), output(20_000, 'c0')]);
  });

  it('sends a task of exactly 65536 body bytes in one request, untrimmed; one byte more is trimmed', () => {
    const probe = task('x', 1, 1000);
    const base = bodyBytes({ messages: probe, keys: [], bytes: 0 }) - 1000;
    // A lone surrogate is escaped by JSON.stringify as six bytes; the accounting must match.
    const exact = [...probe.slice(0, 2), tool('call_x_0', '\ud800' + output(LIMIT - base - 6, 'x0'))];
    const input = keyed(exact);
    const plan = planRequests(CID, input, { warnings: new WarningCollector() });
    checkPlan(input, plan);
    expect(plan).toHaveLength(1);
    expect(plan[0]!.bytes).toBe(LIMIT);
    expect(toolContents(plan)).toEqual([(exact[2] as AgentToolMessage).content]);

    const over = keyed([...exact.slice(0, 2), tool('call_x_0', '\ud800' + output(LIMIT - base - 5, 'x0'))]);
    const overPlan = planRequests(CID, over, { warnings: new WarningCollector() });
    checkPlan(over, overPlan);
    expect(utf8(toolContents(overPlan)[0]!)).toBeLessThanOrEqual(4096);
  });

  it('at 2 KiB trims a result of 2,049 UTF-8 bytes in 683 characters, and keeps one of 2,046 bytes', () => {
    // Three bytes a character: the longest result that can fit every budget without being measured.
    const kept = '漢'.repeat(682);
    const over = '漢'.repeat(683);
    const input = keyed([...task('w', 24, 10_000), assistant('last', ['k1', 'k2']), tool('k1', kept), tool('k2', over)]);
    const plan = planRequests(CID, input, { warnings: new WarningCollector() });
    checkPlan(input, plan);
    expect(plan).toHaveLength(1);
    const contents = toolContents(plan);
    expect(contents.slice(0, 24).every((c) => cutMarker.test(c) && utf8(c) <= 2048)).toBe(true);
    expect(contents[24]).toBe(kept);
    expect(contents[25]).toMatch(cutMarker);
    expect(utf8(contents[25]!)).toBeLessThanOrEqual(2048);
  });

  it('never puts more than 500 messages into one request', () => {
    const input = keyed(Array.from({ length: 1001 }, (_, i) => user(`u${i}`)));
    const plan = planRequests(CID, input, { warnings: new WarningCollector() });
    checkPlan(input, plan);
    expect(plan.map((r) => r.messages.length)).toEqual([500, 500, 1]);
  });

  it('splits a task with too many messages at step boundaries without trimming what fits by bytes', () => {
    const messages: AgentMessage[] = [user('many small steps')];
    for (let i = 0; i < 130; i++) {
      messages.push(assistant('', [`c${i}`]), tool(`c${i}`, i === 0 ? output(3000, 'big') : 'ok'), assistant('a'), assistant('b'));
    }
    const input = keyed(messages);
    expect(utf8(JSON.stringify({ conversationId: CID, flush: false, sync: true, messages }))).toBeLessThan(LIMIT);
    const plan = planRequests(CID, input, { warnings: new WarningCollector() });
    checkPlan(input, plan);
    expect(plan.map((r) => r.messages.length)).toEqual([500, 21]);
    expect(toolContents(plan)).toEqual(input.flatMap((m) => (m.message.role === 'tool' ? [m.message.content] : [])));
  });

  describe('trims tool results of a task too big for one request, 4 then 3 then 2 KiB', () => {
    const cases = [
      { steps: 12, budget: 4096, next: 3072 },
      { steps: 16, budget: 3072, next: 2048 },
      { steps: 22, budget: 2048, next: 0 },
    ];
    for (const { steps, budget, next } of cases) {
      it(`uses ${budget} bytes for ${steps} results of 10 KB, leaving small results exact`, () => {
        const messages = task('t', steps, 10_000);
        messages.push(assistant('small', ['call_small']), tool('call_small', 'exactly this, untouched'));
        const input = keyed(messages);
        const plan = planRequests(CID, input, { warnings: new WarningCollector() });
        checkPlan(input, plan);
        expect(plan).toHaveLength(1);
        const contents = toolContents(plan);
        expect(contents.at(-1)).toBe('exactly this, untouched');
        for (const [i, content] of contents.slice(0, -1).entries()) {
          expect(utf8(content)).toBeLessThanOrEqual(budget);
          expect(utf8(content)).toBeGreaterThan(next);
          expect(content.startsWith(`HEAD-t${i}-`) && content.endsWith(`-t${i}-TAIL`)).toBe(true);
          expect(Number(cutMarker.exec(content)![1])).toBe(10_000 - (utf8(content) - utf8(cutMarker.exec(content)![0])));
        }
      });
    }
  });

  it('splits a task too big even at 2 KiB at step boundaries, never parting an assistant from its results', () => {
    const messages: AgentMessage[] = [user('big task'), tool('orphan_a', output(9000, 'oa')), tool('orphan_b', output(9000, 'ob'))];
    for (let i = 0; i < 30; i++) {
      const ids = [`c${i}a`, `c${i}b`, `c${i}c`];
      messages.push(assistant(`step ${i}`, ids), ...ids.map((id) => tool(id, output(9000, id))));
    }
    const input = keyed([...task('before', 1, 100), ...messages, ...task('after', 1, 100)]);
    const warnings = new WarningCollector();
    const plan = planRequests(CID, input, { warnings });
    checkPlan(input, plan);
    expect(warnings.size).toBe(0);
    expect(plan.length).toBeGreaterThan(2);
    // The split task starts a fresh request; the task after it may join the last piece.
    expect(plan[0]!.keys).toEqual(['k0', 'k1', 'k2']);
    expect(plan.at(-1)!.keys.slice(-3)).toEqual(input.slice(-3).map((m) => m.key));
    for (const content of toolContents(plan).slice(1, -1)) expect(utf8(content)).toBeLessThanOrEqual(2048);
    for (const r of plan) {
      // Each request begins with a step start and holds every result of each assistant it holds.
      expect(r.messages[0]!.role).not.toBe('tool');
      const ids = new Set(r.messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []).map((c) => c.id) : [])));
      const results = r.messages.flatMap((m) => (m.role === 'tool' && !m.toolCallId.startsWith('orphan') ? [m.toolCallId] : []));
      expect(new Set(results)).toEqual(ids);
    }
    const orphanRequest = plan.find((r) => r.messages.some((m) => m.role === 'tool' && m.toolCallId === 'orphan_a'))!;
    expect(orphanRequest.messages.some((m) => m.role === 'tool' && m.toolCallId === 'orphan_b')).toBe(true);
  });

  it('streams a huge task out step by step instead of holding it until the next user message', () => {
    const batcher = new TaskBatcher({ conversationId: CID, warnings: new WarningCollector() });
    const input = keyed(task('s', 200, 50_000));
    const early: PlannedRequest[] = [];
    for (const m of input) early.push(...batcher.push(m));
    const rest = batcher.end();
    expect(early.length).toBeGreaterThan(3);
    checkPlan(input, [...early, ...rest]);
  });

  it('sends a single step over the limit alone, with oversized_unit, and keeps its neighbours apart', () => {
    const huge = assistant('z'.repeat(100_000), ['call_h']);
    const input = keyed([
      user('go'),
      assistant('before', ['call_b']),
      tool('call_b', 'small'),
      huge,
      tool('call_h', output(30_000, 'h')),
      assistant('after', []),
    ]);
    const warnings = new WarningCollector();
    const plan = planRequests(CID, input, { warnings });
    checkPlan(input, plan, true);
    expect(plan.map((r) => r.keys)).toEqual([['k0', 'k1', 'k2'], ['k3', 'k4'], ['k5']]);
    expect(plan[1]!.bytes).toBeGreaterThan(LIMIT);
    expect(utf8(toolContents(plan)[1]!)).toBeLessThanOrEqual(2048);
    expect(warnings.entries()).toEqual([{ code: 'oversized_unit', count: 1, samples: [] }]);
  });

  it('emits a request from push once the following task cannot join it', () => {
    const batcher = new TaskBatcher({ conversationId: CID, warnings: new WarningCollector() });
    const a = keyed(task('a', 1, 40_000), 'a');
    const b = keyed(task('b', 1, 40_000), 'b');
    const c = keyed(task('c', 1, 100), 'c');
    for (const m of [...a, ...b]) expect(batcher.push(m)).toEqual([]);
    // c's user message ends task b, which does not fit beside a: a's request is complete.
    expect(batcher.push(c[0]!).map((r) => r.keys)).toEqual([a.map((m) => m.key)]);
    expect(batcher.push(c[1]!)).toEqual([]);
    expect(batcher.push(c[2]!)).toEqual([]);
    expect(batcher.end().map((r) => r.keys)).toEqual([[...b, ...c].map((m) => m.key)]);
    expect(batcher.end()).toEqual([]);
  });
});
