import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';
import { EvermeError } from '../core/errors.js';
import { withThousands } from '../core/thousands.js';
import { MARK_CLOSE, MARK_OPEN } from '../store/fts-text.js';

/** Markup whose every interpolated value was escaped (or is markup built the same way). */
export type Html = HtmlEscapedString;

/**
 * Hono's `html` tag, synchronous: every value interpolated into it is HTML-escaped unless it is
 * itself `Html`. The viewer never interpolates a promise, so the result is always a string.
 */
export function h(strings: TemplateStringsArray, ...values: unknown[]): Html {
  const out = html(strings, ...values);
  if (out instanceof Promise) throw new EvermeError('internal', 'viewer markup must be synchronous');
  return out;
}

export const EMPTY: Html = raw('');

/**
 * Text as stored, with what everme put in its place made visible: masked credentials
 * (`[REDACTED:rule]`) and private spans (`[PRIVATE]`) are marked, so a reader tells them from text.
 */
const PLACEHOLDER = /\[REDACTED:[\w.-]+\]|\[PRIVATE\]/g;

export function storedText(text: string): Html {
  const parts: Html[] = [];
  let at = 0;
  for (const m of text.matchAll(PLACEHOLDER)) {
    parts.push(h`${text.slice(at, m.index)}`);
    const kind = m[0] === '[PRIVATE]' ? 'private' : 'redacted';
    parts.push(h`<span class="placeholder ${kind}" title="${kind === 'private' ? 'a <private> span: never stored' : 'a masked credential'}">${m[0]}</span>`);
    at = m.index + m[0].length;
  }
  parts.push(h`${text.slice(at)}`);
  return h`${parts}`;
}

/**
 * A search snippet, its matches between `MARK_OPEN` and `MARK_CLOSE` (characters no stored text
 * holds): each marked run becomes `<mark>`, everything else stays escaped text, a `**` included.
 */
export function snippetMarks(snippet: string): Html {
  const parts: Html[] = [];
  let at = 0;
  for (let open = snippet.indexOf(MARK_OPEN, at); open >= 0; open = snippet.indexOf(MARK_OPEN, at)) {
    const close = snippet.indexOf(MARK_CLOSE, open + 1);
    if (close < 0) break;
    parts.push(storedText(snippet.slice(at, open)), h`<mark>${storedText(snippet.slice(open + 1, close))}</mark>`);
    at = close + 1;
  }
  parts.push(storedText(snippet.slice(at).replaceAll(MARK_OPEN, '').replaceAll(MARK_CLOSE, '')));
  return h`${parts}`;
}

/**
 * Stored text shown inline (a workspace path, a title, an id): in `<bdi>`, so a bidi control in it
 * (U+202E) cannot reorder what follows it on the line, such as a hit's id and score.
 */
export function isolated(text: string): Html {
  return h`<bdi>${text}</bdi>`;
}

/** `2026-09-14 03:05 UTC`. */
export function when(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return 'unknown time';
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

export function day(ms: number | undefined): string {
  return ms === undefined ? '-' : new Date(ms).toISOString().slice(0, 10);
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${withThousands(n)} ${n === 1 ? one : many}`;
}
