/** Opening a stored message a page at a time (`everme get`, `mem_get`): pages never split a character. */
import { describe, expect, it } from 'vitest';
import { GET_PAGE_CHARS, openedMessage } from '../src/recall/open-messages.js';
import type { StoredMessage } from '../src/store/local-store.js';

function stored(content: string): StoredMessage {
  return { messageId: 7, conversationId: 'minimaxcode-mvs_1', sessionId: 'mvs_1', role: 'assistant', timestamp: Date.UTC(2026, 8, 10), content };
}

describe('openedMessage', () => {
  it('starts a page one back from an offset inside an emoji, and says so in its offset', () => {
    // The emoji's two UTF-16 units sit at GET_PAGE_CHARS - 1 and GET_PAGE_CHARS.
    const content = `${'a'.repeat(GET_PAGE_CHARS - 1)}😀${'b'.repeat(10)}`;
    const first = openedMessage(stored(content));
    expect(first.nextOffset).toBe(GET_PAGE_CHARS - 1);
    const inside = openedMessage(stored(content), GET_PAGE_CHARS);
    expect(inside.content.startsWith('😀')).toBe(true);
    expect(inside.offset).toBe(GET_PAGE_CHARS - 1);
    expect(content.slice(inside.offset)).toBe(inside.content);
  });

  it('reports the offset it was given when that starts a character', () => {
    const opened = openedMessage(stored('hello world'), 6);
    expect(opened).toMatchObject({ content: 'world', offset: 6, totalChars: 11 });
  });
});
