import { locateSession } from '../transcript/session-locate.js';

/** A lifted tombstone, and whether its session's files are under the data dir, so that a sync can read it again. */
export interface Undone {
  conversationId: string;
  sessionId: string;
  sessionOnDisk: boolean;
}

/** `Forgetter.undo`'s answer, checked against the data dir: a conversation that came only from an export file has no files here for a sync to read. */
export async function withSessionOnDisk(dataDir: string, undone: { conversationId: string; sessionId: string }): Promise<Undone> {
  return { ...undone, sessionOnDisk: (await locateSession(dataDir, undone.sessionId)) !== undefined };
}

/** A piece of what an undo says: plain words, a command, or an id or path (`name`). */
export type UndoneWord = string | { command: string } | { name: string };

/**
 * What an undo did, and what brings the conversation back: a sync when its session's files are
 * here, else its export file. One sentence per line; the CLI and the viewer both say these.
 */
export function undoneSentences(undone: Undone, dataDir: string): UndoneWord[][] {
  const id = { name: undone.conversationId };
  const session = { name: undone.sessionId };
  if (undone.sessionOnDisk) return [[id, ' is no longer forgotten; the next ', { command: 'everme sync' }, ' reads session ', session, ' again.']];
  return [
    [id, ' is no longer forgotten, but no file of session ', session, ' is under ', { name: dataDir }, ', so a sync cannot bring it back.'],
    ['If it came from an export file, ', { command: 'everme import --from-export FILE --again' }, ' loads that file again (a file loaded before is otherwise skipped).'],
  ];
}
