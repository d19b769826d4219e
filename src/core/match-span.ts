/** Where one match of a pattern lies in a text. */
export interface MatchSpan {
  at: number;
  end: number;
}

/**
 * The next match of a global pattern at or after `from`, or undefined when there is none. The
 * scanners keep one pattern each and look ahead from where they are, so `lastIndex` is set here.
 */
export function nextMatch(re: RegExp, s: string, from: number): MatchSpan | undefined {
  re.lastIndex = from;
  const m = re.exec(s);
  return m ? { at: m.index, end: m.index + m[0].length } : undefined;
}
