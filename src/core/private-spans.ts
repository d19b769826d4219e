/**
 * `<private>…</private>`: text the user marked as never to be remembered. It becomes `[PRIVATE]`
 * before anything else (cleanup, redaction, the batcher, a sink, `show`) sees the message.
 *
 * - Tags are case-insensitive and may hold spaces or invisible format characters (`< PRIVATE >`,
 *   `</Private >`); a span may cross lines, text blocks and tool calls of the same message. The
 *   gate removes terminal control sequences first, so `grep --color` output cannot break a tag.
 * - Spans nest: a span runs to the close tag that matches its open tag, not to the first one.
 * - An opening tag without a closing one hides everything to the end of the message: a span the
 *   user forgot to close is still private (the opposite of `<system-reminder>`, where dropping to
 *   the end would lose what the user said).
 * - A stray closing tag is left as it is: it hides nothing and reveals nothing.
 * - Tool arguments are walked key and value in order, with the same scanner as the text around
 *   them, so they stay a valid JSON object: a string (or key) wholly inside a span becomes
 *   `[PRIVATE]`, and a span opened in a key hides what follows it like anywhere else.
 */
import { nextMatch, type MatchSpan } from './match-span.js';

export const PRIVATE_PLACEHOLDER = '[PRIVATE]';

/** Whitespace and the invisible characters a tag may be padded with. */
const PAD = '[\\s\\u200b-\\u200f\\u2060\\ufeff]*';
const OPEN = new RegExp(`<${PAD}private${PAD}>`, 'gi');
const CLOSE = new RegExp(`<${PAD}/${PAD}private${PAD}>`, 'gi');
/** One cheap test before any work: most text has no tag at all. */
const ANY_OPEN = new RegExp(`<${PAD}private${PAD}>`, 'i');

type Tag = MatchSpan;

/** The next match of `re` at or after `from`, or null (looked, none) as the scanner's caches need. */
function find(re: RegExp, s: string, from: number): Tag | null {
  return nextMatch(re, s, from) ?? null;
}

/**
 * One message's scanner: carries "inside a span" (and how deeply) from one piece of the message to
 * the next, in the order the pieces appear. Use a new one per message.
 */
export class PrivateSpans {
  private depth = 0;

  /** @param prepare applied to every piece before it is scanned (the gate strips terminal control sequences). */
  constructor(private readonly prepare: (s: string) => string = (s) => s) {}

  /** Inside a span at this point of the message. */
  get open(): boolean {
    return this.depth > 0;
  }

  /** The text with every span replaced by one `[PRIVATE]`; '' when it lies wholly inside one. */
  text(raw: string): string {
    if (this.depth === 0 && !raw.includes('<')) return raw;
    const s = this.prepare(raw);
    if (this.depth === 0 && !ANY_OPEN.test(s)) return s;
    let out = '';
    let i = 0;
    // The next tags at or after `i`, found once and kept until passed: each search starts where
    // the previous one of its kind ended, so the scan stays linear however deep the nesting.
    let nextOpen: Tag | null | undefined;
    let nextClose: Tag | null | undefined;
    const open = (): Tag | null => {
      if (nextOpen === undefined || (nextOpen !== null && nextOpen.at < i)) nextOpen = find(OPEN, s, i);
      return nextOpen;
    };
    const close = (): Tag | null => {
      if (nextClose === undefined || (nextClose !== null && nextClose.at < i)) nextClose = find(CLOSE, s, i);
      return nextClose;
    };
    for (;;) {
      if (this.depth === 0) {
        const o = open();
        if (!o) return out + s.slice(i);
        out += s.slice(i, o.at) + PRIVATE_PLACEHOLDER;
        this.depth = 1;
        i = o.end;
        continue;
      }
      const c = close();
      const o = open();
      if (o && (!c || o.at < c.at)) {
        this.depth++;
        i = o.end;
      } else if (c) {
        this.depth--;
        i = c.end;
      } else {
        return out;
      }
    }
  }

  /** A key or string value: wholly inside a span, it reads `[PRIVATE]` so the hiding stays visible. */
  private piece(v: string): string {
    const wasOpen = this.open;
    const hidden = this.text(v);
    return wasOpen && hidden === '' && v !== '' ? PRIVATE_PLACEHOLDER : hidden;
  }

  /**
   * A JSON value (tool arguments) with spans hidden in every key and string, structure kept, so
   * `JSON.stringify` of the result is still the same shape. Keys that a span turns into the same
   * text stay apart (`[PRIVATE]`, `[PRIVATE] (2)`); entries wholly inside a span fold into one.
   */
  json(v: unknown): unknown {
    if (typeof v === 'string') return this.piece(v);
    // A number or flag inside a span is as private as a string (a PIN, an account number).
    if ((typeof v === 'number' || typeof v === 'boolean') && this.open) return PRIVATE_PLACEHOLDER;
    if (Array.isArray(v)) return v.map((item) => this.json(item));
    if (typeof v === 'object' && v !== null) {
      const out: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(v)) {
        const name = this.piece(key);
        const hidden = this.json(value);
        if (name === PRIVATE_PLACEHOLDER && hidden === PRIVATE_PLACEHOLDER && out[PRIVATE_PLACEHOLDER] === PRIVATE_PLACEHOLDER) continue;
        let unique = name;
        for (let n = 2; Object.hasOwn(out, unique); n++) unique = `${name} (${n})`;
        // defineProperty: a `__proto__` key must stay a plain own key.
        Object.defineProperty(out, unique, { value: hidden, enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    return v;
  }
}

/** One piece of text on its own (a span cannot continue past it). */
export function hidePrivateSpans(s: string, prepare?: (s: string) => string): string {
  return new PrivateSpans(prepare).text(s);
}
