/** Opening a stored message a page at a time (`everme get`, `mem_get`): pages never split a character. */
import { describe, expect, it } from 'vitest';
import { formatOpened, GET_PAGE_CHARS, openedMessage } from '../src/recall/open-messages.js';
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

  it('pages long tool call arguments with the content, and a later page shows no call it has nothing of', () => {
    const message: StoredMessage = {
      ...stored('Writing both files.'),
      toolCalls: [
        { id: 'c1', type: 'function', name: 'write', arguments: JSON.stringify({ path: 'big.txt', content: 'x'.repeat(GET_PAGE_CHARS * 2) }) },
        { id: 'c2', type: 'function', name: 'bash', arguments: '{"command":"ls"}' },
      ],
    };
    const first = openedMessage(message);
    expect(first.nextOffset).toBe(GET_PAGE_CHARS);
    expect(first.toolCalls![0]!.arguments.length).toBe(GET_PAGE_CHARS);
    expect(first.toolCalls![1]).toEqual({ name: 'bash', arguments: '{"command":"ls"}' });
    const second = openedMessage(message, GET_PAGE_CHARS);
    expect(second.toolCalls![1]).toEqual({ name: 'bash', arguments: '', argumentsChars: 16 });
    const text = formatOpened(second);
    expect(text).toContain('tool call write (arguments, a page of');
    expect(text).not.toContain('tool call bash');
    expect(text).toContain(`The tool call arguments go on; the rest: offset ${GET_PAGE_CHARS * 2}.`);
  });
});
