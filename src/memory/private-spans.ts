/**
 * `<private>…</private>`: text the user marked as never to be remembered. It becomes `[PRIVATE]`
 * before anything else (cleanup, redaction, the batcher, a sink, `show`) sees the message.
 *
 * - Tags are case-insensitive and may hold spaces (`< PRIVATE >`, `</Private >`); a span may cross
 *   lines, text blocks and tool calls of the same message.
 * - An opening tag without a closing one hides everything to the end of the message: a span the
 *   user forgot to close is still private (the opposite of `<system-reminder>`, where dropping to
 *   the end would lose what the user said).
 * - A stray closing tag is left as it is: it hides nothing and reveals nothing.
 * - Tool arguments are walked value by value, so they stay a valid JSON object; a string wholly
 *   inside a span becomes `[PRIVATE]`.
 */

export const PRIVATE_PLACEHOLDER = '[PRIVATE]';

const OPEN = /<\s*private\s*>/gi;
const CLOSE = /<\s*\/\s*private\s*>/gi;
/** One cheap test before any work: most text has no tag at all. */
const ANY_OPEN = /<\s*private\s*>/i;

function find(re: RegExp, s: string, from: number): { at: number; end: number } | undefined {
  re.lastIndex = from;
  const m = re.exec(s);
  return m ? { at: m.index, end: m.index + m[0].length } : undefined;
}

/**
 * One message's scanner: carries "inside a span" from one piece of the message to the next, in the
 * order the pieces appear. Use a new one per message.
 */
export class PrivateSpans {
  private open = false;

  /** The text with every span replaced by one `[PRIVATE]`; '' when it lies wholly inside one. */
  text(s: string): string {
    if (!this.open && !ANY_OPEN.test(s)) return s;
    let out = '';
    let i = 0;
    while (i <= s.length) {
      if (this.open) {
        const close = find(CLOSE, s, i);
        if (!close) return out;
        this.open = false;
        i = close.end;
        continue;
      }
      const open = find(OPEN, s, i);
      if (!open) return out + s.slice(i);
      out += s.slice(i, open.at) + PRIVATE_PLACEHOLDER;
      this.open = true;
      i = open.end;
    }
    return out;
  }

  /**
   * A JSON value (tool arguments) with spans hidden in every string, keys and structure kept, so
   * `JSON.stringify` of the result is still the same shape. A string wholly inside a span (opened
   * earlier in the message) reads `[PRIVATE]`, so the hiding stays visible.
   */
  json(v: unknown): unknown {
    if (typeof v === 'string') {
      const wasOpen = this.open;
      const hidden = this.text(v);
      return wasOpen && hidden === '' && v !== '' ? PRIVATE_PLACEHOLDER : hidden;
    }
    if (Array.isArray(v)) return v.map((item) => this.json(item));
    if (typeof v === 'object' && v !== null) {
      const out: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(v)) out[hidePrivateSpans(key)] = this.json(value);
      return out;
    }
    return v;
  }
}

/** One piece of text on its own (a span cannot continue past it). */
export function hidePrivateSpans(s: string): string {
  return new PrivateSpans().text(s);
}
