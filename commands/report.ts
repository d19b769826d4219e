import { Flags } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { CONVERSATION_HINT, namingFlag, sinceFlag } from '../src/cli/flags.js';
import { EvermeError } from '../src/core/errors.js';
import { WARNING_CODES, type WarningCode } from '../src/core/warnings.js';
import { buildReport, renderReport, type WarningReport } from '../src/report/warning-report.js';

export default class Report extends EvermeCommand<typeof Report> {
  static override summary = 'Show what the latest import, sync or hook runs skipped, and why';
  static override description =
    'Warnings recorded per conversation by the latest read of each session: codes, counts and file:line samples (never content).';
  static override examples = [
    '<%= config.bin %> report',
    '<%= config.bin %> report --code invalid_json --json',
    '<%= config.bin %> report --conversation mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40',
  ];
  static override flags = {
    conversation: namingFlag('one conversation, by the id it was listed under (or the session id mvs_…)', CONVERSATION_HINT),
    code: Flags.string({ description: `one warning code (${WARNING_CODES.join(', ')})` }),
    since: sinceFlag('only sessions created on or after this day (YYYY-MM-DD, UTC)'),
  };

  async run(): Promise<WarningReport> {
    const { flags } = this;
    if (flags.code !== undefined && !(WARNING_CODES as readonly string[]).includes(flags.code)) {
      throw new EvermeError('invalid_args', `Unknown warning code "${flags.code}"`, {
        hint: `Known codes: ${WARNING_CODES.join(', ')}`,
      });
    }
    const report = buildReport(this.settings(), {
      conversation: flags.conversation,
      code: flags.code as WarningCode | undefined,
      sinceMs: flags.since?.ms,
    });
    return this.result(report, () => renderReport(report));
  }
}
