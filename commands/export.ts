import { Flags } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { runExport } from '../src/cli/export-flow.js';
import { CONVERSATION_HINT, namingFlag, PROJECT_HINT, sinceFlag } from '../src/cli/flags.js';
import { writeStderr } from '../src/cli/output.js';
import { renderExportSummary } from '../src/cli/render-import-export.js';
import type { ExportFormat, ExportSummary } from '../src/export/export-memory.js';

export default class Export extends EvermeCommand<typeof Export> {
  static override summary = "Write the local store's conversations out: jsonl (the gateway's shape) or markdown";
  static override description =
    'jsonl: one agent-memory message per line with its conversationId, exactly as the gateway receives it (`everme import --from-export FILE` loads it into another store). ' +
    'markdown: one file per conversation with a header and the turns in order, tool calls and results folded in. The same store gives the same bytes.';
  static override examples = [
    '<%= config.bin %> export > memory.jsonl',
    '<%= config.bin %> export --format markdown --out ./memory',
    '<%= config.bin %> export --project ~/work/widget --since 2026-09-01 --out ./widget',
  ];
  static override flags = {
    format: Flags.string({ description: 'jsonl or markdown', options: ['jsonl', 'markdown'], default: 'jsonl' }),
    conversation: namingFlag('one conversation, by the id it was listed under (or the session id mvs_…)', CONVERSATION_HINT),
    project: namingFlag('conversations whose workspace is this directory or lies under it', PROJECT_HINT),
    since: sinceFlag('conversations with a message on or after this day (YYYY-MM-DD, UTC)'),
    out: Flags.string({ description: 'a directory, or - for stdout (jsonl only; the default for jsonl)' }),
  };

  async run(): Promise<ExportSummary | undefined> {
    const { flags } = this;
    const request = { format: flags.format as ExportFormat, out: flags.out, conversation: flags.conversation, project: flags.project, sinceMs: flags.since?.ms };
    const summary = await runExport(request, this.flowContext());
    // With the export on stdout, the summary goes to stderr (stdout carries the result: the export).
    if (summary.out !== '-') return this.result(summary, () => renderExportSummary(summary));
    writeStderr(renderExportSummary(summary));
    return undefined;
  }
}
