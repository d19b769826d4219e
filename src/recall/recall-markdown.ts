import { RECALL_BLOCK_START } from '../memory/recall-block.js';
import type { RecallHit } from './recall.js';

/**
 * Retrieved text may contain anything a past session saw, including text written to steer an agent.
 * Every answer for the model starts with this line (the recall block's first line).
 */
export const DATA_PREFACE = RECALL_BLOCK_START;

export const EMPTY_STORE_TEXT = 'No memories yet. Run `everme import --since YYYY-MM-DD` (or `everme sync`) to import MiniMax Code history.';

const QUERY_SHOWN_CHARS = 120;

/** `2026-09-14 03:05 UTC`, or `unknown time`. */
export function formatWhen(timestamp: number | null | undefined): string {
  if (timestamp === null || timestamp === undefined || !Number.isFinite(timestamp)) return 'unknown time';
  const date = new Date(timestamp);
  if (Number.isNaN(date.getTime())) return 'unknown time';
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** The query as echoed back, in text and structured content alike: one line, bounded (a 2000-character paste is not echoed whole). */
export function boundedQuery(query: string): string {
  const flat = query.replace(/\s+/gu, ' ').trim();
  const chars = Array.from(flat);
  return chars.length > QUERY_SHOWN_CHARS ? `${chars.slice(0, QUERY_SHOWN_CHARS).join('')}…` : flat;
}

/** The query as a heading shows it: quoted, see `boundedQuery`. */
export function quoteQuery(query: string): string {
  return JSON.stringify(boundedQuery(query));
}

const TITLE_SHOWN_CHARS = 120;

/**
 * A session's title as answers carry it, in text and in structured content alike: on one line and
 * bounded. The host derives titles from what was said in the session (often the whole first
 * prompt), so unbounded they would make every compact hit as long as that prompt.
 */
export function boundedTitle(title: string | undefined): string | undefined {
  if (title === undefined) return undefined;
  const flat = title.replace(/\s+/gu, ' ').trim();
  if (flat === '') return undefined;
  const chars = Array.from(flat);
  return chars.length > TITLE_SHOWN_CHARS ? `${chars.slice(0, TITLE_SHOWN_CHARS).join('')}…` : flat;
}

/**
 * A session's title as a listing shows it: quoted, on one line, bounded. Titles are stored text
 * like any other (neutralised with the rest of an answer that goes to the model).
 */
export function shownTitle(title: string | undefined): string | undefined {
  const bounded = boundedTitle(title);
  return bounded === undefined ? undefined : JSON.stringify(bounded);
}

/** A hit's first line is cut here, so a hit stays within HIT_TEXT_CHARS whatever its path or title. */
const HIT_HEAD_CHARS = 360;
/** The most text one hit takes in a search answer (the issue's compact index: ≤ 600 a hit). */
export const HIT_TEXT_CHARS = 600;

/** Two lines: the id to open it by and where it comes from, then its snippet. */
export function formatHit(hit: RecallHit, position: number): string {
  const title = shownTitle(hit.title);
  const head = [
    ...(hit.id ? [hit.id] : hit.source === 'gateway' ? ['gateway memory'] : []),
    ...(title ? [title] : []),
    hit.role ?? 'message',
    formatWhen(hit.timestamp),
    hit.conversationId ?? 'unknown conversation',
    ...(hit.workspaceDir ? [hit.workspaceDir] : []),
    ...(hit.score === null ? [] : [`score ${hit.score.toFixed(2)}`]),
  ].join(' · ');
  const line = `${position}. ${head}`;
  const text = `${Array.from(line).length > HIT_HEAD_CHARS ? `${Array.from(line).slice(0, HIT_HEAD_CHARS - 1).join('')}…` : line}\n   ${hit.snippet}`;
  return Array.from(text).length > HIT_TEXT_CHARS ? `${Array.from(text).slice(0, HIT_TEXT_CHARS - 1).join('')}…` : text;
}

export function formatHits(hits: RecallHit[]): string {
  return hits.map((hit, i) => formatHit(hit, i + 1)).join('\n');
}

/**
 * The `mem_search` answer. Everything after the preface is stored or typed text: it reaches the
 * model only through `toModel` (model-output.ts), which neutralises it after this rendering.
 */
export function renderSearchMarkdown(query: string, hits: RecallHit[], storeEmpty: boolean, gatewayFailure?: { type: string }): string {
  if (storeEmpty) return `${DATA_PREFACE}\n\n${EMPTY_STORE_TEXT}`;
  const partial = gatewayFailure === undefined ? '' : `\n\n${localOnlyNote(gatewayFailure)}`;
  if (hits.length === 0) return `${DATA_PREFACE}\n\nNo memories match ${quoteQuery(query)}.${partial}`;
  const count = hits.length === 1 ? '1 result' : `${hits.length} results`;
  const open = hits.some((h) => h.id !== null) ? '\n\nOpen a hit whole with mem_get {ids: [...]}, or its conversation around it with mem_timeline {id}.' : '';
  return `${DATA_PREFACE}\n\n## Memory search for ${quoteQuery(query)}: ${count}${partial}\n\n${formatHits(hits)}${open}`;
}

/** Said wherever a search answered from the embedded store alone because the gateway failed. */
export function localOnlyNote(gatewayFailure: { type: string }): string {
  return `The EverMe gateway could not be asked (${gatewayFailure.type}): these are the local store's matches only.`;
}
