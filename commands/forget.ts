import { Flags } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { confirmOnTerminal } from '../src/cli/confirm.js';
import { conversationIdFor } from '../src/core/conversation-id.js';
import { parseSinceDate } from '../src/core/dates.js';
import { EvermeError } from '../src/core/errors.js';
import { requireDataDir, resolveDataDir } from '../src/config/data-dir.js';
import { resolveUserPath } from '../src/config/exclude.js';
import { loadSettings } from '../src/config/settings.js';
import { Forgetter, type ConversationSelector } from '../src/forget/forget.js';
import { renderForget } from '../src/forget/render-forget.js';

const SELECTORS = ['conversation', 'session', 'project', 'before'] as const;

export default class Forget extends EvermeCommand {
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
    conversation: Flags.string({ description: 'one conversation, by the id it was listed under (or the session id mvs_…)' }),
    session: Flags.string({ description: 'the conversation of one session (mvs_…)' }),
    project: Flags.string({ description: 'every conversation whose workspace is this directory or lies under it' }),
    before: Flags.string({ description: 'every conversation whose last message is before this day (YYYY-MM-DD, UTC)' }),
    'dry-run': Flags.boolean({ description: 'list what would be forgotten; change nothing', default: false }),
    yes: Flags.boolean({ description: 'do not ask (required with --json or without a terminal)', default: false }),
    undo: Flags.boolean({ description: 'lift the tombstone of --conversation/--session; the next sync reads it again', default: false }),
  };

  async run(): Promise<unknown> {
    const { flags } = await this.parse(Forget);
    const given = SELECTORS.filter((name) => flags[name] !== undefined);
    if (given.length !== 1) {
      throw new EvermeError('invalid_args', given.length === 0 ? 'Say what to forget' : `Use one selector, not ${given.map((g) => `--${g}`).join(' and ')}`, {
        hint: 'Pass exactly one of --conversation ID, --session ID, --project DIR, --before YYYY-MM-DD.',
      });
    }
    const selector = this.selector(flags);
    if (flags.undo && selector.kind !== 'conversation') {
      throw new EvermeError('invalid_args', '--undo lifts one tombstone at a time', { hint: 'Use `everme forget --undo --conversation ID`.' });
    }
    const dataDir = requireDataDir(resolveDataDir(flags['data-dir']));
    const forgetter = Forgetter.open(loadSettings(dataDir));
    try {
      if (flags.undo && selector.kind === 'conversation') {
        const lifted = forgetter.undo(selector.conversationId);
        return this.result({ undone: lifted }, () => `${lifted.conversationId} is no longer forgotten; the next \`everme sync\` reads session ${lifted.sessionId} again.`);
      }
      const planned = forgetter.plan(selector);
      if (flags['dry-run'] || planned.length === 0) {
        const result = forgetter.dryRun(planned);
        return this.result(result, () => renderForget(result));
      }
      if (!flags.yes) {
        if (this.jsonMode || !process.stdin.isTTY || !process.stderr.isTTY) {
          throw new EvermeError('invalid_args', `Forgetting ${planned.length} conversation(s) needs confirmation`, {
            hint: 'Add --yes to confirm (required with --json or without a terminal); --dry-run lists them first.',
          });
        }
        process.stderr.write(`${renderForget(forgetter.dryRun(planned), { asking: true })}\n`);
        if (!(await confirmOnTerminal(`Forget these ${planned.length} conversation(s)? [y/N] `))) {
          throw new EvermeError('cancelled', 'Nothing was forgotten');
        }
      }
      const result = await forgetter.apply(planned, { signal: this.abort.signal });
      return this.result(result, () => renderForget(result));
    } finally {
      forgetter.close();
    }
  }

  private selector(flags: { conversation?: string; session?: string; project?: string; before?: string }): ConversationSelector {
    if (flags.conversation !== undefined) return { kind: 'conversation', conversationId: flags.conversation };
    if (flags.session !== undefined) return { kind: 'conversation', conversationId: conversationIdFor(flags.session.trim()) };
    if (flags.project !== undefined) return { kind: 'project', dir: resolveUserPath(flags.project) };
    return { kind: 'before', ms: parseSinceDate(flags.before ?? '', '--before') };
  }
}
