import { redactOutput } from '../core/redact-output.js';
import { RECALL_FRAME_RESERVE } from './model-output.js';
import type { GatewayContext, LocalContext, RecallContext } from './recall.js';
import type { ConversationSummary } from '../store/local-store.js';
import { DATA_PREFACE, EMPTY_STORE_TEXT, formatHit, formatWhen, quoteQuery, shownTitle } from './recall-markdown.js';
import { withThousands } from '../core/thousands.js';

/** What `mem_context` may return: an index a host can put in front of the model without crowding it. */
export const MAX_CONTEXT_CHARS = 10_000;

export interface IndexSection {
  title: string;
  /** A line under the title (why these entries, or why there are none). */
  note?: string;
  entries: string[];
  /** Said when the section has no entries at all. */
  emptyText?: string;
  /** Noun for the "N more … not shown" line. */
  noun: string;
}

function renderSection(section: IndexSection, shown: number, maxChars: number): string {
  const lines = [`## ${section.title}`];
  if (section.note) lines.push(section.note);
  if (section.entries.length === 0) {
    if (section.emptyText) lines.push(section.emptyText);
  } else {
    lines.push(...section.entries.slice(0, shown));
    const hidden = section.entries.length - shown;
    if (hidden > 0) lines.push(`_${hidden} more ${section.noun} not shown (index trimmed to ${withThousands(maxChars)} characters)._`);
  }
  return lines.join('\n');
}

function render(preface: string, sections: IndexSection[], shown: number[], maxChars: number): string {
  return [preface, ...sections.map((s, i) => renderSection(s, shown[i]!, maxChars))].join('\n\n');
}

interface FittedIndex {
  text: string;
  /** Entries shown, per section. */
  shown: number[];
}

/**
 * Joins sections into one document of at most `maxChars`, keeping entries in order and whole: an
 * entry that does not fit ends its section, and the section says how many were left out. Every
 * accepted step is measured on the full rendering as `toModel` will send it, masked (a mask can be
 * longer than what it hides: `Bearer 12345678`), so the result is within budget by construction;
 * neutralising only swaps or removes characters. Undefined when not even the empty frame fits.
 */
function fitIndex(preface: string, sections: IndexSection[], maxChars: number): FittedIndex | undefined {
  const shown = sections.map(() => 0);
  const fits = (text: string): boolean => text.length <= maxChars && redactOutput(text).length <= maxChars;
  let best = render(preface, sections, shown, maxChars);
  if (!fits(best)) return undefined;
  for (let s = 0; s < sections.length; s++) {
    while (shown[s]! < sections[s]!.entries.length) {
      shown[s]!++;
      const candidate = render(preface, sections, shown, maxChars);
      if (!fits(candidate)) {
        shown[s]!--;
        break;
      }
      best = candidate;
    }
  }
  return { text: best, shown };
}

export function assembleIndex(preface: string, sections: IndexSection[], maxChars = MAX_CONTEXT_CHARS): string {
  // Titles are bounded (see `shownPath`), so only a caller's misuse lands on the bare preface.
  // The recall block's last line, added on the way out, fits the budget too.
  return fitIndex(preface, sections, maxChars - RECALL_FRAME_RESERVE)?.text ?? preface;
}

const PATH_SHOWN_CHARS = 300;

/** A project path in a title or note: bounded, so the fixed parts of an index always fit its budget. */
function shownPath(dir: string): string {
  const chars = Array.from(dir);
  return chars.length > PATH_SHOWN_CHARS ? `…${chars.slice(-PATH_SHOWN_CHARS).join('')}` : dir;
}

function conversationEntry(c: ConversationSummary): string {
  const title = shownTitle(c.title);
  const head = [
    `**${formatWhen(c.updatedAtMs ?? c.createdAtMs)}**`,
    `\`${c.conversationId}\``,
    ...(title ? [title] : []),
    ...(c.parentSessionId ? [`${c.kind ?? 'branch'} of ${c.parentSessionId}`] : []),
    c.messageCount === 1 ? '1 message' : `${c.messageCount} messages`,
    ...(c.firstMessageId !== undefined && c.lastMessageId !== undefined ? [`ids m${c.firstMessageId}–m${c.lastMessageId}`] : []),
    ...(c.workspaceDir ? [c.workspaceDir] : []),
  ].join(' · ');
  const lines = [`- ${head}`];
  if (c.firstUserText) lines.push(`  - user: ${c.firstUserText}`);
  if (c.lastAssistantText) lines.push(`  - assistant: ${c.lastAssistantText}`);
  return lines.join('\n');
}

function hitsSection(query: string, ctx: { hits?: LocalContext['hits']; note?: string }): IndexSection | undefined {
  if (ctx.hits === undefined) return undefined;
  return {
    title: `Top matches for ${quoteQuery(query)}`,
    ...(ctx.note ? { note: ctx.note } : {}),
    entries: ctx.hits.map((hit, i) => formatHit(hit, i + 1)),
    emptyText: 'No memories match the query.',
    noun: 'matches',
  };
}

function localIndex(ctx: LocalContext, query: string | undefined): string {
  if (ctx.storeEmpty) return `${DATA_PREFACE}\n\n${EMPTY_STORE_TEXT}`;
  const sections: IndexSection[] = [];
  if (query !== undefined) {
    const note = ctx.project !== undefined && ctx.hitsScope === 'all' ? `None in ${shownPath(ctx.project)}; matches from all projects:` : undefined;
    const section = hitsSection(query, { hits: ctx.hits, note });
    if (section) sections.push(section);
  }
  const project = ctx.project === undefined ? undefined : shownPath(ctx.project);
  let title = 'Recent conversations';
  let note: string | undefined;
  if (project !== undefined && ctx.scope === 'project') title = `Recent conversations in ${project}`;
  else if (project !== undefined) note = `No conversations recorded for ${project}. Recent conversations from all projects:`;
  sections.push({
    title,
    ...(note ? { note } : {}),
    entries: ctx.conversations.map(conversationEntry),
    emptyText: 'No conversations recorded yet.',
    noun: 'conversations',
  });
  return assembleIndex(DATA_PREFACE, sections);
}

function gatewaySections(ctx: GatewayContext, query: string | undefined): IndexSection[] {
  const sections: IndexSection[] = [];
  if (query !== undefined) {
    const section = hitsSection(query, { hits: ctx.hits });
    if (section) sections.push(section);
  }
  const bullets = (items: string[]): string[] => items.map((item) => `- ${item}`);
  if (ctx.explicitInfo.length > 0) sections.push({ title: 'Profile', entries: bullets(ctx.explicitInfo), noun: 'profile entries' });
  if (ctx.implicitTraits.length > 0) sections.push({ title: 'Traits', entries: bullets(ctx.implicitTraits), noun: 'traits' });
  if (ctx.context !== undefined) {
    // Lines are the entries, so a long context loses whole lines from its end, never half a line.
    const lines = ctx.context.split(/\r?\n/u).filter((line) => line.trim() !== '');
    sections.push({ title: 'Context', entries: lines, noun: 'lines' });
  }
  return sections;
}

function gatewayIndex(ctx: GatewayContext, query: string | undefined): string {
  const sections = gatewaySections(ctx, query);
  if (sections.length === 0) return `${DATA_PREFACE}\n\nThe EverMe gateway holds no context for this account yet.`;
  return assembleIndex(DATA_PREFACE, sections);
}

/**
 * The `mem_context` answer, before `toModel` (model-output.ts) masks, neutralises and frames it on
 * the way out; `fitIndex` measures it masked, so the index stays within its budget.
 */
export function renderContextIndex(ctx: RecallContext, query?: string): string {
  return ctx.kind === 'local' ? localIndex(ctx, query) : gatewayIndex(ctx, query);
}

/** A project's recent conversations from the local store, for the SessionStart block. */
export interface LocalStart {
  kind: 'local';
  project: string;
  conversations: ConversationSummary[];
}

/**
 * The SessionStart block: what a new session in `project` should know, within `maxChars` once
 * `toModel` has framed it. Unlike
 * `mem_context` it never falls back to other projects and never explains an absence: with nothing
 * to say (no conversations, or not one entry fits the budget) it is undefined and the hook prints
 * nothing.
 */
export function renderSessionStartContext(
  ctx: LocalStart | GatewayContext,
  maxChars: number,
  /** Gateway mode: the local store's conversations of the project, listed first. */
  local?: LocalStart,
): string | undefined {
  const projectSection = (start: LocalStart): IndexSection => ({
    title: `Recent conversations in ${shownPath(start.project)}`,
    entries: start.conversations.map(conversationEntry),
    noun: 'conversations',
  });
  const sections =
    ctx.kind === 'local' ? [projectSection(ctx)] : [...(local && local.conversations.length > 0 ? [projectSection(local)] : []), ...gatewaySections(ctx, undefined)];
  if (!sections.some((section) => section.entries.length > 0)) return undefined;
  const fitted = fitIndex(DATA_PREFACE, sections, maxChars - RECALL_FRAME_RESERVE);
  if (!fitted || fitted.shown.every((n) => n === 0)) return undefined;
  return fitted.text;
}
