/**
 * Text cleanup applied before anything is remembered. Terminal colouring, Windows line endings and
 * invisible trailing blanks carry no meaning for memory and would only make equal text look different.
 *
 * Everything here is linear in the input: transcripts hold tool output of many MB, and a hostile
 * string must not stall a sync.
 */
import { stripAnsi } from '../core/terminal-controls.js';

const SPACE = 0x20;
const TAB = 0x09;
const NEWLINE = 0x0a;

/** ESC-introduced sequences, as titles lose them too (core/terminal-controls.ts). */
export { stripAnsi };

/*
 * Line fixes go through split/join rather than `replace(/\r\n?/g)` or `/[ \t]+$/gm`: a regex replace
 * pays per match (seconds for a MB of bare CRs from progress bars), and the `$` pattern backtracks
 * over long blank runs.
 */

export function normalizeNewlines(s: string): string {
  if (!s.includes('\r')) return s;
  const crlf = s.includes('\r\n') ? s.split('\r\n').join('\n') : s;
  return crlf.includes('\r') ? crlf.split('\r').join('\n') : crlf;
}

function isSpaceOrTab(code: number): boolean {
  return code === SPACE || code === TAB;
}

/** Removes spaces and tabs at the end of every line. */
export function stripTrailingBlanks(s: string): string {
  if (!s.includes(' \n') && !s.includes('\t\n') && !isSpaceOrTab(s.charCodeAt(s.length - 1))) return s;
  const lines = s.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    let end = line.length;
    while (end > 0 && isSpaceOrTab(line.charCodeAt(end - 1))) end--;
    if (end !== line.length) lines[i] = line.slice(0, end);
  }
  return lines.join('\n');
}

/** ANSI escape sequences removed, CRLF/CR turned into LF, trailing spaces/tabs of each line removed. */
export function cleanText(s: string): string {
  return stripTrailingBlanks(normalizeNewlines(stripAnsi(s)));
}

/**
 * Removes every `open…close` block. An opening tag without a closing one is left as it is: removing
 * to the end would silently eat whatever the user wrote after it. Linear: each search starts where
 * the last one ended.
 */
function stripTaggedBlocks(s: string, openTag: string, closeTag: string): string {
  let open = s.indexOf(openTag);
  if (open === -1) return s;
  const parts: string[] = [];
  let from = 0;
  while (open !== -1) {
    const close = s.indexOf(closeTag, open + openTag.length);
    // No closing tag after this opening one means none after any later one either.
    if (close === -1) break;
    parts.push(s.slice(from, open));
    from = close + closeTag.length;
    open = s.indexOf(openTag, from);
  }
  parts.push(s.slice(from));
  return parts.join('');
}

/** Removes every `<system-reminder>…</system-reminder>` block: the runtime's own injected context, not something the user said. */
export function stripSystemReminders(s: string): string {
  return stripTaggedBlocks(s, '<system-reminder>', '</system-reminder>');
}

function isBlank(code: number): boolean {
  return code === SPACE || code === TAB || code === NEWLINE || code === 0x0d || code === 0x0b || code === 0x0c;
}

/**
 * Drops blank lines at the start and whitespace at the end, keeping the first real line's own
 * indentation (it may be code). Removed reminders and model padding leave such edges behind.
 */
export function trimBlankEdges(s: string): string {
  let first = 0;
  while (first < s.length && isBlank(s.charCodeAt(first))) first++;
  if (first === s.length) return '';
  const lineStart = s.lastIndexOf('\n', first - 1) + 1;
  let end = s.length;
  while (end > first && isBlank(s.charCodeAt(end - 1))) end--;
  return s.slice(lineStart, end);
}
