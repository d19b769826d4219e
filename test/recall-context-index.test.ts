import { describe, expect, it } from 'vitest';
import type { GatewayContext, LocalContext } from '../src/recall/recall.js';
import { assembleIndex, MAX_CONTEXT_CHARS, renderContextIndex, renderSessionStartContext, type IndexSection } from '../src/recall/context-index.js';
import { DATA_PREFACE, EMPTY_STORE_TEXT } from '../src/recall/recall-markdown.js';
import { RECALL_FRAME_RESERVE, toModel } from '../src/recall/model-output.js';

function entries(prefix: string, count: number, size: number): string[] {
  return Array.from({ length: count }, (_, i) => {
    const head = `- ${prefix}${i}:`;
    return `${head}${'x'.repeat(size - head.length - 1)}!`;
  });
}

describe('assembleIndex', () => {
  it('keeps entries whole and in order, within the budget, and says how many it left out', () => {
    const section: IndexSection = { title: 'Things', entries: entries('e', 50, 333), noun: 'things' };
    const text = assembleIndex('preface', [section], 5_000);
    expect(text.length).toBeLessThanOrEqual(5_000);
    const shown = section.entries.filter((e) => text.includes(e));
    expect(shown.length).toBeGreaterThan(5);
    // A prefix of the list, every one complete (ends with its "!" marker).
    expect(shown).toEqual(section.entries.slice(0, shown.length));
    expect(text).toContain(`_${50 - shown.length} more things not shown`);
    // Not one character of a left-out entry.
    expect(text).not.toContain(`- e${shown.length}:`);
  });

  it('stays within the budget as the model gets it, masked: a mask longer than what it hides counts', () => {
    // `Bearer 12345678` (15 characters) goes out as `Bearer [REDACTED]` (17).
    const section: IndexSection = { title: 'Things', entries: Array.from({ length: 40 }, (_, i) => `- e${i}: ${'Bearer 12345678 '.repeat(20)}`), noun: 'things' };
    const text = assembleIndex(DATA_PREFACE, [section], 5_000);
    expect(text).toContain('- e1:');
    expect(toModel(text).length).toBeLessThanOrEqual(5_000);
  });

  it('uses the whole budget: one more entry would not have fitted', () => {
    const section: IndexSection = { title: 'Things', entries: entries('e', 50, 333), noun: 'things' };
    const text = assembleIndex('preface', [section], 5_000);
    const shown = section.entries.filter((e) => text.includes(e)).length;
    expect(text.length + 334).toBeGreaterThan(5_000);
    expect(shown).toBeLessThan(50);
  });

  it('gives later sections the room an oversized entry could not use', () => {
    const first: IndexSection = { title: 'Big', entries: ['- '.concat('b'.repeat(20_000))], noun: 'big ones' };
    const second: IndexSection = { title: 'Small', entries: ['- s1', '- s2'], noun: 'small ones' };
    const text = assembleIndex('preface', [first, second], 1_000);
    expect(text).not.toContain('bbbb');
    expect(text).toContain('_1 more big ones not shown');
    expect(text).toContain('- s1\n- s2');
  });

  it('shows everything, without a trimming note, when it fits', () => {
    const section: IndexSection = { title: 'Things', entries: ['- a', '- b'], noun: 'things' };
    expect(assembleIndex('preface', [section])).toBe('preface\n\n## Things\n- a\n- b');
  });

  it('says a section is empty in its own words', () => {
    const section: IndexSection = { title: 'Things', entries: [], emptyText: 'Nothing yet.', noun: 'things' };
    expect(assembleIndex('preface', [section])).toBe('preface\n\n## Things\nNothing yet.');
  });
});

describe('renderContextIndex', () => {
  it('tells an empty store to import first', () => {
    const ctx: LocalContext = { kind: 'local', project: '/p', scope: 'all', conversations: [], storeEmpty: true };
    expect(renderContextIndex(ctx)).toBe(`${DATA_PREFACE}\n\n${EMPTY_STORE_TEXT}`);
  });

  it('bounds a huge project path so the index still fits', () => {
    const project = `/${'deep/'.repeat(3_000)}`;
    const ctx: LocalContext = {
      kind: 'local',
      project,
      scope: 'all',
      conversations: [{ conversationId: 'minimaxcode-mvs_1', sessionId: 'mvs_1', source: 'messages', messageCount: 2, firstUserText: 'hello' }],
      storeEmpty: false,
    };
    const text = renderContextIndex(ctx, 'q');
    expect(text.length).toBeLessThanOrEqual(MAX_CONTEXT_CHARS);
    expect(text).toContain('minimaxcode-mvs_1');
    expect(text).toContain('No conversations recorded for …');
  });

  it('renders the gateway profile and context, dropping whole lines of a long context', () => {
    const lines = Array.from({ length: 400 }, (_, i) => `context line ${i} ${'y'.repeat(40)}`);
    const ctx: GatewayContext = {
      kind: 'gateway',
      explicitInfo: ['Prefers TypeScript'],
      implicitTraits: ['Works late'],
      context: lines.join('\n'),
      hits: [{ id: null, source: 'gateway', conversationId: 'c1', sessionId: null, role: 'user', timestamp: null, snippet: 'the **pelican** plan', score: null }],
    };
    const text = renderContextIndex(ctx, 'pelican');
    expect(text.startsWith(DATA_PREFACE)).toBe(true);
    expect(text.length).toBeLessThanOrEqual(MAX_CONTEXT_CHARS);
    // Issue #26: a hit names where it comes from (and, for a local one, the id that opens it).
    expect(text).toContain('## Top matches for "pelican"\n1. gateway memory · user · unknown time · c1\n   the **pelican** plan');
    expect(text).toContain('## Profile\n- Prefers TypeScript');
    expect(text).toContain('## Traits\n- Works late');
    const shown = lines.filter((l) => text.includes(`${l}\n`) || text.endsWith(l));
    expect(shown).toEqual(lines.slice(0, shown.length));
    expect(text).toMatch(new RegExp(`_${400 - shown.length} more lines not shown`));
  });

  it('says when the gateway holds nothing yet', () => {
    const ctx: GatewayContext = { kind: 'gateway', explicitInfo: [], implicitTraits: [] };
    expect(renderContextIndex(ctx)).toContain('holds no context for this account yet');
  });
});

describe('renderSessionStartContext', () => {
  const conversations = Array.from({ length: 40 }, (_, i) => ({
    conversationId: `minimaxcode-mvs_${String(i).padStart(32, '0')}`,
    sessionId: `mvs_${String(i).padStart(32, '0')}`,
    source: 'messages',
    workspaceDir: '/home/u/proj',
    updatedAtMs: Date.UTC(2026, 10, 1) - i * 60_000,
    messageCount: 4,
    firstUserText: `question ${i} ${'q'.repeat(i * 7)}`,
    lastAssistantText: `decided ${i} ${'a'.repeat(i * 5)}`,
  }));

  it('stays within every budget, keeps whole entries, newest first, and labels itself as data', () => {
    // The least any rendering takes: the newest entry alone. A budget that holds it must render (a
    // bare `continue` on undefined here once let every check below be skipped).
    // The recall block's closing line, added on the way out, is held back from every budget.
    const smallest = renderSessionStartContext({ kind: 'local', project: '/home/u/proj', conversations: conversations.slice(0, 1) }, 100_000)!.length + RECALL_FRAME_RESERVE;
    // With more conversations than fit, the newest one comes with a line saying how many were left
    // out; a budget that holds both must render, one that cannot hold the entry alone must not.
    const trimmingNote = `\n_${conversations.length - 1} more conversations not shown (index trimmed to 9,999 characters)._`.length;
    let rendered = 0;
    for (let budget = 200; budget <= 6000; budget += 97) {
      const text = renderSessionStartContext({ kind: 'local', project: '/home/u/proj', conversations }, budget);
      if (budget < smallest) expect(text, `budget ${budget}`).toBeUndefined();
      if (budget >= smallest + trimmingNote) expect(text, `budget ${budget}`).toBeDefined();
      if (text === undefined) continue;
      rendered++;
      expect(text.length).toBeLessThanOrEqual(budget);
      expect(text.startsWith(DATA_PREFACE)).toBe(true);
      expect(text).toContain('- **2026-11-01 00:00 UTC**');
      expect(text).toContain('question 0');
    }
    expect(rendered).toBeGreaterThan(55);
    const roomy = renderSessionStartContext({ kind: 'local', project: '/home/u/proj', conversations: conversations.slice(0, 3) }, 4000)!;
    expect(roomy.indexOf('question 0')).toBeLessThan(roomy.indexOf('question 1'));
    expect(roomy).not.toContain('not shown');
  });

  it('is undefined with nothing to say: no conversations, or a budget too small for one entry', () => {
    expect(renderSessionStartContext({ kind: 'local', project: '/p', conversations: [] }, 4000)).toBeUndefined();
    expect(renderSessionStartContext({ kind: 'local', project: '/home/u/proj', conversations }, 150)).toBeUndefined();
    expect(renderSessionStartContext({ kind: 'gateway', explicitInfo: [], implicitTraits: [] }, 4000)).toBeUndefined();
    expect(renderSessionStartContext({ kind: 'gateway', explicitInfo: ['likes tabs'], implicitTraits: [] }, 4000)).toContain('- likes tabs');
  });

  it('names the ids of each conversation it lists, so the agent can open them', () => {
    const withIds = conversations.slice(0, 2).map((c, i) => ({ ...c, firstMessageId: 10 * i + 1, lastMessageId: 10 * i + 4 }));
    const text = renderSessionStartContext({ kind: 'local', project: '/home/u/proj', conversations: withIds }, 4000)!;
    expect(text).toContain('ids m1–m4');
    expect(text).toContain('ids m11–m14');
  });

  it("in gateway mode lists the local store's project conversations first, then the gateway context, within the budget", () => {
    const local = { kind: 'local' as const, project: '/home/u/proj', conversations: conversations.slice(0, 2).map((c) => ({ ...c, firstMessageId: 5, lastMessageId: 9 })) };
    const gateway: GatewayContext = { kind: 'gateway', explicitInfo: ['likes tabs'], implicitTraits: [] };
    const text = renderSessionStartContext(gateway, 4000, local)!;
    expect(text.indexOf('## Recent conversations in /home/u/proj')).toBeLessThan(text.indexOf('## Profile'));
    expect(text).toContain('ids m5–m9');
    expect(text).toContain('- likes tabs');
    expect(renderSessionStartContext(gateway, 4000, { ...local, conversations: [] })).not.toContain('Recent conversations');
    for (let budget = 200; budget <= 3000; budget += 111) expect((renderSessionStartContext(gateway, budget, local) ?? '').length).toBeLessThanOrEqual(budget);
  });
});
