import { Flags } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { CONVERSATION_HINT, namingFlag, PROJECT_HINT } from '../src/cli/flags.js';
import { runForget, type ForgetOutcome } from '../src/cli/forget-flow.js';
import { renderForget, renderUndone } from '../src/forget/render-forget.js';

export default class Forget extends EvermeCommand<typeof Forget> {
  static override summary = 'Forget conversations: remove them from the local store and never deliver them again';
  static override description =
    'Removes the matching conversations from the embedded store (messages, search index, recall context) and leaves a tombstone so import, sync and the hook never deliver them again, to either sink. ' +
    "The hosted EverMe gateway has no delete in its public API: what it already received stays in your EverMe account (remove it on EverMe's own site); forget only stops further sending.";
  static override examples = [
    '<%= config.bin %> forget --session mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40 --dry-run',
    '<%= config.bin %> forget --project ~/work/client-acme --yes',
    '<%= config.bin %> forget --before 2026-08-01 --yes --json',
    '<%= config.bin %> forget --undo --conversation minimaxcode-mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40',
  ];
  static override flags = {
    conversation: namingFlag('one conversation, by the id it was listed under (or the session id mvs_…)', CONVERSATION_HINT),
    session: namingFlag('the conversation of one session (mvs_…)', 'Pass --session mvs_… (a session id).'),
    project: namingFlag('every conversation whose workspace is this directory or lies under it', PROJECT_HINT),
    before: Flags.string({ description: 'every conversation whose last message is before this day (YYYY-MM-DD, UTC)' }),
    'dry-run': Flags.boolean({ description: 'list what would be forgotten; change nothing', default: false }),
    yes: Flags.boolean({ description: 'do not ask (required with --json or without a terminal)', default: false }),
    undo: Flags.boolean({ description: 'lift the tombstone of --conversation/--session; the next sync reads it again from its files (undo says what brings back one that came from an export file)', default: false }),
  };

  async run(): Promise<unknown> {
    const { flags } = this;
    const request = { ...flags, dryRun: flags['dry-run'] };
    const outcome: ForgetOutcome = await runForget(request, this.flowContext());
    if (outcome.kind === 'forget') return this.result(outcome.result, () => renderForget(outcome.result));
    const { undone } = outcome;
    return this.result({ undone }, () => renderUndone(undone, this.settings().dataDir));
  }
}
