/** One identity per MiniMax session, the same in import, sync and the hook. */
export function conversationIdFor(sessionId: string): string {
  return `minimaxcode-${sessionId}`;
}
