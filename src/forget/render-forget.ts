import { isoDay } from '../core/dates.js';
import type { ForgetCandidate, ForgetResult } from './forget.js';
import { undoneSentences, type Undone, type UndoneWord } from './undone.js';

function line(c: ForgetCandidate): string {
  // Said plainly: a mistyped id must not read as a forgotten conversation.
  if (c.unknown) return `  ${c.conversationId}  not in the store and never sent: nothing to remove; tombstoned so it stays out if it comes`;
  const when = c.createdAtMs === undefined ? '-' : isoDay(c.createdAtMs);
  const where = c.workspaceDir ?? '(workspace unknown)';
  const sent = c.sentToGateway ? '  [sent to the EverMe gateway]' : '';
  return `  ${c.conversationId}  ${when}  ${where}  ${c.storedMessages} stored message${c.storedMessages === 1 ? '' : 's'}${sent}`;
}

/** `asking`: the list shown before the terminal prompt, not a dry run's result. */
export function renderForget(result: ForgetResult, opts: { asking?: boolean } = {}): string {
  const n = result.conversations.length;
  if (n === 0 && result.missingStore !== undefined) {
    return `Nothing to forget: there is no everme store at ${result.missingStore} yet (nothing was imported or synced there), and none was created.`;
  }
  if (n === 0) return 'Nothing matched: no conversation was forgotten.';
  const lines = [
    result.conversations.every((c) => c.unknown === true) && !opts.asking
      ? `${result.dryRun ? 'would tombstone' : 'tombstoned'} ${n === 1 ? 'an id' : `${n} ids`} the store does not hold (nothing stored, nothing sent)${result.dryRun ? ' (dry run: nothing changed)' : ''}:`
      : opts.asking
      ? `about to forget ${n} conversation${n === 1 ? '' : 's'}:`
      : result.dryRun
      ? `would forget ${n} conversation${n === 1 ? '' : 's'} (dry run: nothing changed):`
      : `forgot ${n} conversation${n === 1 ? '' : 's'}: ${result.removedMessages} message${result.removedMessages === 1 ? '' : 's'} removed from the local store, search index and recall context`,
    ...result.conversations.map(line),
    result.dryRun
      ? 'Each would be tombstoned: import, sync and the hook would never deliver it again, to either sink.'
      : 'Tombstoned: import, sync and the hook will never deliver these again, to either sink, even if their files change.',
  ];
  lines.push(
    result.gatewayNote ?? 'EverMe gateway: none of these was sent to the hosted gateway, so nothing of them is held there.',
  );
  if (result.checkpointed === false) {
    lines.push('note: another process is reading the store; the last deleted bytes leave the file once it closes.');
  }
  if (!result.dryRun) lines.push('`everme forget --undo --conversation ID` lifts a tombstone; the next sync reads that session again when its files are under the data dir (undo says what else brings it back).');
  return lines.join('\n');
}

/** What `forget --undo` did, as text: commands in backticks; ids and paths as they are. */
export function renderUndone(undone: Undone, dataDir: string): string {
  const text = (w: UndoneWord) => (typeof w === 'string' ? w : 'command' in w ? `\`${w.command}\`` : w.name);
  return undoneSentences(undone, dataDir)
    .map((sentence) => sentence.map(text).join(''))
    .join('\n');
}
