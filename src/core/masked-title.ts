import { redactText } from './redact.js';
import { hidePrivateSpans } from './private-spans.js';
import { stripControls } from './terminal-controls.js';

/**
 * A session's title as everme keeps and shows it. MiniMax Code makes the title of a session from its
 * first prompt, so a title holds whatever that prompt held: `<private>` spans and credentials. It
 * passes the gate a message's text passes, in the same order (spans first, so a secret inside a span
 * becomes `[PRIVATE]`, not a redaction that names its kind), wherever a title comes in: the session
 * index, an export file's conversation, and titles an earlier release stored. Terminal controls go
 * first: an escape inside a tag (`<priv\x1b[0mate>`) must not hide the span from the scan, and a
 * title printed by search, report or status must not colour, move or retitle the user's terminal.
 */
export function maskedTitle(title: string): string {
  return redactText(hidePrivateSpans(stripControls(title)));
}
