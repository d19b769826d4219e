import { redactText } from './redact.js';
import { hidePrivateSpans } from './private-spans.js';

/**
 * A session's title as everme keeps and shows it. MiniMax Code makes the title of a session from its
 * first prompt, so a title holds whatever that prompt held: `<private>` spans and credentials. It
 * passes the gate a message's text passes, in the same order (spans first, so a secret inside a span
 * becomes `[PRIVATE]`, not a redaction that names its kind), wherever a title comes in: the session
 * index, an export file's conversation, and titles an earlier release stored.
 */
export function maskedTitle(title: string): string {
  return redactText(hidePrivateSpans(title));
}
