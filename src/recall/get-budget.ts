import type { StoredMessage } from '../store/local-store.js';
import { formatOpened, GET_PAGE_CHARS, openedMessage, type OpenedMessage } from './open-messages.js';
import { messageIdOf } from './recall.js';
import { withThousands } from '../core/thousands.js';

/**
 * Characters one `mem_get` answer may hand the model, in its text and in its structured content
 * alike: two pages. One page of a message and one page of its one long tool call (a Write) still
 * come together as before, while ten ids, each with many long tool calls, no longer add up to
 * hundreds of thousands of characters. About 6,000 tokens: more than `mem_context`'s unasked-for
 * 10,000-character index, since the agent asked for these messages by id, yet far from a context's size.
 */
export const GET_ANSWER_CHARS = 2 * GET_PAGE_CHARS;

export interface BoundedOpened {
  messages: OpenedMessage[];
  /** Ids (in the order asked) the answer had no room for: never dropped silently, named for another call. */
  notShown: string[];
}

/** What a message costs the answer: its text, or its JSON (escaping may make that the longer). */
function cost(m: OpenedMessage): number {
  return Math.max(formatOpened(m).length, JSON.stringify(m).length);
}

/**
 * The first message alone is over the budget (many long tool calls): a narrower page of its content
 * and of every call, all from the same offset, so its nextOffset still skips no character of any.
 */
function narrowed(m: StoredMessage, offset: number, budget: number): OpenedMessage {
  let low = 1;
  let high = GET_PAGE_CHARS;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (cost(openedMessage(m, offset, mid)) <= budget) low = mid;
    else high = mid - 1;
  }
  return openedMessage(m, offset, low);
}

/**
 * The messages asked for, from `offset`, within `budget` characters: whole pages of whole messages
 * in order while they fit, the rest named in `notShown`; the first message always shows, narrowed
 * when it alone would not fit.
 */
export function openWithinBudget(stored: readonly StoredMessage[], offset: number, budget = GET_ANSWER_CHARS): BoundedOpened {
  const messages: OpenedMessage[] = [];
  const notShown: string[] = [];
  let left = budget;
  for (const m of stored) {
    if (notShown.length > 0) {
      notShown.push(messageIdOf(m.messageId));
      continue;
    }
    const opened = openedMessage(m, offset);
    const size = cost(opened);
    if (size <= left) {
      messages.push(opened);
      left -= size;
    } else if (messages.length === 0) {
      messages.push(narrowed(m, offset, budget));
      left = 0;
    } else {
      notShown.push(messageIdOf(m.messageId));
    }
  }
  return { messages, notShown };
}

/** The text's note on the ids left out, and how to open them. */
export function notShownNote(notShown: readonly string[], offset: number): string {
  const ids = notShown.map((id) => JSON.stringify(id)).join(', ');
  return `_Not shown, to keep this answer within ${withThousands(GET_ANSWER_CHARS)} characters: ${notShown.join(', ')}. Open them with mem_get {ids: [${ids}]${offset > 0 ? `, offset: ${offset}` : ''}}._`;
}
