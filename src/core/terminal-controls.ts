/**
 * Terminal control codes: what colours, moves or retitles a terminal. Text that is shown to the user
 * or scanned for `<private>` tags loses them first, so they can neither repaint the terminal nor
 * split a tag. Linear in the input: no alternative can backtrack across it.
 */

/**
 * ESC-introduced sequences: CSI (`ESC [ … final`), OSC (`ESC ] … BEL` or `ESC ] … ESC \`),
 * character-set selection (`ESC ( B`), two-byte escapes (`ESC 7`, `ESC M`), and a lone ESC last.
 * Every alternative starts at an ESC and stops at the next ESC or earlier, so it cannot backtrack
 * across the input.
 */
const ANSI = /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()#][0-9A-Za-z]|[0-~]|)/g;

/** The same introduced by a C1 code: CSI (U+009B … final) and OSC, DCS, SOS, PM, APC (… BEL or ST, U+009C). */
const C1_SEQUENCE = /\u009b[0-?]*[ -/]*[@-~]|[\u009d\u0090\u0098\u009e\u009f][^\x07\u009c\x1b]*(?:\x07|\u009c)?/g;

/** Any other C0 or C1 control, and DEL, except tab and line feed. */
const OTHER_CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;
const ANY_CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

/** ESC-introduced sequences removed (terminal colouring in tool output and pasted text). */
export function stripAnsi(s: string): string {
  return s.includes('\x1b') ? s.replace(ANSI, '') : s;
}

/**
 * Every terminal control removed: ESC and C1 sequences whole, then any other control but tab and
 * line feed (a carriage return becomes a line feed, so it cannot return to overwrite the line).
 */
export function stripControls(s: string): string {
  if (!ANY_CONTROL.test(s)) return s;
  return stripAnsi(s).replace(C1_SEQUENCE, '').split('\r\n').join('\n').split('\r').join('\n').replace(OTHER_CONTROL, '');
}
