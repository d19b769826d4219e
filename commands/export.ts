import { Flags } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { createExportProgress } from '../src/cli/export-progress.js';
import { sinceFlag } from '../src/cli/flags.js';
import { writeStderr } from '../src/cli/output.js';
import { EvermeError } from '../src/core/errors.js';
import { requireDataDir, resolveDataDir } from '../src/config/data-dir.js';
import { resolveUserPath } from '../src/config/exclude.js';
import { loadSettings } from '../src/config/settings.js';
import { exportMemory, type ExportFormat, type ExportSummary } from '../src/export/export-memory.js';

function renderSummary(s: ExportSummary): string {
  const where = s.out === '-' ? 'stdout' : s.format === 'jsonl' ? s.files[0] ?? s.out : `${s.files.length} file${s.files.length === 1 ? '' : 's'} in ${s.out}`;
  return `exported ${s.conversations} conversation${s.conversations === 1 ? '' : 's'}, ${s.messages} message${s.messages === 1 ? '' : 's'} (${s.format}) to ${where}`;
}

export default class Export extends EvermeCommand {
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
    conversation: Flags.string({ description: 'one conversation, by the id it was listed under (or the session id mvs_…)' }),
    project: Flags.string({ description: 'conversations whose workspace is this directory or lies under it' }),
    since: sinceFlag('conversations with a message on or after this day (YYYY-MM-DD, UTC)'),
    out: Flags.string({ description: 'a directory, or - for stdout (jsonl only; the default for jsonl)' }),
  };

  async run(): Promise<ExportSummary | undefined> {
    const { flags } = await this.parse(Export);
    const format = flags.format as ExportFormat;
    const out = flags.out ?? (format === 'jsonl' ? '-' : undefined);
    if (out === undefined) throw new EvermeError('invalid_args', 'A markdown export is one file per conversation', { hint: 'Pass --out DIR.' });
    if (out === '-' && this.jsonMode) {
      throw new EvermeError('invalid_args', '--json prints one envelope on stdout, so the export cannot go there too', { hint: 'Pass --out DIR with --json.' });
    }
    const sinceMs = flags.since?.ms;
    const dataDir = requireDataDir(resolveDataDir(flags['data-dir']));
    const progress = createExportProgress({ json: this.jsonMode });
    const summary = await exportMemory(loadSettings(dataDir), {
      format,
      out: out === '-' ? out : resolveUserPath(out),
      filter: {
        ...(flags.conversation === undefined ? {} : { conversationId: flags.conversation }),
        ...(flags.project === undefined ? {} : { project: resolveUserPath(flags.project) }),
        ...(sinceMs === undefined ? {} : { sinceMs }),
      },
      signal: this.abort.signal,
      onProgress: (p) => progress.update(p),
    }).finally(() => progress.stop());
    // With the export on stdout, the summary goes to stderr (stdout carries the result: the export).
    if (out === '-') {
      writeStderr(renderSummary(summary));
      return undefined;
    }
    return this.result(summary, () => renderSummary(summary));
  }
}
