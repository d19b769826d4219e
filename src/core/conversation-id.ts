/**
 * The one home of the conversation id's shape. A MiniMax session `mvs_…` becomes the conversation
 * `minimaxcode-mvs_…` (the id EverMe's own importer uses, so both land in one conversation). Ids
 * that came in another way (a re-imported export, written by hand or by another tool) are kept as
 * they are: an id means what it was shown as.
 */
export const CONVERSATION_ID_PREFIX = 'minimaxcode-';

/** One identity per MiniMax session, the same in import, sync and the hook. */
export function conversationIdFor(sessionId: string): string {
  return `${CONVERSATION_ID_PREFIX}${sessionId}`;
}

/** The MiniMax session a conversation id names, when it names one (`minimaxcode-mvs_…`); other ids name none. */
export function sessionIdOf(conversationId: string | undefined): string | undefined {
  if (!conversationId?.startsWith(CONVERSATION_ID_PREFIX)) return undefined;
  const rest = conversationId.slice(CONVERSATION_ID_PREFIX.length);
  return rest.length > 0 ? rest : undefined;
}

/**
 * What a user's `--conversation ID` may mean, most literal first: the id exactly as a listing showed
 * it, then (for a bare session id `mvs_…`) the conversation of that session. A caller picks the
 * first one its store knows, and falls back to the last.
 */
export function conversationIdCandidates(input: string): string[] {
  const id = input.trim();
  if (id === '' || id.startsWith(CONVERSATION_ID_PREFIX)) return [id];
  return [id, conversationIdFor(id)];
}
